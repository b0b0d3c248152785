// Small pieces shared by the dashboard's panels.
import { el, toast } from "../lib/dom.js";

// A button that copies an input's value (or, where the clipboard is refused, selects it).
export function copyButton(button, input, done) {
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(input.value);
      toast(done);
    } catch {
      input.select();
    }
  });
}

export function empty(text) {
  return el("p", { class: "empty", text });
}

const STATUSES = new Set(["running", "succeeded", "failed", "skipped", "pending", "retrying"]);

export function statusPill(status) {
  return el("span", { class: `pill pill-${STATUSES.has(status) ? status : "other"}`, text: status });
}

export const SHORT_TIME = { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };

export function when(iso, options = { dateStyle: "medium", timeStyle: "short" }) {
  if (!iso) return el("span", { class: "muted", text: "–" });
  const date = new Date(iso);
  return el("time", { datetime: iso, title: date.toLocaleString(), text: date.toLocaleString([], options) });
}

// A table's header row: `numeric(i)` says which columns hold numbers (right-aligned).
export function headRow(labels, numeric = () => false) {
  return el("tr", {}, ...labels.map((h, i) => el("th", { scope: "col", class: numeric(i) ? "num" : "", text: h })));
}

export function table(head, rows, className = "table") {
  return el("table", { class: className }, el("thead", {}, head), el("tbody", {}, ...rows));
}
