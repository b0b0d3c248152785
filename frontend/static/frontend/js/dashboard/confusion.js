// The confusion matrix as a heat map: each row (gold tag) shaded by the share of its tokens
// predicted as each column's tag.
import { $, el } from "../lib/dom.js";
import { pct } from "../lib/format.js";
import { empty } from "./ui.js";

export function renderConfusion(report) {
  const confusion = report.confusion;
  if (!confusion || !confusion.matrix || !confusion.matrix.length) {
    $("confusion").replaceChildren(empty("The confusion matrix needs evaluation sentences."));
    return;
  }
  const tags = confusion.tags;
  const head = el("tr", {}, el("td", {}), ...tags.map((t) => el("th", { scope: "col", text: t })));
  const rows = confusion.matrix.map((row, i) => {
    const total = row.reduce((a, b) => a + b, 0) || 1;
    const cells = row.map((n, j) => {
      const share = n / total;
      const cell = el("td", { text: n ? String(n) : "", title: `gold ${tags[i]}, predicted ${tags[j]}: ${n} (${pct(share)})` });
      cell.style.background = n ? `rgba(45, 70, 185, ${(0.08 + 0.92 * share).toFixed(3)})` : "#f7f8fa";
      cell.style.color = share > 0.45 ? "#fff" : "#1a1d23";
      return cell;
    });
    return el("tr", {}, el("th", { scope: "row", text: tags[i] }), ...cells);
  });
  const caption = el("caption", { class: "sr-only", text: "Rows: gold tag. Columns: predicted tag. Numbers: tokens." });
  $("confusion").replaceChildren(
    el("table", { class: "heat" }, caption, el("thead", {}, head), el("tbody", {}, ...rows)),
    el("p", { class: "help", text: "Rows are gold tags, columns predicted tags; darker means a larger share of the row." }),
  );
}
