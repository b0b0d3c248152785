// The corpus upload's fields (templates/frontend/_corpus_fields.html), one form for a new
// project and for "Add sentences": the format guessed from the file's name, the gold tag column
// shown for CoNLL-U only, the gold shares not for text (it has no gold tags), and the file's
// first sentences shown as the import will read them (tokenized by the project's language)
// before anything is imported.
import { el } from "./dom.js";
import { api, describe } from "./http.js";

// The head of a file sent for the preview: enough for its first sentences.
export const PREVIEW_BYTES = 64 * 1024;

// The format a file's name suggests, or null.
export function guessFormat(name) {
  const base = name.toLowerCase().replace(/\.gz$/, "");
  if (base.endsWith(".jsonl") || base.endsWith(".json")) return "jsonl";
  if (base.endsWith(".conllu") || base.endsWith(".conll")) return "conllu";
  if (base.endsWith(".txt") || base.endsWith(".text")) return "text";
  return null;
}

// `prefix`: the ids' prefix in the template; `language()`: the language the text is cut in.
export function mountCorpusFields(prefix, { language }) {
  const $ = (id) => document.getElementById(prefix + id);
  const fileInput = $("file");
  const format = () => document.querySelector(`input[name="${prefix}format"]:checked`).value;
  let previewed = 0;

  function renderFormat() {
    $("tag-column-field").hidden = format() !== "conllu";
    // Plain and tokenized text have no gold tags: no gold sentences to share out.
    $("gold-shares").hidden = format() === "text" || format() === "tokenized";
  }

  async function preview() {
    const file = fileInput.files[0];
    const box = $("preview");
    if (!file) {
      box.hidden = true;
      return;
    }
    const ticket = ++previewed;
    const body = new FormData();
    const partial = file.size > PREVIEW_BYTES;
    body.append("file", partial ? file.slice(0, PREVIEW_BYTES) : file, file.name);
    body.append("format", format());
    body.append("tag_column", $("tag_column").value);
    body.append("language", language());
    body.append("partial", partial ? "true" : "false");
    box.hidden = false;
    box.replaceChildren(el("p", { class: "muted", text: "Reading the first sentences…" }));
    let shown;
    try {
      shown = (await api("POST", "/api/corpus/preview/", body)).sentences;
    } catch (error) {
      if (ticket === previewed) box.replaceChildren(el("p", { class: "error", text: describe(error) }));
      return;
    }
    if (ticket !== previewed) return; // a newer choice is being read
    const items = shown.map((sentence) =>
      el("li", {}, ...sentence.tokens.map((token, i) => el("span", { class: "tok", title: sentence.tags ? sentence.tags[i] : "", text: token }))),
    );
    box.replaceChildren(
      el("p", { class: "help", text: shown.length ? "The first sentences, as they will be imported (one box a word):" : "No complete sentence in the start of this file." }),
      el("ol", { class: "preview-sentences", "aria-label": "First sentences as imported" }, ...items),
    );
  }

  function onChange(event) {
    const target = event.target;
    if (target === fileInput && fileInput.files[0]) {
      const guess = guessFormat(fileInput.files[0].name);
      if (guess) document.querySelector(`input[name="${prefix}format"][value=${guess}]`).checked = true;
    }
    if (target === fileInput || target.name === `${prefix}format` || target === $("tag_column")) {
      renderFormat();
      preview();
    }
  }
  fileInput.closest("form").addEventListener("change", onChange);
  renderFormat();

  return {
    file: () => fileInput.files[0],
    format,
    preview,
    setTagColumn(value) {
      $("tag_column").value = value;
    },
    // The upload's fields, added to `body` (a FormData).
    appendTo(body) {
      const file = fileInput.files[0];
      body.append("file", file, file.name);
      body.append("format", format());
      body.append("tag_column", $("tag_column").value);
      body.append("evaluation_fraction", $("evaluation_fraction").value || "0");
      body.append("gold_check_fraction", $("gold_check_fraction").value || "0");
      return body;
    },
    reset() {
      fileInput.value = "";
      $("preview").hidden = true;
    },
  };
}
