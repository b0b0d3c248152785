// Tally annotator page: one task at a time, counted by taps or keys.
//
// Every answer is written to this device (localStorage "outbox") before it is sent, and stays
// there until the server has it; resending uses the same idempotency key, so the server stores
// each answer exactly once, however often the network fails in between.
//
// Prefetch: besides the task on screen the page holds up to two more, leased ahead by naming the
// leases it has (`{"holding": [ids]}`), so the next task shows at once after a submit and, with
// the connection gone, all three can still be answered.
"use strict";

const app = document.getElementById("app");
const PROJECT = Number(app.dataset.project);
const LOGIN_URL = app.dataset.login;
const OUTBOX_KEY = `tally.outbox.${app.dataset.user}`;
const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

// --- HTTP -------------------------------------------------------------------------------------

class Offline extends Error {}
class HttpError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "";
  }
}

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

let clockSkew = 0; // server time minus device time, from the Date header

async function api(method, url, body) {
  let response;
  try {
    response = await fetch(url, {
      method,
      credentials: "same-origin",
      cache: "no-store",
      headers: {
        Accept: "application/json",
        "Content-Type": "application/json",
        "X-CSRFToken": csrfToken(),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new Offline("No connection.");
  }
  const date = Date.parse(response.headers.get("Date") || "");
  if (!Number.isNaN(date)) clockSkew = date - Date.now();
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw new HttpError(response.status, data);
  return data;
}

// --- The outbox: answers kept on the device until the server has them -----------------------

let memoryOutbox = []; // when localStorage is unavailable (some private modes)
const outbox = {
  all() {
    try {
      return JSON.parse(localStorage.getItem(OUTBOX_KEY) || "[]");
    } catch {
      return memoryOutbox;
    }
  },
  write(items) {
    memoryOutbox = items;
    try {
      localStorage.setItem(OUTBOX_KEY, JSON.stringify(items));
    } catch {
      /* memoryOutbox keeps them for this page's life */
    }
  },
  add(item) {
    this.write([...this.all(), item]);
  },
  remove(key) {
    this.write(this.all().filter((item) => item.idempotency_key !== key));
  },
  has(assignment) {
    return this.all().some((item) => item.assignment === assignment);
  },
};

function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// --- State ------------------------------------------------------------------------------------

let task = null; // the task on screen
let deadline = 0; // performance.now() at which its lease expires
let shownAt = 0;
let counts = [];
let active = 0;
let lookahead = []; // tasks leased ahead of time
const MAX_HELD = 3; // the server's cap on one annotator's live leases in a project
let sessionLost = false;
let online = navigator.onLine !== false;
let today = null;
let expiryTimer = 0;

function say(text) {
  $("sr-live").textContent = "";
  requestAnimationFrame(() => {
    $("sr-live").textContent = text;
  });
}

function setState(kind, title, text = "", action = null) {
  $("task").hidden = kind !== "task";
  const state = $("state");
  state.hidden = kind === "task";
  state.className = `state${kind === "loading" ? " busy" : ""}`;
  $("state-title").textContent = title;
  $("state-text").textContent = text;
  const link = $("state-action");
  link.hidden = !action;
  if (action) {
    link.textContent = action.label;
    link.href = action.href || "#";
    link.onclick = action.onClick
      ? (event) => {
          event.preventDefault();
          action.onClick();
        }
      : null;
  }
  $("submit").disabled = kind !== "task";
}

function showNotice(text, action = null) {
  const notice = $("notice");
  notice.hidden = !text;
  notice.textContent = text || "";
  if (action) {
    notice.append(el("button", { type: "button", textContent: action.label, onclick: action.onClick }));
  }
}

function renderPending() {
  const n = outbox.all().length;
  const pending = $("pending");
  pending.hidden = n === 0;
  const noun = n === 1 ? "answer" : "answers";
  pending.textContent = online
    ? `${n} ${noun} waiting to be sent`
    : `Offline · ${n} ${noun} waiting to be sent`;
}

function renderToday() {
  $("today").textContent = today === null ? "–" : String(today);
}

// --- The task on screen -----------------------------------------------------------------------

const CONTEXT = 24; // words shown on each side of the window

function renderSentence(t) {
  const { start, length } = t.window;
  const tokens = t.tokens;
  const from = Math.max(0, start - CONTEXT);
  const to = Math.min(tokens.length, start + length + CONTEXT);
  const sentence = $("sentence");
  sentence.replaceChildren();
  if (from > 0) sentence.append("… ");
  sentence.append(tokens.slice(from, start).join(" "), start > from ? " " : "");
  const mark = el("mark", {}, tokens.slice(start, start + length).join(" "));
  sentence.append(
    el("span", { className: "sr-only", textContent: "Highlighted: " }),
    mark,
    el("span", { className: "sr-only", textContent: " (end of highlight)" }),
  );
  sentence.append(start + length < to ? " " : "", tokens.slice(start + length, to).join(" "));
  if (to < tokens.length) sentence.append(" …");
}

function examplesOf(tag) {
  const examples = (tag.examples || []).filter(Boolean);
  return examples.length ? ` e.g. ${examples.map((e) => `“${e}”`).join(", ")}` : "";
}

function renderQuestions(t) {
  const box = $("questions");
  box.replaceChildren();
  box.classList.toggle("single", t.tags.length === 1);
  t.tags.forEach((tag, i) => {
    const id = `q${i}`;
    const heading = el("h3", { id: `${id}-h` }, "How many ", el("b", {}, tag.name), " in the highlight?");
    const guide = el("p", { className: "guide" }, tag.guideline || "");
    if (examplesOf(tag)) guide.append(el("span", { className: "eg" }, examplesOf(tag)));
    const minus = el("button", { type: "button", className: "dec", textContent: "−" });
    minus.setAttribute("aria-label", `One fewer ${tag.name}`);
    const plus = el("button", { type: "button", className: "inc", textContent: "+" });
    plus.setAttribute("aria-label", `One more ${tag.name}`);
    const value = el("output", { id: `${id}-n`, textContent: "0" });
    value.setAttribute("aria-label", `${tag.name} count`);
    minus.addEventListener("click", () => change(i, -1));
    plus.addEventListener("click", () => change(i, +1));
    const counter = el("div", { className: "counter" }, minus, value, plus);
    counter.setAttribute("role", "group");
    counter.setAttribute("aria-labelledby", `${id}-h`);
    const row = el("div", { className: "q", id }, el("div", { className: "text" }, heading, guide), counter);
    row.addEventListener("pointerdown", () => setActive(i));
    box.append(row);
  });
}

function maxFor(i) {
  // Each count is at most the window, and together they cannot exceed it.
  const others = counts.reduce((sum, c, j) => (j === i ? sum : sum + c), 0);
  return Math.max(0, task.max_count - others);
}

function renderCounts() {
  task.tags.forEach((tag, i) => {
    const row = $(`q${i}`);
    row.classList.toggle("active", i === active && task.tags.length > 1);
    row.querySelector("output").textContent = String(counts[i]);
    row.querySelector(".dec").disabled = counts[i] <= 0;
    row.querySelector(".inc").disabled = counts[i] >= maxFor(i);
  });
}

function setActive(i) {
  active = i;
  renderCounts();
}

function setCount(i, value) {
  if (!task) return;
  const next = Math.min(Math.max(0, value), maxFor(i));
  active = i;
  if (next !== counts[i]) {
    counts[i] = next;
    say(`${next} ${task.tags[i].name}`);
  }
  renderCounts();
}

function change(i, delta) {
  setCount(i, counts[i] + delta);
}

function show(t) {
  task = t;
  $("task").dataset.assignment = String(t.assignment);
  counts = t.tags.map(() => 0);
  active = 0;
  shownAt = performance.now();
  const expires = Date.parse(t.expires_at) - (Date.now() + clockSkew);
  deadline = shownAt + expires;
  clearTimeout(expiryTimer);
  expiryTimer = setTimeout(leaseExpired, Math.max(0, expires));
  showNotice("");
  renderSentence(t);
  renderQuestions(t);
  renderCounts();
  setState("task", "");
  $("submit").textContent = "Submit";
  const window = t.tokens.slice(t.window.start, t.window.start + t.window.length).join(" ");
  say(`New task. Highlighted: ${window}`);
}

function leaseExpired() {
  if (!task || performance.now() < deadline) return;
  showNotice("Time is up for this task. Your answer is still saved if you submit it, or take a new one.", {
    label: "New task",
    onClick: () => {
      task = null;
      advance();
    },
  });
}

// --- Sending ----------------------------------------------------------------------------------

let flushing = null;

function flush() {
  if (!flushing) {
    flushing = sendAll().finally(() => {
      flushing = null;
      renderPending();
      if (outbox.all().length) scheduleRetry();
    });
  }
  return flushing;
}

// Answers still waiting are retried with backoff (2 s, 4 s, … 30 s), and at once when the
// browser says it is back online.
let retryTimer = 0;
let retryDelay = 2000;

function scheduleRetry() {
  if (retryTimer || sessionLost) return;
  retryTimer = setTimeout(async () => {
    retryTimer = 0;
    const sent = await flush();
    if (sent) {
      retryDelay = 2000;
      if (!task) advance();
    } else {
      retryDelay = Math.min(2 * retryDelay, 30000);
    }
  }, retryDelay);
}

// Sends every waiting answer, oldest first. True when the outbox is empty afterwards.
async function sendAll() {
  for (const item of outbox.all()) {
    const { project, ...body } = item;
    try {
      await api("POST", "/api/observations/", body);
      outbox.remove(item.idempotency_key);
      setOnline(true);
      // A replay is an answer whose first response was lost: not counted here before either.
      if (project === PROJECT && today !== null) today += 1;
      renderToday();
    } catch (error) {
      if (error instanceof Offline) {
        setOnline(false);
        return false;
      }
      if (error.status === 401 || error.status === 403) {
        sessionExpired();
        return false;
      }
      if (error.status === 429 || error.status >= 500) return false; // try again later
      // 400, 404, 409: the server will never take this answer; keeping it would block the rest.
      outbox.remove(item.idempotency_key);
      showNotice(`One answer could not be saved: ${error.message}`);
    }
    renderPending();
  }
  return outbox.all().length === 0;
}

function setOnline(value) {
  if (online === value) return;
  online = value;
  renderPending();
}

function submit() {
  if (!task || sessionLost) return;
  const answer = {
    project: PROJECT,
    assignment: task.assignment,
    counts: Object.fromEntries(task.tags.map((tag, i) => [tag.name, counts[i]])),
    seconds_on_device: Math.round((performance.now() - shownAt) / 100) / 10,
    idempotency_key: newKey(),
  };
  outbox.add(answer); // kept on the device before anything is sent
  renderPending();
  say("Answer saved.");
  task = null;
  clearTimeout(expiryTimer);
  advance();
}

// --- Getting tasks ----------------------------------------------------------------------------

function lease(holding) {
  return api("POST", `/api/projects/${PROJECT}/tasks/next/`, holding ? { holding } : undefined);
}

let advancing = false;

async function advance() {
  if (advancing) return;
  advancing = true;
  try {
    await nextTask();
  } finally {
    advancing = false;
  }
}

async function nextTask() {
  if (lookahead.length) {
    show(lookahead.shift());
    flush().then(fillLookahead);
    return;
  }
  setState("loading", "Loading your next task…");
  const sent = await flush();
  if (sessionLost) return;
  if (!sent) {
    waiting();
    return;
  }
  try {
    const next = await lease();
    setOnline(true);
    if (next !== null) lookahead = lookahead.filter((t) => t.assignment !== next.assignment);
    if (next === null) {
      setState("done", "No tasks for you right now", "Everything open has been answered. Check back later: new tasks appear as others finish.", {
        label: "Look again",
        onClick: advance,
      });
      return;
    }
    show(next);
    fillLookahead();
  } catch (error) {
    failed(error);
  }
}

async function fillLookahead() {
  // Only with nothing waiting to be sent: the server hands back live leases the page does not
  // name, and an answered lease stays live there until its answer arrives.
  while (task && online && lookahead.length < MAX_HELD - 1 && outbox.all().length === 0) {
    const holding = [task.assignment, ...lookahead.map((t) => t.assignment)];
    let next;
    try {
      next = await lease(holding);
    } catch {
      return; /* look-ahead is best effort */
    }
    if (next === null || holding.includes(next.assignment) || outbox.has(next.assignment)) return;
    // The task on screen may have been answered meanwhile; `nextTask` takes it from here then.
    if (task?.assignment !== next.assignment && !lookahead.some((t) => t.assignment === next.assignment)) {
      lookahead.push(next);
    }
  }
}

function waiting() {
  const n = outbox.all().length;
  if (!online) {
    setState("offline", "You are offline", `Your ${n === 1 ? "answer is" : `${n} answers are`} kept on this device and will be sent when the connection is back. New tasks will appear then.`);
  } else {
    setState("offline", "Sending your answers…", "The server is busy. Trying again in a few seconds.");
  }
}

function failed(error) {
  if (error instanceof Offline) {
    setOnline(false);
    waiting();
  } else if (error.status === 401 || error.status === 403) {
    sessionExpired();
  } else if (error.code === "project_not_active") {
    setState("paused", "This project is paused", "The manager has paused it. Your answers so far are saved. Come back later.", {
      label: "Look again",
      onClick: advance,
    });
  } else if (error.status >= 500 || error.status === 429) {
    setState("error", "The server is busy", "Trying again in a few seconds…", { label: "Try again now", onClick: advance });
    setTimeout(() => !task && !sessionLost && advance(), 3000);
  } else if (error.status === 404) {
    setState("gone", "You are not a member of this project", "Ask the manager for a new invite link.", { label: "My projects", href: "/" });
  } else {
    setState("error", "Something went wrong", error.message, { label: "Try again", onClick: advance });
  }
}

function sessionExpired() {
  sessionLost = true;
  task = null;
  const n = outbox.all().length;
  const kept = n ? ` Your ${n === 1 ? "answer is" : `${n} answers are`} kept on this device and will be sent after you sign in.` : "";
  setState("session", "Your session has ended", `Sign in again to go on.${kept}`, { label: "Sign in again", href: LOGIN_URL });
}

// --- Progress ---------------------------------------------------------------------------------

async function loadStats() {
  try {
    const stats = await api("GET", `/api/projects/${PROJECT}/stats/me/`);
    today = stats.observations_today;
    renderToday();
    const avg = stats.observations ? stats.seconds_on_device / stats.observations : 0;
    const checks = stats.check_score === null || stats.check_score === undefined
      ? ""
      : ` · ${Math.round(stats.check_score * 100)} % right on check tasks`;
    $("stats-line").textContent = stats.observations
      ? `${stats.observations} answers in all · ${avg.toFixed(1)} s per answer${checks}`
      : "Your first answers: take your time.";
  } catch {
    /* progress is optional; the task is not */
  }
}

// --- Keys (desktop) ---------------------------------------------------------------------------

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
  if (!task) return;
  const k = event.key;
  const many = task.tags.length > 1;
  let handled = true;
  if (/^[0-9]$/.test(k)) setCount(active, Number(k));
  else if (k === "ArrowRight" || k === "+" || k === "=") change(active, +1);
  else if (k === "ArrowLeft" || k === "-") change(active, -1);
  else if (k === "ArrowUp") many ? setActive((active + task.tags.length - 1) % task.tags.length) : change(active, +1);
  else if (k === "ArrowDown") many ? setActive((active + 1) % task.tags.length) : change(active, -1);
  else if (k === "Enter") submit();
  else handled = false;
  if (handled) event.preventDefault();
});

$("submit").addEventListener("click", submit);
window.addEventListener("online", () => {
  setOnline(true);
  retryDelay = 2000;
  if (!task && !sessionLost) advance();
  else flush();
});
window.addEventListener("offline", () => setOnline(false));
setInterval(() => {
  // No task on screen (none left, paused, offline): look again now and then.
  if (!task && !sessionLost && document.visibilityState === "visible") advance();
}, 30000);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") leaseExpired();
});

renderPending();
advance().then(loadStats); // the task first: it is what the annotator waits for
