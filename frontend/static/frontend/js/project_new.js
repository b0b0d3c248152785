// New project: create it through the API, then upload its corpus, then open its dashboard.
// If the upload fails (a malformed line, say), the project is kept and the next try uploads to it.
import { $, el } from "./lib/dom.js";
import { api, describe } from "./lib/http.js";

const form = document.getElementById("new-project");
const presets = JSON.parse(document.getElementById("presets").textContent);
let createdId = null;
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

function format() {
  return form.querySelector("input[name=format]:checked").value;
}

function renderTagSet() {
  const chosen = preset();
  const custom = chosen === "custom";
  $("custom-field").hidden = !custom;
  $("tag-preview").hidden = custom;
  if (custom) {
    if (!$("custom_tags").value.trim()) $("custom_tags").value = presets[lastPreset].map(asLine).join("\n");
    return;
  }
  lastPreset = chosen;
  $("tag-preview").replaceChildren(
    ...presets[chosen].map((tag) =>
      el("li", {}, el("b", { text: tag.name }), ` ${tag.guideline}`, tag.examples.length ? el("span", { class: "muted", text: ` e.g. ${tag.examples.join(", ")}` }) : null),
    ),
  );
  $("tag_column").value = chosen === "ptb" ? "xpos" : "upos";
}

function renderFormat() {
  $("tag-column-field").hidden = format() !== "conllu";
}

form.addEventListener("change", (event) => {
  if (event.target.name === "preset") renderTagSet();
  if (event.target.name === "format") renderFormat();
  if (event.target.id === "file" && event.target.files[0]) {
    const name = event.target.files[0].name.toLowerCase().replace(/\.gz$/, "");
    const guess = name.endsWith(".jsonl") || name.endsWith(".json") ? "jsonl" : name.endsWith(".txt") ? "text" : name.endsWith(".conllu") || name.endsWith(".conll") ? "conllu" : null;
    if (guess) form.querySelector(`input[name=format][value=${guess}]`).checked = true;
    renderFormat();
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
    window_size: number("window_size"),
    tags_per_task: number("tags_per_task", { nullable: true }),
    redundancy: number("redundancy"),
    gold_fraction: number("gold_fraction", { float: true }),
    lease_seconds: number("lease_seconds"),
  };
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
  const file = $("file").files[0];
  if (!$("name").value.trim()) return showError("Give the project a name.");
  if (!file) return showError("Choose a corpus file.");
  $("create").disabled = true;
  try {
    if (createdId === null) {
      $("progress").textContent = "Creating the project…";
      createdId = (await api("POST", "/api/projects/", projectBody())).id;
    }
    $("progress").textContent = `Uploading ${file.name}…`;
    const upload = new FormData();
    upload.append("file", file);
    upload.append("format", format());
    upload.append("tag_column", $("tag_column").value);
    upload.append("evaluation_fraction", $("evaluation_fraction").value || "0");
    upload.append("gold_check_fraction", $("gold_check_fraction").value || "0");
    await api("POST", `/api/projects/${createdId}/corpus/`, upload);
    $("progress").textContent = "Done. Opening the project…";
    window.location.assign(`/projects/${createdId}/`);
  } catch (error) {
    $("progress").textContent = "";
    const where = createdId === null ? "" : " The project was created; fix the file and upload again.";
    showError(`${describe(error)}${where}`);
    if (createdId !== null) $("create").textContent = "Upload the corpus again";
  } finally {
    $("create").disabled = false;
  }
});

renderTagSet();
renderFormat();
