// Tally annotator page: one task at a time, answered by taps or keys.
//
// The pieces: the outbox keeps every answer on the device until the server has it (outbox.js);
// tasks are leased ahead so the next one shows at once (lookahead.js); a task is shown by its
// kind (kinds/); Submit takes the answer only once every question has been on screen (reach.js);
// in a private project each count is randomized before anything keeps it (privacy.js).
import { api, serverNow } from "../lib/http.js";
import { $ } from "../lib/dom.js";
import { kindOf, loadKind } from "./kinds/index.js";
import { createLookahead } from "./lookahead.js";
import { createOutbox, createSender, newKey } from "./outbox.js";
import { createReach } from "./reach.js";
import { createProgress, kept, say, setState, showNotice, showPending } from "./screen.js";
import { renderSentence } from "./sentence.js";

const app = $("app");
const PROJECT = Number(app.dataset.project);
const LOGIN_URL = app.dataset.login;
const MAX_HELD = Number(app.dataset.maxLeases) || 3; // the server's cap on live leases

let storage = null;
try {
  storage = window.localStorage;
} catch {
  /* no storage in some private modes: the outbox keeps answers in memory */
}
const outbox = createOutbox(storage, `tally.outbox.${app.dataset.user}`);
const progress = createProgress();
let online = navigator.onLine !== false;
let signedOut = false;

// --- Privacy (privacy.js, loaded with the first private task, says why) -----------------------

let projectPrivate = app.dataset.private === "1"; // or since a task came with `privacy`
let privacy = projectPrivate ? await import("./privacy.js") : null;
let privacyNote = projectPrivate ? privacy.forgetPlain({ outbox, project: PROJECT }) : "";

function showPrivacyNote() {
  showNotice(privacyNote, privacyNote ? { label: "OK", onClick: () => showNotice((privacyNote = "")) } : null);
}

async function checkPrivacy(next) {
  if (!next.privacy && !projectPrivate) return;
  privacy ??= await import("./privacy.js");
  privacy.admit(next, projectPrivate);
  if (projectPrivate) return;
  projectPrivate = true;
  privacyNote = privacy.forgetPlain({ outbox, lookahead, project: PROJECT });
  if (task && !task.privacy) {
    task = null;
    clearTimeout(expiryTimer);
    setTimeout(() => !task && advance(), 0);
  }
  showPrivacyNote();
  showPending(outbox.size(), online);
}

// --- The task on screen -----------------------------------------------------------------------

let task = null; // the task on screen
let view = null; // its kind's view: rows, answer(), key()
let reach = null; // which of its questions have been seen
let shownAt = 0;
let deadline = 0; // performance.now() at which its lease expires
let expiryTimer = 0;

// The part of the screen that the sticky top bar and dock leave free.
function band() {
  const top = document.querySelector(".bar").getBoundingClientRect().bottom;
  const dock = document.querySelector(".dock").getBoundingClientRect().top;
  return { top: Math.max(0, top), bottom: Math.min(window.innerHeight, dock) };
}

function labelSubmit(unseen) {
  const button = $("submit");
  button.classList.toggle("more", unseen > 0);
  button.textContent = unseen > 0 ? `${unseen} more ${unseen === 1 ? "question" : "questions"} ↓` : "Submit";
}

function show(next) {
  reach?.stop();
  task = next;
  $("task").dataset.assignment = String(next.assignment);
  shownAt = performance.now();
  const expires = Date.parse(next.expires_at) - serverNow();
  deadline = shownAt + expires;
  clearTimeout(expiryTimer);
  expiryTimer = setTimeout(leaseExpired, Math.max(0, expires));
  showPrivacyNote();
  setState("task", "");
  window.scrollTo(0, 0);
  renderSentence($("sentence"), next, { onResize: () => reach?.check() });
  view = kindOf(next).render(next, $("questions"), { say, send: keep, dock: $("kind-dock") });
  // A kind that answers by its own buttons (verification: Yes / No) shows them in the dock.
  $("submit").hidden = Boolean(view.ownsAnswer);
  $("kind-dock").hidden = !view.ownsAnswer;
  reach = createReach({ rows: view.rows, band, onChange: labelSubmit });
  const highlighted = next.tokens.slice(next.window.start, next.window.start + next.window.length).join(" ");
  say(`New task. Highlighted: ${highlighted}`);
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

function submit() {
  if (!task || signedOut) return;
  if (reach.unseen > 0) {
    const i = reach.reveal();
    if (i >= 0) view.activate(i);
    return;
  }
  let answer = view.answer();
  try {
    if (task.privacy || projectPrivate) answer = privacy.privatize(task, answer, { projectPrivate });
  } catch (error) {
    if (error.name !== "PrivacyError") throw error;
    showNotice(error.message);
    task = null; // this task is dropped unanswered
    clearTimeout(expiryTimer);
    advance();
    return;
  }
  keep(answer);
}

// The answer to the task on screen (the kind's part of the body), kept on the device before
// anything is sent; then the next task.
function keep(answer) {
  if (!task || signedOut) return;
  outbox.add({
    project: PROJECT,
    assignment: task.assignment,
    kind: task.kind || "count",
    ...answer,
    seconds_on_device: Math.round((performance.now() - shownAt) / 100) / 10,
    idempotency_key: newKey(),
  });
  $("kind-dock").replaceChildren();
  showPending(outbox.size(), online);
  say("Answer saved.");
  task = null;
  clearTimeout(expiryTimer);
  advance();
}

// --- Sending ----------------------------------------------------------------------------------

function setOnline(value) {
  if (online === value) return;
  online = value;
  showPending(outbox.size(), online);
}

// The last answer waiting asks for the next task: one round trip per answer.
async function postAnswer(body, item) {
  const holding = item.project === PROJECT && outbox.size() === 1 && lookahead.holdingForNext(task);
  const reply = await api("POST", "/api/observations/", holding ? { ...body, next: { holding } } : body);
  const next = reply?.next;
  if (next) await loadKind(next).then(() => lookahead.offer(next, { current: task, isAnswered: answered }), () => {});
  return reply;
}
const answered = (assignment) => outbox.has(assignment);

const sender = createSender({
  outbox,
  post: postAnswer,
  on: {
    reached: () => setOnline(true),
    offline: () => setOnline(false),
    sent: (item) => item.project === PROJECT && progress.answered(item.seconds_on_device, item.kind),
    refused: (item, error) => showNotice(`One answer could not be saved: ${error.message}`),
    signedOut: () => sessionExpired(),
    changed: () => showPending(outbox.size(), online),
    retried: () => !task && advance(),
  },
});

// --- Getting tasks ----------------------------------------------------------------------------

// A leased task's kind is loaded with it, while the page is online.
async function lease(holding) {
  const next = await api("POST", `/api/projects/${PROJECT}/tasks/next/`, holding ? { holding } : undefined);
  if (next) {
    await checkPrivacy(next);
    await loadKind(next);
  }
  return next;
}
const lookahead = createLookahead({ lease, maxHeld: MAX_HELD });

function fillLookahead() {
  return lookahead.fill({
    current: () => task,
    canLease: () => online && outbox.size() === 0,
    isAnswered: answered,
  });
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
  if (lookahead.size) {
    show(lookahead.take());
    sender.flush().then(fillLookahead);
    return;
  }
  setState("loading", "Loading your next task…");
  const sent = await sender.flush();
  if (signedOut) return;
  if (!sent) {
    waiting();
    return;
  }
  if (lookahead.size) return nextTask(); // the answer brought it
  try {
    const next = await lease();
    setOnline(true);
    if (next === null) {
      setState("done", "No tasks for you right now", "Everything open has been answered. Check back later: new tasks appear as others finish.", {
        label: "Look again",
        onClick: advance,
      });
      return;
    }
    lookahead.forget(next.assignment);
    show(next);
    fillLookahead();
  } catch (error) {
    failed(error);
  }
}

function waiting() {
  const n = outbox.size();
  if (!online) {
    const text = n ? `${kept(n)} and will be sent when the connection is back. New tasks will appear then.` : "New tasks will appear when the connection is back.";
    setState("offline", "You are offline", text);
  } else {
    setState("offline", "Sending your answers…", "The server is busy. Trying again in a few seconds.");
  }
}

function failed(error) {
  if (error.name === "PrivacyError") {
    setState("error", "This task was not shown", error.message, { label: "Reload", onClick: () => window.location.reload() });
  } else if (error.status === 0) {
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
    setTimeout(() => !task && !signedOut && advance(), 3000);
  } else if (error.status === 404) {
    setState("gone", "You are not a member of this project", "Ask the manager for a new invite link.", { label: "My projects", href: "/" });
  } else {
    setState("error", "Something went wrong", error.message, { label: "Try again", onClick: advance });
  }
}

function sessionExpired() {
  signedOut = true;
  sender.stop();
  task = null;
  const n = outbox.size();
  const note = n ? ` ${kept(n)} and will be sent after you sign in.` : "";
  setState("session", "Your session has ended", `Sign in again to go on.${note}`, { label: "Sign in again", href: LOGIN_URL });
}

async function loadStats() {
  try {
    progress.load(await api("GET", `/api/projects/${PROJECT}/stats/me/`));
  } catch {
    /* progress is optional; the task is not */
  }
}

// --- Events -----------------------------------------------------------------------------------

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
  if (!task) return;
  const handled = event.key === "Enter" && !view.ownsAnswer ? (submit(), true) : view.key(event.key);
  if (handled) event.preventDefault();
});

$("submit").addEventListener("click", submit);
window.addEventListener("online", () => {
  setOnline(true);
  sender.online();
  if (!task && !signedOut) advance();
});
window.addEventListener("offline", () => setOnline(false));
setInterval(() => {
  // No task on screen (none left, paused, offline): look again now and then.
  if (!task && !signedOut && document.visibilityState === "visible") advance();
}, 30000);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") leaseExpired();
});

showPending(outbox.size(), online);
advance().then(loadStats); // the task first: it is what the annotator waits for
