// The cost of errors: the project's cost matrix as a grid (rows the true tag, columns the tag
// given), presets, CSV download and upload, and the latest report in that currency. Tags are
// chosen for the least expected cost; a change re-scores every version (a background task: the
// summary follows it, without a reload) and retrains nothing.
import { $, el, toast } from "../lib/dom.js";
import { api, describe, getOrNull } from "../lib/http.js";
import { fixed, pct } from "../lib/format.js";

// The most a cost may be (`learning.core.cost.MAX_COST`): only the ratios between costs matter.
export const MAX_COST = 1e6;

// The grid's values as a matrix, or the first bad cell and why (rows true, columns given); the
// server checks the same.
export function readGrid(values, tags) {
  const matrix = [];
  for (let i = 0; i < tags.length; i++) {
    const row = [];
    for (let j = 0; j < tags.length; j++) {
      const text = String(values[i][j]).trim();
      const cost = i === j ? 0 : Number(text);
      const where = `Cell (true ${tags[i]}, given ${tags[j]})`;
      if (i !== j && (text === "" || !Number.isFinite(cost))) return { error: `${where} is not a number.`, cell: [i, j] };
      if (cost < 0) return { error: `${where} is negative: a cost is 0 or more.`, cell: [i, j] };
      if (cost > MAX_COST) {
        return { error: `${where} is more than 1,000,000, the most a cost may be: only the ratios between costs matter, so divide them all by the same number.`, cell: [i, j] };
      }
      row.push(cost);
    }
    matrix.push(row);
  }
  if (tags.length > 1 && matrix.every((row) => row.every((cost) => cost === 0))) {
    return { error: "Every cost is 0, so every tag would be as good a decision as any other: give the errors that matter a cost above 0." };
  }
  return { matrix };
}

// The few tags that cost the most, as a sentence ("NOUN 41 %, VERB 22 %").
export function topShares(share, n = 3) {
  return Object.entries(share || {})
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([tag, s]) => `${tag} ${pct(s)}`)
    .join(", ");
}

// Whether the latest report is already in the currency of matrix `revision` (a report of no
// cost yet, or of an older matrix, is not).
export function rescored(report, revision) {
  return Boolean(report && report.cost && report.cost.revision >= revision);
}

// Seconds to wait before the `attempt`-th look at a re-scoring: soon, then less often.
export function rescoreDelay(attempt) {
  return Math.min(0.5 * 1.5 ** attempt, 5);
}

const RESCORE_LOOKS = 30; // about two minutes in all

export function mountCosts({ base, store }) {
  let tags = [];
  const message = (text) => {
    $("cost-error").textContent = text || "";
    $("cost-error").hidden = !text;
  };
  const inputs = () => [...$("cost-grid").querySelectorAll("input")];

  function render(setting) {
    tags = setting.tags;
    const head = el("tr", {}, el("td", { class: "corner", text: "true ↓ given →" }), ...tags.map((t) => el("th", { scope: "col", text: t })));
    const rows = setting.matrix.map((row, i) =>
      el(
        "tr",
        {},
        el("th", { scope: "row", text: tags[i] }),
        ...row.map((cost, j) =>
          el(
            "td",
            {},
            el("input", {
              type: "text",
              inputmode: "decimal",
              value: String(cost),
              "aria-label": `Cost when the true tag is ${tags[i]} and ${tags[j]} is given`,
              "data-cell": `${i},${j}`,
              ...(i === j ? { disabled: "", title: "A right tag costs nothing." } : {}),
            }),
          ),
        ),
      ),
    );
    const caption = el("caption", { class: "sr-only", text: "Rows: the true tag. Columns: the tag given. Each cell: what that error costs." });
    $("cost-grid").replaceChildren(el("table", { class: "heat cost-grid" }, caption, el("thead", {}, head), el("tbody", {}, ...rows)));
    $("cost-preset").value = setting.preset || "";
    $("cost-state").textContent = setting.preset ? `Preset: ${setting.preset}.` : "A matrix of your own.";
  }

  function markCell(cell) {
    for (const input of inputs()) input.removeAttribute("aria-invalid");
    if (!cell) return;
    const input = $("cost-grid").querySelector(`input[data-cell="${cell[0]},${cell[1]}"]`);
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }

  // The re-scoring the save queued: the latest report, looked at until it is in the new
  // currency, then given to the store (the summary and every panel of the report follow).
  let following = 0;
  async function followRescore(revision) {
    const mine = ++following;
    for (let attempt = 0; attempt < RESCORE_LOOKS && mine === following; attempt++) {
      const report = await getOrNull(`${base}/reports/latest/`).catch(() => null);
      if (mine !== following) return;
      if (!report) return; // no model yet: nothing to re-score
      if (rescored(report, revision)) {
        store.set("report", report);
        return;
      }
      if (attempt === 0) $("cost-report").textContent = `Model v${report.version}: re-scoring in the new costs…`;
      await new Promise((done) => setTimeout(done, rescoreDelay(attempt) * 1000));
    }
  }

  async function save(body) {
    try {
      const setting = await api("PUT", `${base}/cost-matrix/${body instanceof FormData ? "csv" : ""}`, body);
      render(setting);
      message("");
      markCell(null);
      toast("Cost matrix saved: every model's report is re-scored in it (nothing is retrained).");
      followRescore(setting.revision);
    } catch (failure) {
      const fields = failure.fields || {};
      message([].concat(fields.matrix || fields.file || fields.tags || fields.preset || []).join(" ") || describe(failure));
    }
  }

  $("cost-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const values = tags.map((_, i) => tags.map((_, j) => $("cost-grid").querySelector(`input[data-cell="${i},${j}"]`).value));
    const { matrix, error, cell } = readGrid(values, tags);
    markCell(cell);
    if (error) {
      message(error);
      return;
    }
    save({ matrix, tags });
  });
  $("cost-apply").addEventListener("click", () => {
    if ($("cost-preset").value) save({ preset: $("cost-preset").value });
  });
  $("cost-file").addEventListener("change", () => {
    const file = $("cost-file").files[0];
    if (!file) return;
    const form = new FormData();
    form.append("file", file);
    save(form);
    $("cost-file").value = "";
  });
  $("cost-csv").href = `${base}/cost-matrix/csv`;

  store.watch("report", (report) => {
    const cost = report.cost;
    if (!cost || cost.cost_per_token === null) {
      $("cost-report").textContent = "The cost per word needs evaluation sentences.";
      return;
    }
    const top = topShares(cost.cost_share);
    $("cost-report").textContent =
      `Model v${report.version}: ${fixed(cost.cost_per_token, 3)} per word on the evaluation sentences ` +
      `(it expects ${fixed(cost.expected_cost_per_token, 3)}); calibration error ${pct(cost.calibration_error)}.` +
      (top ? ` Most of the cost: ${top}.` : "");
  });

  return {
    async load() {
      render(await api("GET", `${base}/cost-matrix/`));
    },
  };
}
