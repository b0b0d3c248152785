// Model versions: answers learned from, the kind of model, accuracy, count error, when, and a
// download link; the export of predicted tags appears once there is a model.
import { $, el } from "../lib/dom.js";
import { fmt, pct } from "../lib/format.js";
import { getOrNull } from "../lib/http.js";
import { headRow, table } from "./ui.js";

const MODEL_KINDS = {
  context: { name: "context", title: "Each tag from the word and its neighbours" },
  node: { name: "word", title: "Each tag from the word alone" },
};

export function mountVersions({ base }) {
  async function load() {
    const page = await getOrNull(`${base}/models/?limit=20`);
    if (!page || !page.results.length) return;
    const head = headRow(["Version", "Answers", "Model", "Accuracy", "Count error", "Trained", ""], (i) => i === 1 || i === 3 || i === 4);
    const rows = page.results.map((v) =>
      el(
        "tr",
        {},
        el("th", { scope: "row", text: `v${v.version}${v.current ? " (current)" : ""}` }),
        el("td", { class: "num", text: fmt.format(v.observations) }),
        el("td", { title: MODEL_KINDS[v.model_kind]?.title ?? "", text: MODEL_KINDS[v.model_kind]?.name ?? v.model_kind }),
        el("td", { class: "num", text: pct(v.accuracy) }),
        el("td", { class: "num", text: v.count_consistency === null ? "–" : v.count_consistency.toFixed(3) }),
        el("td", { class: "nowrap" }, el("time", { datetime: v.created_at, text: new Date(v.created_at).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) })),
        el("td", {}, el("a", { href: `${base}/models/${v.version}/download`, download: "", text: "Download" })),
      ),
    );
    $("versions").replaceChildren(table(head, rows, "table versions"));
    if (!document.getElementById("export-predictions")) {
      $("exports").append(el("li", {}, el("a", { id: "export-predictions", href: `${base}/exports/predictions.conllu`, download: "", text: "Predicted tags of the corpus (CoNLL-U)" })));
    }
  }
  return { load };
}
