// Retraining: the status line ("Model v4 · 120 new answers since · retraining…", polled while a
// retrain runs), the last failure, recent runs, the schedule form and "Retrain now".
import { $, el, toast } from "../lib/dom.js";
import { fixed, fmt } from "../lib/format.js";
import { api, describe, getOrNull } from "../lib/http.js";
import { empty, headRow, SHORT_TIME, statusPill, table, when } from "./ui.js";
import { renderLive } from "./livemodel.js";

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
  const rows = [];
  for (const run of runs) {
    const bad = run.status === "failed";
    rows.push(
      el(
        "tr",
        { class: bad ? "bad" : "", "data-run": String(run.id) },
        el("td", {}, when(run.started_at, SHORT_TIME), el("span", { class: "sub", text: run.trigger })),
        el("td", {}, statusPill(run.status), run.version ? el("span", { class: "sub", text: `model v${run.version}` }) : null),
        el("td", { class: "num", text: fixed(run.seconds, 1) }),
      ),
    );
    if (run.error) {
      rows.push(el("tr", { class: bad ? "bad detail" : "detail" }, el("td", { colspan: "3" }, el("span", { class: "error-text", text: run.error }))));
    }
  }
  $("runs").replaceChildren(table(headRow(["Started", "Result", "Seconds"], (i) => i === 2), rows, "table runs"));
}

function scheduleError(text) {
  const box = $("sched-error");
  box.textContent = text || "";
  box.hidden = !text;
  if (text) $("sched-minutes").setAttribute("aria-invalid", "true");
  else $("sched-minutes").removeAttribute("aria-invalid");
}

// "Model v4 · 120 new answers since · retraining…"; before the first model, "No model yet · 12
// answers to learn from" (it said "12 new answers since", since nothing).
export function statusText(status) {
  const n = status.pending_observations;
  const answers = n === 1 ? "answer" : "answers";
  const parts = [status.current_version ? `Model v${status.current_version}` : "No model yet"];
  if (n) parts.push(`${fmt.format(n)} ${status.current_version ? `new ${answers} since` : `${answers} to learn from`}`);
  if (status.running) parts.push("retraining…");
  return parts.join(" · ");
}

export function mountRetraining({ base }) {
  let statusTimer = 0;

  async function loadStatus() {
    clearTimeout(statusTimer);
    let status;
    try {
      status = await api("GET", `${base}/retrain-status/`);
    } catch {
      return; // no learning API: the line stays empty
    }
    const line = [statusText(status)];
    if (!status.running && status.last_run && status.last_run.status === "failed") {
      line.push(" · ", el("a", { href: "#h-retraining", class: "bad-link", text: "last retrain failed" }));
    }
    $("model-status").replaceChildren(...line);
    renderLastError(status);
    renderRuns(status.recent_runs || []);
    renderLive(status.live);
    if (status.running) statusTimer = setTimeout(loadStatus, 3000);
  }

  async function loadSchedule() {
    const schedule = await getOrNull(`${base}/retrain-schedule/`);
    if (!schedule) return;
    $("sched-minutes").value = String(schedule.interval_minutes);
    $("sched-enabled").checked = schedule.enabled;
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
      const saved = await api("PUT", `${base}/retrain-schedule/`, { interval_minutes: minutes, enabled: $("sched-enabled").checked });
      $("sched-minutes").value = String(saved.interval_minutes);
      $("sched-enabled").checked = saved.enabled;
      toast(saved.enabled ? `Saved: retrained at most every ${fmt.format(saved.interval_minutes)} minutes.` : "Saved: automatic retraining is off.");
    } catch (error) {
      scheduleError(describe(error));
    }
  });

  $("retrain").addEventListener("click", async () => {
    $("retrain").disabled = true;
    try {
      const answer = await api("POST", `${base}/retrain/`);
      toast(answer.message || (answer.queued ? "Retraining: the new report will appear here." : "Nothing new to learn from."));
      if (answer.queued) statusTimer = setTimeout(loadStatus, 1000);
    } catch (error) {
      toast(error.code === "no_observations" ? "No answers yet: nothing to learn from." : describe(error));
    } finally {
      setTimeout(() => ($("retrain").disabled = false), 3000);
    }
  });

  return { loadStatus, loadSchedule };
}
