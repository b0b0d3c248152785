// Progress: answers, coverage, corpus size, annotators, live tasks, and the latest model's
// accuracy when it has one.
import { $, el } from "../lib/dom.js";
import { counted, fixed, fmt, pct } from "../lib/format.js";
import { api } from "../lib/http.js";

function kpi(label, value, fraction) {
  const node = el("div", { class: "kpi" }, el("span", { class: "v", text: value }), el("span", { class: "l", text: label }));
  if (fraction !== undefined) {
    const fill = el("div", { class: "bar-fill" });
    fill.style.width = `${Math.min(100, Math.max(0, 100 * fraction))}%`;
    node.append(el("div", { class: "bar-track", "aria-hidden": "true" }, fill));
  }
  return node;
}

// Seconds per answer by task kind, as the phones measured them (a verification answer is quicker
// than a count): one figure per kind that has answers.
const KIND_LABELS = { count: "count", verify: "verification" };

export function kindKpis(byKind) {
  return Object.entries(byKind || {})
    .filter(([, k]) => k.observations > 0)
    .map(([kind, k]) =>
      kpi(`seconds per ${KIND_LABELS[kind] || kind} answer · ${counted(k.observations, "answer")}`, fixed(k.seconds_per_answer, 1)),
    );
}

// Columns that fill every row as evenly as `max` per row allows: 8 cards in rows of 4 + 4, not
// 7 + 1.
export function balancedColumns(n, max) {
  return n ? Math.ceil(n / Math.ceil(n / max)) : 1;
}

export function mountProgress({ base, store }) {
  function render() {
    const s = store.get("stats");
    if (!s) return;
    const report = store.get("report");
    const sentences = s.sentences.train + s.sentences.evaluation + s.sentences.gold_check;
    const coverage = s.tasks ? s.regions_complete / s.tasks : 0;
    const items = [
      kpi("answers", fmt.format(s.observations)),
      kpi(`regions complete of ${fmt.format(s.tasks)} (coverage)`, pct(coverage), coverage),
      kpi(`sentences · ${fmt.format(s.tokens)} words`, fmt.format(sentences)),
      kpi("annotators who answered", fmt.format(s.annotators)),
      kpi("tasks being answered now", fmt.format(s.leases_live)),
      ...kindKpis(s.by_kind),
    ];
    if (report && report.accuracy !== undefined && report.accuracy !== null) {
      items.splice(1, 0, kpi("test accuracy of the latest model", pct(report.accuracy), report.accuracy));
    }
    $("kpis").replaceChildren(...items);
    // The stylesheet picks one of these by the screen's width (app.css, .kpis).
    $("kpis").style.setProperty("--kpi-cols-m", String(balancedColumns(items.length, 4)));
    $("kpis").style.setProperty("--kpi-cols-l", String(balancedColumns(items.length, 7)));
  }
  store.watch(["stats", "report"], render);

  return {
    async load() {
      store.set("stats", await api("GET", `${base}/stats/`));
    },
  };
}
