// Accuracy per tag: precision, recall and F1 (with a bar) on the evaluation sentences.
import { $, el } from "../lib/dom.js";
import { fixed, fmt } from "../lib/format.js";
import { empty, headRow, table } from "./ui.js";

function f1Cell(f1) {
  const cell = el("td", { class: "num f1" }, el("span", { text: fixed(f1, 2) }));
  if (f1 !== null) {
    const fill = el("div", { class: "bar-fill" });
    fill.style.width = `${100 * f1}%`;
    cell.append(el("div", { class: "bar-track", "aria-hidden": "true" }, fill));
  }
  return cell;
}

export function renderPerTag(report) {
  const rows = report.per_tag || [];
  if (!rows.length) {
    $("f1").replaceChildren(empty("Per-tag scores need evaluation sentences (gold tags held out at upload)."));
    return;
  }
  const head = headRow(["Tag", "Precision", "Recall", "F1", "Support"], (i) => i > 0);
  const body = rows.map((r) =>
    el(
      "tr",
      {},
      el("th", { scope: "row", text: r.tag }),
      el("td", { class: "num", text: fixed(r.precision, 2) }),
      el("td", { class: "num", text: fixed(r.recall, 2) }),
      f1Cell(r.f1),
      el("td", { class: "num", text: fmt.format(r.support) }),
    ),
  );
  $("f1").replaceChildren(el("div", { class: "table-wrap" }, table(head, body, "table per-tag")));
}
