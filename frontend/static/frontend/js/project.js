// A project's dashboard: progress, invite, annotators, corpus, exports (annotation API), and the
// model's reports (learning API), kept up to date by the project's event stream.
import { api, describe, el, toast } from "./api.js";

const root = document.getElementById("dash");
const ID = Number(root.dataset.project);
const BASE = `/api/projects/${ID}`;
const $ = (id) => document.getElementById(id);

let project = null;

function fail(error) {
  $("dash-error").hidden = false;
  $("dash-error").textContent = describe(error);
}

const fmt = new Intl.NumberFormat();
const pct = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : `${(100 * x).toFixed(1)} %`);

// --- Project, status, invite ------------------------------------------------------------------

function renderProject() {
  $("p-name").textContent = project.name;
  const status = $("p-status");
  status.textContent = project.status[0].toUpperCase() + project.status.slice(1);
  status.className = `pill pill-${project.status}`;
  const pause = $("pause");
  pause.textContent = project.status === "paused" ? "Resume" : "Pause";
  pause.hidden = project.status === "archived";
  const link = new URL(`/join/${project.invite_code}`, window.location.origin).href;
  $("invite-link").value = link;
  $("invite-code").value = project.invite_code;
}

async function loadProject() {
  project = await api("GET", `${BASE}/`);
  renderProject();
}

$("pause").addEventListener("click", async () => {
  const status = project.status === "paused" ? "active" : "paused";
  try {
    project = await api("PATCH", `${BASE}/`, { status });
    renderProject();
    toast(status === "paused" ? "Paused: no new tasks are served." : "Resumed.");
  } catch (error) {
    fail(error);
  }
});

$("copy-link").addEventListener("click", async () => {
  try {
    await navigator.clipboard.writeText($("invite-link").value);
    toast("Link copied.");
  } catch {
    $("invite-link").select();
  }
});

$("rotate").addEventListener("click", async () => {
  if (!window.confirm("Make a new code? The old link will stop working.")) return;
  try {
    project.invite_code = (await api("POST", `${BASE}/invite/`)).invite_code;
    renderProject();
    toast("New invite code made.");
  } catch (error) {
    fail(error);
  }
});

// --- Progress ---------------------------------------------------------------------------------

function kpi(label, value, fraction) {
  const node = el("div", { class: "kpi" }, el("span", { class: "v", text: value }), el("span", { class: "l", text: label }));
  if (fraction !== undefined) {
    const fill = el("div", { class: "bar-fill" });
    fill.style.width = `${Math.min(100, Math.max(0, 100 * fraction))}%`;
    node.append(el("div", { class: "bar-track", "aria-hidden": "true" }, fill));
  }
  return node;
}

let stats = null;
let latest = null; // the newest report

async function loadStats() {
  stats = await api("GET", `${BASE}/stats/`);
  renderKpis();
}

function renderKpis() {
  if (!stats) return;
  const s = stats;
  const sentences = s.sentences.train + s.sentences.evaluation + s.sentences.gold_check;
  const coverage = s.tasks ? s.regions_complete / s.tasks : 0;
  const items = [
    kpi("answers", fmt.format(s.observations)),
    kpi(`regions complete of ${fmt.format(s.tasks)} (coverage)`, pct(coverage), coverage),
    kpi(`sentences · ${fmt.format(s.tokens)} words`, fmt.format(sentences)),
    kpi("annotators who answered", fmt.format(s.annotators)),
    kpi("tasks being answered now", fmt.format(s.leases_live)),
  ];
  if (latest && latest.accuracy !== undefined && latest.accuracy !== null) {
    items.splice(1, 0, kpi("test accuracy of the latest model", pct(latest.accuracy), latest.accuracy));
  }
  $("kpis").replaceChildren(...items);
}

// --- Annotators (members, joined with the report's reliability when there is one) -------------

let members = [];

async function loadMembers() {
  const page = await api("GET", `${BASE}/members/?limit=200`);
  members = page.results;
  renderAnnotators();
}

function renderAnnotators() {
  const byUser = new Map(((latest && latest.annotators) || []).map((row) => [row.annotator ?? row.user, row]));
  const shown = members.filter((m) => m.role === "annotator" || m.observations > 0);
  if (!shown.length) {
    $("annotators").replaceChildren(el("p", { class: "empty", text: "Nobody has joined yet: share the invite link." }));
    return;
  }
  const head = el(
    "tr",
    {},
    ...["Annotator", "Role", "Answers", "Seconds per answer", "Reliability", ""].map((h, i) =>
      el("th", { scope: "col", class: i >= 2 && i <= 4 ? "num" : "", text: h }),
    ),
  );
  const rows = shown.map((m) => {
    const r = byUser.get(m.user) || {};
    const speed = r.seconds_per_answer ?? r.median_seconds ?? r.speed;
    const reliability = r.reliability;
    const flag = r.flagged ? el("span", { class: "pill pill-flag", text: "flagged", title: r.flag_reason || "" }) : null;
    const name = el("td", {}, el("span", { text: m.username }));
    if (r.flagged && r.flag_reason) name.append(el("div", { class: "help", text: r.flag_reason }));
    return el(
      "tr",
      {},
      name,
      el("td", { text: m.role }),
      el("td", { class: "num", text: fmt.format(m.observations) }),
      el("td", { class: "num", text: speed === undefined || speed === null ? "–" : Number(speed).toFixed(1) }),
      el("td", { class: "num", text: reliability === undefined || reliability === null ? "–" : Number(reliability).toFixed(2) }),
      el("td", {}, flag),
    );
  });
  $("annotators").replaceChildren(el("table", { class: "table" }, el("thead", {}, head), el("tbody", {}, ...rows)));
}

// --- Corpus -----------------------------------------------------------------------------------

async function loadImports() {
  const page = await api("GET", `${BASE}/corpus/`);
  const items = page.results.map((c) =>
    el("li", {}, el("b", { text: c.filename || c.format }), ` · ${fmt.format(c.sentences)} sentences (${fmt.format(c.splits.train)} to annotate, ${fmt.format(c.splits.evaluation)} held out, ${fmt.format(c.splits.gold_check)} checks)`),
  );
  $("imports").replaceChildren(items.length ? el("ul", {}, ...items) : el("p", { class: "muted", text: "No corpus yet." }));
}

$("upload").addEventListener("submit", async (event) => {
  event.preventDefault();
  const file = $("up-file").files[0];
  if (!file) return;
  const body = new FormData();
  body.append("file", file);
  body.append("format", $("up-format").value);
  try {
    const done = await api("POST", `${BASE}/corpus/`, body);
    toast(`${fmt.format(done.sentences)} sentences added.`);
    $("upload").reset();
    await Promise.all([loadImports(), loadStats()]);
  } catch (error) {
    fail(error);
  }
});

// --- Model reports (learning API) --------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

function empty(text) {
  return el("p", { class: "empty", text });
}

// Round tick values (1, 2 or 5 times a power of ten) covering lo..hi.
function niceTicks(lo, hi, n = 4) {
  const raw = (hi - lo) / n || 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + 1e-9; t += step) ticks.push(Number(t.toFixed(10)));
  return ticks;
}

// The learning curve: accuracy (or, without evaluation sentences, count error) per version,
// against the number of answers the version learned from.
function renderCurve(report) {
  const points = (report.learning_curve || []).filter((p) => p.observations !== null);
  const useAccuracy = points.some((p) => p.accuracy !== null && p.accuracy !== undefined);
  const key = useAccuracy ? "accuracy" : "count_consistency";
  const data = points.filter((p) => p[key] !== null && p[key] !== undefined);
  if (!data.length) {
    $("curve").replaceChildren(empty("The curve appears once a model has been evaluated."));
    return;
  }
  const W = Math.max(300, Math.round($("curve").clientWidth) || 640);
  const H = W < 500 ? 220 : 260, L = 48, R = 30, T = 14, B = 40;
  const xs = data.map((p) => p.observations);
  const ys = data.map((p) => p[key]);
  const xMax = Math.max(...xs, 1);
  let yLo = Math.min(...ys), yHi = Math.max(...ys);
  if (useAccuracy) {
    yLo = Math.max(0, Math.floor((yLo - 0.02) * 10) / 10);
    yHi = Math.min(1, Math.ceil((yHi + 0.02) * 10) / 10);
  } else {
    yLo = 0;
    yHi = Math.max(yHi * 1.15, 0.1);
  }
  if (yHi <= yLo) yHi = yLo + 0.1;
  const x = (v) => L + ((W - L - R) * v) / xMax;
  const y = (v) => T + ((H - T - B) * (yHi - v)) / (yHi - yLo);
  const label = useAccuracy ? "test accuracy" : "count error (lower is better)";
  const last = data[data.length - 1];
  const summary = `${label} over ${data.length} model versions; latest ${useAccuracy ? pct(last[key]) : last[key].toFixed(3)} after ${fmt.format(last.observations)} answers`;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary });
  for (const t of niceTicks(yLo, yHi)) {
    chart.append(svg("line", { class: "grid-line", x1: L, x2: W - R, y1: y(t), y2: y(t) }));
    chart.append(svg("text", { x: L - 8, y: y(t) + 4, "text-anchor": "end" }, useAccuracy ? `${Math.round(t * 100)}%` : t.toFixed(2)));
  }
  for (const t of niceTicks(0, xMax)) {
    chart.append(svg("text", { x: x(t), y: H - B + 18, "text-anchor": "middle" }, fmt.format(Math.round(t))));
  }
  chart.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  chart.append(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  chart.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, `answers learned from · ${label}`));
  chart.append(svg("polyline", { class: "series", points: data.map((p) => `${x(p.observations)},${y(p[key])}`).join(" ") }));
  for (const p of data) {
    const dot = svg("circle", { class: "dot", cx: x(p.observations), cy: y(p[key]), r: 4 });
    dot.append(svg("title", {}, `version ${p.version}: ${useAccuracy ? pct(p[key]) : p[key].toFixed(3)} after ${fmt.format(p.observations)} answers`));
    chart.append(dot);
  }
  $("curve").replaceChildren(chart);
}

function renderPerTag(report) {
  const rows = report.per_tag || [];
  if (!rows.length) {
    $("f1").replaceChildren(empty("Per-tag scores need evaluation sentences (gold tags held out at upload)."));
    return;
  }
  const head = el("tr", {}, ...["Tag", "Precision", "Recall", "F1", "Support"].map((h, i) => el("th", { scope: "col", class: i ? "num" : "", text: h })));
  const body = rows.map((r) => {
    const f1 = el("td", { class: "num f1" }, el("span", { text: r.f1 === null ? "–" : r.f1.toFixed(2) }));
    if (r.f1 !== null) {
      const track = el("div", { class: "bar-track", "aria-hidden": "true" });
      const fill = el("div", { class: "bar-fill" });
      fill.style.width = `${100 * r.f1}%`;
      track.append(fill);
      f1.append(track);
    }
    return el(
      "tr",
      {},
      el("th", { scope: "row", text: r.tag }),
      el("td", { class: "num", text: r.precision === null ? "–" : r.precision.toFixed(2) }),
      el("td", { class: "num", text: r.recall === null ? "–" : r.recall.toFixed(2) }),
      f1,
      el("td", { class: "num", text: fmt.format(r.support) }),
    );
  });
  $("f1").replaceChildren(el("div", { class: "table-wrap" }, el("table", { class: "table" }, el("thead", {}, head), el("tbody", {}, ...body))));
}

// Heat map: each row (gold tag) shaded by the share of its tokens predicted as each column.
function renderConfusion(report) {
  const confusion = report.confusion;
  if (!confusion || !confusion.matrix || !confusion.matrix.length) {
    $("confusion").replaceChildren(empty("The confusion matrix needs evaluation sentences."));
    return;
  }
  const tags = confusion.tags;
  const head = el("tr", {}, el("td", {}), ...tags.map((t) => el("th", { scope: "col", text: t })));
  const rows = confusion.matrix.map((row, i) => {
    const total = row.reduce((a, b) => a + b, 0) || 1;
    return el(
      "tr",
      {},
      el("th", { scope: "row", text: tags[i] }),
      ...row.map((n, j) => {
        const share = n / total;
        const cell = el("td", { text: n ? String(n) : "", title: `gold ${tags[i]}, predicted ${tags[j]}: ${n} (${pct(share)})` });
        cell.style.background = n ? `rgba(45, 70, 185, ${(0.08 + 0.92 * share).toFixed(3)})` : "#f7f8fa";
        cell.style.color = share > 0.45 ? "#fff" : "#1a1d23";
        return cell;
      }),
    );
  });
  const table = el("table", { class: "heat" }, el("caption", { class: "sr-only", text: "Rows: gold tag. Columns: predicted tag. Numbers: tokens." }), el("thead", {}, head), el("tbody", {}, ...rows));
  $("confusion").replaceChildren(table, el("p", { class: "help", text: "Rows are gold tags, columns predicted tags; darker means a larger share of the row." }));
}

function renderReport(report) {
  latest = report;
  renderCurve(report);
  renderPerTag(report);
  renderConfusion(report);
  renderAnnotators();
  renderKpis();
}

async function loadReport() {
  try {
    renderReport(await api("GET", `${BASE}/reports/latest/`));
  } catch (error) {
    if (error.status !== 404) throw error; // 404: no model yet, or no learning API
  }
}

async function loadVersions() {
  let page;
  try {
    page = await api("GET", `${BASE}/models/?limit=20`);
  } catch (error) {
    if (error.status === 404) return;
    throw error;
  }
  if (!page.results.length) return;
  const head = el("tr", {}, ...["Version", "Answers", "Accuracy", "Count error", "Trained", ""].map((h, i) => el("th", { scope: "col", class: i && i < 4 ? "num" : "", text: h })));
  const rows = page.results.map((v) =>
    el(
      "tr",
      {},
      el("th", { scope: "row", text: `v${v.version}${v.current ? " (current)" : ""}` }),
      el("td", { class: "num", text: fmt.format(v.observations) }),
      el("td", { class: "num", text: pct(v.accuracy) }),
      el("td", { class: "num", text: v.count_consistency === null ? "–" : v.count_consistency.toFixed(3) }),
      el("td", { class: "nowrap" }, el("time", { datetime: v.created_at, text: new Date(v.created_at).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) })),
      el("td", {}, el("a", { href: `${BASE}/models/${v.version}/download`, download: "", text: "Download" })),
    ),
  );
  $("versions").replaceChildren(el("table", { class: "table" }, el("thead", {}, head), el("tbody", {}, ...rows)));
  if (!document.getElementById("export-predictions")) {
    $("exports").append(el("li", {}, el("a", { id: "export-predictions", href: `${BASE}/exports/predictions.conllu`, download: "", text: "Predicted tags of the corpus (CoNLL-U)" })));
  }
}

// "Model v4 · 120 new answers since · retraining…", polled while a retrain runs.
let statusTimer = 0;

async function loadRetrainStatus() {
  clearTimeout(statusTimer);
  let status;
  try {
    status = await api("GET", `${BASE}/retrain-status/`);
  } catch {
    return; // no learning API: the line stays empty
  }
  const parts = [status.current_version ? `Model v${status.current_version}` : "No model yet"];
  if (status.pending_observations) parts.push(`${fmt.format(status.pending_observations)} new answers since`);
  if (status.running) parts.push("retraining…");
  else if (status.last_run && status.last_run.status === "failed") parts.push("last retrain failed");
  $("model-status").textContent = parts.join(" · ");
  if (status.running) statusTimer = setTimeout(loadRetrainStatus, 3000);
}

$("retrain").addEventListener("click", async () => {
  $("retrain").disabled = true;
  try {
    const answer = await api("POST", `${BASE}/retrain/`);
    toast(answer.message || (answer.queued ? "Retraining: the new report will appear here." : "Nothing new to learn from."));
    if (answer.queued) statusTimer = setTimeout(loadRetrainStatus, 1000);
  } catch (error) {
    toast(error.code === "no_observations" ? "No answers yet: nothing to learn from." : describe(error));
  } finally {
    setTimeout(() => ($("retrain").disabled = false), 3000);
  }
});

// --- Try the model ----------------------------------------------------------------------------

$("try").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("try-text").value.trim();
  if (!text) return;
  const out = $("try-out");
  try {
    const result = await api("POST", `${BASE}/predict/`, { text });
    out.replaceChildren(
      el(
        "ol",
        { class: "predicted", "aria-label": `Tags from model version ${result.version}` },
        ...result.tokens.map((token, i) =>
          el("li", {}, el("span", { class: "w", text: token }), el("span", { class: "t", text: result.tags[i] }), el("span", { class: "p", text: pct(result.probabilities[i]) })),
        ),
      ),
    );
  } catch (error) {
    out.replaceChildren(empty(error.code === "no_model" ? "No model yet: retrain once there are answers." : describe(error)));
  }
});

// --- Live updates: the project's event stream -------------------------------------------------

function connect() {
  if (!window.EventSource) return;
  const live = $("live");
  const source = new EventSource(`${BASE}/events/`);
  source.addEventListener("open", () => {
    live.textContent = "Live";
    live.classList.add("on");
  });
  source.addEventListener("error", () => {
    // The stream ends every ~30 s and EventSource reconnects by itself.
    live.textContent = "Reconnecting…";
    live.classList.remove("on");
  });
  source.addEventListener("hello", (event) => {
    const { version } = JSON.parse(event.data);
    if (version !== null && (!latest || latest.version !== version)) refreshModel();
  });
  source.addEventListener("report", (event) => {
    const data = JSON.parse(event.data);
    if (!latest || latest.version !== data.version) {
      refreshModel();
      toast(`New model v${data.version}${data.accuracy === null ? "" : `: ${pct(data.accuracy)} accuracy`}.`);
    }
  });
}

async function refreshModel() {
  try {
    await Promise.all([loadReport(), loadVersions(), loadStats(), loadMembers(), loadRetrainStatus()]);
  } catch (error) {
    fail(error);
  }
}

// --- Start ------------------------------------------------------------------------------------

async function start() {
  try {
    await loadProject();
    await Promise.all([loadStats(), loadMembers(), loadImports(), loadReport(), loadVersions(), loadRetrainStatus()]);
  } catch (error) {
    fail(error);
  }
  connect();
}

start();
setInterval(() => {
  if (document.visibilityState !== "visible") return;
  loadStats().catch(() => {});
  loadRetrainStatus();
}, 30000);
