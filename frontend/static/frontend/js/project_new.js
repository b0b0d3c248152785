// New project: the project and its corpus are sent together and created together, or not at
// all (a malformed line leaves no project behind: fix the file, or any setting, and try again).
import { mountCorpusFields } from "./lib/corpus_form.js";
import { $, el } from "./lib/dom.js";
import { api, describe } from "./lib/http.js";

const form = document.getElementById("new-project");
const presets = JSON.parse(document.getElementById("presets").textContent);
const corpus = mountCorpusFields("", { language: () => $("language").value });
let lastPreset = "ud_upos";

function asLine(tag) {
  return [tag.name, tag.guideline || "", (tag.examples || []).join(", ")].join(" | ");
}

function parseCustom(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [name, guideline = "", examples = ""] = line.split("|").map((part) => part.trim());
      return { name, guideline, examples: examples.split(",").map((e) => e.trim()).filter(Boolean) };
    });
}

function preset() {
  return form.querySelector("input[name=preset]:checked").value;
}

// A preset's tags with their guidelines in the chosen language (English where not translated).
function presetTags(name) {
  return presets[name][$("language").value] || presets[name].en;
}

function renderTagSet() {
  const chosen = preset();
  const custom = chosen === "custom";
  $("custom-field").hidden = !custom;
  $("tag-preview").hidden = custom;
  if (custom) {
    if (!$("custom_tags").value.trim()) $("custom_tags").value = presetTags(lastPreset).map(asLine).join("\n");
    return;
  }
  lastPreset = chosen;
  $("tag-preview").replaceChildren(
    ...presetTags(chosen).map((tag) =>
      el("li", {}, el("b", { text: tag.name }), ` ${tag.guideline}`, tag.examples.length ? el("span", { class: "muted", text: ` e.g. ${tag.examples.join(", ")}` }) : null),
    ),
  );
  corpus.setTagColumn(chosen === "ptb" ? "xpos" : "upos");
}

form.addEventListener("change", (event) => {
  if (event.target.name === "preset") renderTagSet();
  if (event.target.id === "private") {
    $("alpha").disabled = $("mechanism").disabled = !event.target.checked;
    const asked = number("tags_per_task", { nullable: true });
    if (event.target.checked && (asked === null || asked > 3)) $("tags_per_task").value = "1";
  }
  if (event.target.id === "language") {
    corpus.preview();
    renderTagSet();
  }
});

function number(id, { nullable = false, float = false } = {}) {
  const raw = $(id).value.trim();
  if (raw === "") return nullable ? null : undefined;
  return float ? Number.parseFloat(raw) : Number.parseInt(raw, 10);
}

function projectBody() {
  const body = {
    name: $("name").value.trim(),
    description: $("description").value.trim(),
    language: $("language").value,
    window_size: number("window_size"),
    tags_per_task: number("tags_per_task", { nullable: true }),
    redundancy: number("redundancy"),
    gold_fraction: number("gold_fraction", { float: true }),
    verification_share: number("verification_share", { float: true, nullable: true }),
    lease_seconds: number("lease_seconds"),
  };
  if ($("private").checked) {
    body.private = true;
    body.alpha = number("alpha", { float: true });
    body.mechanism = $("mechanism").value;
  }
  const chosen = preset();
  if (chosen === "custom") body.tags = parseCustom($("custom_tags").value);
  else body.tag_preset = chosen;
  return body;
}

function showError(text) {
  $("form-error").hidden = !text;
  $("form-error").textContent = text || "";
  if (text) $("form-error").scrollIntoView({ block: "center" });
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  showError("");
  const file = corpus.file();
  if (!$("name").value.trim()) return showError("Give the project a name.");
  if (!file) return showError("Choose a corpus file.");
  $("create").disabled = true;
  try {
    $("progress").textContent = `Creating the project from ${file.name}…`;
    const body = corpus.appendTo(new FormData());
    body.append("project", JSON.stringify(projectBody()));
    const created = await api("POST", "/api/projects/", body);
    $("progress").textContent = "Done. Opening the project…";
    window.location.assign(`/projects/${created.id}/`);
  } catch (error) {
    $("progress").textContent = "";
    showError(`${describe(error)} No project was created: fix the file or the settings and try again.`);
  } finally {
    $("create").disabled = false;
  }
});

renderTagSet();
