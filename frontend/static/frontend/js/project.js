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
  if (!members.length) {
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
  const rows = members.map((m) => {
    const r = byUser.get(m.user) || {};
    const speed = r.seconds_per_answer ?? r.median_seconds ?? r.speed;
    const reliability = r.reliability;
    const flag = r.flagged ? el("span", { class: "pill pill-flag", text: "flagged" }) : null;
    return el(
      "tr",
      {},
      el("td", { text: m.username }),
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

// --- Start ------------------------------------------------------------------------------------

async function start() {
  try {
    await loadProject();
    await Promise.all([loadStats(), loadMembers(), loadImports()]);
  } catch (error) {
    fail(error);
  }
}

start();
setInterval(() => {
  if (document.visibilityState === "visible") loadStats().catch(() => {});
}, 30000);
