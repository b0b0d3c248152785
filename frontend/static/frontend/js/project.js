// A project's dashboard: progress, invite, annotators, corpus, exports (annotation API), and the
// model's reports, retraining (schedule, runs, failures) and webhooks (learning API), kept up to
// date by the project's event stream.
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

// --- Retraining: status line, schedule, recent runs, last error -------------------------------

const STATUSES = new Set(["running", "succeeded", "failed", "skipped", "pending", "retrying"]);
const statusPill = (status) => el("span", { class: `pill pill-${STATUSES.has(status) ? status : "other"}`, text: status });

const SHORT_TIME = { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };
function when(iso, options = { dateStyle: "medium", timeStyle: "short" }) {
  if (!iso) return el("span", { class: "muted", text: "–" });
  const date = new Date(iso);
  return el("time", { datetime: iso, title: date.toLocaleString(), text: date.toLocaleString([], options) });
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
  const line = [parts.join(" · ")];
  if (!status.running && status.last_run && status.last_run.status === "failed") {
    line.push(" · ", el("a", { href: "#h-retraining", class: "bad-link", text: "last retrain failed" }));
  }
  $("model-status").replaceChildren(...line);
  renderLastError(status);
  renderRuns(status.recent_runs || []);
  if (status.running) statusTimer = setTimeout(loadRetrainStatus, 3000);
}

// The newest failure: red while it is the latest run, a quieter note once a later run succeeded.
function renderLastError(status) {
  const box = $("last-error");
  const error = status.last_error;
  if (!error) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const current = status.last_run && status.last_run.id === error.run;
  box.className = current ? "error last-error" : "warn last-error";
  box.replaceChildren(
    el("p", {}, el("b", { text: current ? "The last retrain failed" : "Earlier failed retrain (the latest run did not fail)" }), " · ", when(error.at)),
    el("p", { class: "error-text", text: error.message }),
  );
  box.hidden = false;
}

function renderRuns(runs) {
  if (!runs.length) {
    $("runs").replaceChildren(empty("No retraining yet."));
    return;
  }
  const head = el("tr", {}, ...["Started", "Result", "Seconds"].map((h, i) => el("th", { scope: "col", class: i === 2 ? "num" : "", text: h })));
  const rows = [];
  for (const run of runs) {
    const bad = run.status === "failed";
    rows.push(
      el(
        "tr",
        { class: bad ? "bad" : "", "data-run": String(run.id) },
        el("td", {}, when(run.started_at, SHORT_TIME), el("span", { class: "sub", text: run.trigger })),
        el("td", {}, statusPill(run.status), run.version ? el("span", { class: "sub", text: `model v${run.version}` }) : null),
        el("td", { class: "num", text: run.seconds === null || run.seconds === undefined ? "–" : Number(run.seconds).toFixed(1) }),
      ),
    );
    if (run.error) {
      rows.push(el("tr", { class: bad ? "bad detail" : "detail" }, el("td", { colspan: "3" }, el("span", { class: "error-text", text: run.error }))));
    }
  }
  $("runs").replaceChildren(el("table", { class: "table runs" }, el("thead", {}, head), el("tbody", {}, ...rows)));
}

async function loadSchedule() {
  let schedule;
  try {
    schedule = await api("GET", `${BASE}/retrain-schedule/`);
  } catch (error) {
    if (error.status === 404) return;
    throw error;
  }
  $("sched-minutes").value = String(schedule.interval_minutes);
  $("sched-enabled").checked = schedule.enabled;
}

function scheduleError(text) {
  const box = $("sched-error");
  box.textContent = text || "";
  box.hidden = !text;
  if (text) $("sched-minutes").setAttribute("aria-invalid", "true");
  else $("sched-minutes").removeAttribute("aria-invalid");
}

$("schedule").addEventListener("submit", async (event) => {
  event.preventDefault();
  const raw = $("sched-minutes").value.trim();
  const minutes = Number(raw);
  if (!/^\d+$/.test(raw) || minutes < 1 || minutes > 10080) {
    scheduleError("Enter a whole number of minutes from 1 to 10080 (one week).");
    $("sched-minutes").focus();
    return;
  }
  scheduleError("");
  try {
    const saved = await api("PUT", `${BASE}/retrain-schedule/`, { interval_minutes: minutes, enabled: $("sched-enabled").checked });
    $("sched-minutes").value = String(saved.interval_minutes);
    $("sched-enabled").checked = saved.enabled;
    toast(saved.enabled ? `Saved: retrained at most every ${fmt.format(saved.interval_minutes)} minutes.` : "Saved: automatic retraining is off.");
  } catch (error) {
    scheduleError(describe(error));
  }
});

// --- Webhooks ---------------------------------------------------------------------------------

let hooks = [];
const openHooks = new Set(); // webhooks whose deliveries are shown
let hooksTimer = 0;

async function loadHooks() {
  clearTimeout(hooksTimer);
  let page;
  try {
    page = await api("GET", `${BASE}/webhooks/?limit=50`);
  } catch (error) {
    if (error.status === 404) return;
    throw error;
  }
  hooks = page.results;
  renderHooks();
  await Promise.all(hooks.filter((hook) => openHooks.has(hook.id)).map(loadDeliveries));
  // A delivery in flight: look again soon.
  if (hooks.some((hook) => hook.last_delivery && ["pending", "retrying"].includes(hook.last_delivery.status))) {
    hooksTimer = setTimeout(() => loadHooks().catch(() => {}), 5000);
  }
}

function renderHooks() {
  for (const id of [...openHooks]) if (!hooks.some((hook) => hook.id === id)) openHooks.delete(id);
  if (!hooks.length) {
    $("hooks").replaceChildren(empty("No webhooks yet."));
    return;
  }
  $("hooks").replaceChildren(el("ul", { class: "hooks" }, ...hooks.map(hookItem)));
}

function hookItem(hook) {
  const last = hook.last_delivery;
  const open = openHooks.has(hook.id);
  const panel = el("div", { id: `deliveries-${hook.id}`, class: "deliveries" });
  panel.hidden = !open;
  const toggle = el("button", { type: "button", class: "show-deliveries", "aria-expanded": String(open), "aria-controls": panel.id, text: open ? "Hide deliveries" : "Deliveries" });
  toggle.addEventListener("click", () => {
    if (openHooks.has(hook.id)) {
      openHooks.delete(hook.id);
      panel.hidden = true;
      toggle.textContent = "Deliveries";
      toggle.setAttribute("aria-expanded", "false");
      return;
    }
    openHooks.add(hook.id);
    panel.hidden = false;
    toggle.textContent = "Hide deliveries";
    toggle.setAttribute("aria-expanded", "true");
    panel.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
    loadDeliveries(hook).catch((error) => panel.replaceChildren(el("p", { class: "error", text: describe(error) })));
  });
  const item = el(
    "li",
    { class: `hook${last && last.status === "failed" ? " bad" : ""}`, "data-hook": String(hook.id) },
    el("code", { class: "hook-url", text: hook.url }),
    el(
      "p",
      { class: "hook-meta" },
      el("span", { class: `pill ${hook.active ? "pill-active" : "pill-off"}`, text: hook.active ? "active" : "off" }),
      " ",
      ...(last ? ["Last delivery: ", statusPill(last.status), " ", when(last.at)] : [el("span", { class: "muted", text: "No deliveries yet." })]),
    ),
    el(
      "div",
      { class: "hook-actions" },
      toggle,
      el("button", { type: "button", class: "toggle-active", text: hook.active ? "Turn off" : "Turn on", onclick: () => hookSetActive(hook, !hook.active) }),
      el("button", { type: "button", class: "danger delete-hook", text: "Delete", onclick: () => hookDelete(hook) }),
    ),
    panel,
  );
  return item;
}

async function hookSetActive(hook, active) {
  try {
    await api("PATCH", `${BASE}/webhooks/${hook.id}/`, { active });
    toast(active ? "Webhook turned on." : "Webhook turned off: it gets no deliveries.");
    await loadHooks();
  } catch (error) {
    fail(error);
  }
}

async function hookDelete(hook) {
  if (!window.confirm(`Delete the webhook to ${hook.url}? Its delivery log is deleted too.`)) return;
  try {
    await api("DELETE", `${BASE}/webhooks/${hook.id}/`);
    openHooks.delete(hook.id);
    toast("Webhook deleted.");
    await loadHooks();
  } catch (error) {
    fail(error);
  }
}

const DELIVERY_CLASS = { failed: "bad", retrying: "warn", pending: "warn", succeeded: "good" };

async function loadDeliveries(hook) {
  const panel = document.getElementById(`deliveries-${hook.id}`);
  const page = await api("GET", `${BASE}/webhooks/${hook.id}/deliveries/?limit=20`);
  if (!panel) return;
  if (!page.results.length) {
    panel.replaceChildren(el("p", { class: "muted", text: "No deliveries yet: one is sent after every new model." }));
    return;
  }
  const items = page.results.map((d) => {
    const facts = [`v${d.version ?? "–"}`, `${d.attempts} ${d.attempts === 1 ? "attempt" : "attempts"}`];
    if (d.response_code !== null && d.response_code !== undefined) facts.push(`HTTP ${d.response_code}`);
    const times = [el("span", {}, "Created ", when(d.created_at, SHORT_TIME))];
    if (d.last_attempt_at) times.push(el("span", {}, "Last attempt ", when(d.last_attempt_at, SHORT_TIME)));
    if (d.next_attempt_at && d.status !== "succeeded" && d.status !== "failed") times.push(el("span", {}, "Next attempt ", when(d.next_attempt_at, SHORT_TIME)));
    if (d.delivered_at) times.push(el("span", {}, "Delivered ", when(d.delivered_at, SHORT_TIME)));
    return el(
      "li",
      { class: `delivery ${DELIVERY_CLASS[d.status] || ""}`, "data-delivery": String(d.id) },
      el("p", { class: "delivery-head" }, statusPill(d.status), " ", el("span", { class: "delivery-facts", text: facts.join(" · ") })),
      d.error ? el("p", { class: "error-text", text: d.error }) : null,
      el("p", { class: "delivery-times help" }, ...times.flatMap((t, i) => (i ? [" · ", t] : [t]))),
    );
  });
  const more = page.count > page.results.length ? el("p", { class: "help", text: `The newest ${page.results.length} of ${fmt.format(page.count)} deliveries.` }) : null;
  panel.replaceChildren(el("ul", { class: "delivery-list", "aria-label": `Deliveries to ${hook.url}` }, ...items), ...(more ? [more] : []));
}

function hookError(text) {
  $("hook-error").textContent = text || "";
  $("hook-error").hidden = !text;
}

$("hook-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const url = $("hook-url").value.trim();
  const secret = $("hook-secret").value;
  if (!/^https?:\/\/\S+$/i.test(url)) {
    hookError("Enter an http:// or https:// URL.");
    $("hook-url").focus();
    return;
  }
  if (secret && (secret.length < 16 || secret.length > 200)) {
    hookError("A secret has 16 to 200 characters (or leave it empty).");
    $("hook-secret").focus();
    return;
  }
  hookError("");
  const submit = $("hook-form").querySelector("button[type=submit]");
  submit.disabled = true;
  try {
    const made = await api("POST", `${BASE}/webhooks/`, secret ? { url, secret } : { url });
    $("hook-form").reset();
    $("new-secret-value").value = made.secret;
    $("new-secret").hidden = false;
    $("new-secret-value").focus();
    $("new-secret-value").select();
    await loadHooks();
  } catch (error) {
    // The API's reasons (e.g. an internal address) are in `fields`.
    const reasons = error.fields ? Object.values(error.fields).flat().join(" ") : "";
    hookError(reasons || describe(error));
  } finally {
    submit.disabled = false;
  }
});

$("copy-secret").addEventListener("click", async () => {
  try {
    await navigator.clipboard.writeText($("new-secret-value").value);
    toast("Secret copied.");
  } catch {
    $("new-secret-value").select();
  }
});

$("secret-done").addEventListener("click", () => {
  $("new-secret-value").value = "";
  $("new-secret").hidden = true;
});

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
    await Promise.all([loadReport(), loadVersions(), loadStats(), loadMembers(), loadRetrainStatus(), loadHooks()]);
  } catch (error) {
    fail(error);
  }
}

// --- Start ------------------------------------------------------------------------------------

async function start() {
  try {
    await loadProject();
    await Promise.all([loadStats(), loadMembers(), loadImports(), loadReport(), loadVersions(), loadRetrainStatus(), loadSchedule(), loadHooks()]);
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
  loadHooks().catch(() => {});
}, 30000);
