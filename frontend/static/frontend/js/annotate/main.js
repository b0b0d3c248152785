// Tally annotator page: one task at a time, answered by taps or keys.
//
// The pieces: the outbox keeps every answer on the device until the server has it (outbox.js);
// tasks are leased ahead so the next one shows at once (lookahead.js); a task is shown by its
// kind (kinds/); Submit takes the answer only once every question has been on screen (reach.js);
// in a private project each count is randomized before anything keeps it (privacy.js); the tasks
// held are kept on the device and a service worker serves the page without a connection, so a
// reload offline goes on with them (shelf.js). The page is its signed-in account's and session's
// only: when the browser is signed out, or signed in as someone else, it shows no task, keeps no
// answer and forgets the tasks it held (lib/device.js; docs/decisions/045-shared-phone.md).
import { ApiError, api, serverNow } from "../lib/http.js";
import { forget, heldKeys, signedIn } from "../lib/device.js";
import { $ } from "../lib/dom.js";
import { kindOf, loadKind } from "./kinds/index.js";
import { createLookahead } from "./lookahead.js";
import { createOutbox, createSender, newKey } from "./outbox.js";
import { createReach } from "./reach.js";
import { createProgress, kept, say, setState, showNotice, showPending } from "./screen.js";
import { renderSentence } from "./sentence.js";
import { createShelf, keepForOffline } from "./shelf.js";
import { setLanguage, t } from "./text.js";

const app = $("app");
await setLanguage(document.documentElement.lang);
const PROJECT = Number(app.dataset.project);
const LOGIN_URL = app.dataset.login;
const MAX_HELD = Number(app.dataset.maxLeases) || 3; // the server's cap on live leases
const USER = app.dataset.user;
const SESSION = app.dataset.session; // the session this page was rendered for

// True while the browser is still signed in as the session this page was rendered for (a page
// served by the service worker may be older than a sign-out, or than someone else's sign-in).
function isMine() {
  const now = signedIn();
  return now !== null && now.user === USER && now.session === SESSION;
}

let storage = null;
try {
  storage = window.localStorage;
} catch {
  /* no storage in some private modes: the outbox keeps answers in memory */
}
const outbox = createOutbox(storage, `tally.outbox.${USER}`);
const shelf = createShelf(storage, `tally.held.${USER}.${PROJECT}`);
const progress = createProgress();
let online = navigator.onLine !== false;
let signedOut = false;

// --- Privacy (privacy.js, loaded with the first private task, says why) -----------------------

let projectPrivate = app.dataset.private === "1"; // or since a task came with `privacy`
let privacy = projectPrivate ? await import("./privacy.js") : null;
let privacyNote = projectPrivate ? privacy.forgetPlain({ outbox, project: PROJECT }) : "";

function showPrivacyNote() {
  showNotice(privacyNote, privacyNote ? { label: t("ok"), onClick: () => showNotice((privacyNote = "")) } : null);
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
  button.textContent = unseen > 0 ? (unseen === 1 ? t("moreQuestions1") : t("moreQuestions", { n: unseen })) : t("submit");
}

// The tasks held (on screen first), kept for a reload without a connection.
function shelve(ahead = lookahead.tasks) {
  if (!isMine()) return;
  shelf.save(task ? [task, ...ahead] : ahead);
}

function show(next) {
  if (!isMine()) return sessionExpired();
  reach?.stop();
  task = next;
  shelve();
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
  say(t("sayNew", { words: highlighted }));
}

function leaseExpired() {
  if (!task || performance.now() < deadline) return;
  showNotice(t("timeUp"), {
    label: t("newTask"),
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
  if (!isMine()) return sessionExpired(); // never kept as the account the page was for
  outbox.add({
    project: PROJECT,
    assignment: task.assignment,
    kind: task.kind || "count",
    ...answer,
    seconds_on_device: Math.round((performance.now() - shownAt) / 100) / 10,
    idempotency_key: newKey(),
    device_user: Number(USER), // the server stores it for this account only
    device_session: SESSION, // kept on the device, not sent
  });
  $("kind-dock").replaceChildren();
  showPending(outbox.size(), online);
  say(t("saySaved"));
  task = null;
  shelve();
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
  if (!isMine()) throw new ApiError(401, null);
  const holding = item.project === PROJECT && outbox.size() === 1 && lookahead.holdingForNext(task);
  const reply = await api("POST", "/api/observations/", holding ? { ...body, next: { holding } } : body);
  const next = reply?.next;
  if (next) await loadKind(next).then(() => lookahead.offer(next, { current: task, isAnswered: answered }), () => {});
  return reply;
}
const answered = (assignment) => outbox.has(assignment);

const sender = createSender({
  outbox,
  owner: USER,
  post: postAnswer,
  on: {
    reached: () => setOnline(true),
    offline: () => setOnline(false),
    sent: (item) => item.project === PROJECT && progress.answered(item.seconds_on_device, item.kind),
    refused: (item, error) => showNotice(t("refused", { why: error.message })),
    signedOut: () => sessionExpired(),
    changed: () => showPending(outbox.size(), online),
    retried: () => !task && advance(),
  },
});

// --- Getting tasks ----------------------------------------------------------------------------

// A leased task's kind is loaded with it, while the page is online.
async function lease(holding) {
  if (!isMine()) throw new ApiError(401, null);
  const next = await api("POST", `/api/projects/${PROJECT}/tasks/next/`, holding ? { holding } : undefined);
  if (next) {
    await checkPrivacy(next);
    await loadKind(next);
  }
  return next;
}
const lookahead = createLookahead({ lease, maxHeld: MAX_HELD, onChange: (ahead) => shelve(ahead) });

// The tasks held when the page was last closed, whose kinds this page can show (loaded from the
// service worker's copy when offline).
async function restoreHeld() {
  const held = [];
  for (const kept of shelf.load({ now: serverNow(), isAnswered: (assignment) => outbox.has(assignment) })) {
    try {
      await checkPrivacy(kept); // a task leased before the project became private is not kept
      await loadKind(kept);
      held.push(kept);
    } catch {
      /* refused, or its kind's module is not on this device: the server gives the lease back later */
    }
  }
  lookahead.restore(held);
}

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
  setState("loading", t("loading"));
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
      setState("done", ...t("none"), { label: t("look"), onClick: advance });
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
    setState("offline", t("off"), n ? t("offKept", { kept: kept(n) }) : t("offNone"));
  } else {
    setState("offline", ...t("sending"));
  }
}

function failed(error) {
  if (error.name === "PrivacyError") {
    setState("error", t("notShown"), error.message, { label: t("reload"), onClick: () => window.location.reload() });
  } else if (error.status === 0) {
    setOnline(false);
    waiting();
  } else if (error.status === 401 || error.status === 403) {
    sessionExpired();
  } else if (error.code === "project_not_active") {
    setState("paused", ...t("paused"), { label: t("look"), onClick: advance });
  } else if (error.status >= 500 || error.status === 429) {
    setState("error", ...t("busy"), { label: t("tryNow"), onClick: advance });
    setTimeout(() => !task && !signedOut && advance(), 3000);
  } else if (error.status === 404) {
    setState("gone", ...t("notMember"), { label: t("mine"), href: "/" });
  } else {
    setState("error", t("wrong"), error.message, { label: t("tryAgain"), onClick: advance });
  }
}

function sessionExpired() {
  signedOut = true;
  sender.stop();
  task = null;
  clearTimeout(expiryTimer);
  $("kind-dock").replaceChildren();
  if (!isMine()) {
    forget(storage, heldKeys(storage, USER)); // their leases go back to the others in time
    const now = signedIn();
    if (now !== null) {
      const why = now.user === USER ? "newSession" : "otherSignIn"; // signed in again, or as another
      setState("session", ...t(why), { label: t("reload"), onClick: () => window.location.reload() });
      return;
    }
  }
  const n = outbox.size();
  const note = n ? ` ${t("signInKept", { kept: kept(n) })}` : "";
  setState("session", t("ended"), t("signIn") + note, { label: t("signInAgain"), href: LOGIN_URL });
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
// Signed out (or someone else signed in) in another tab: this page stops at once.
const sessionChanged = () => !signedOut && !isMine() && sessionExpired();
window.cookieStore?.addEventListener("change", sessionChanged);
window.addEventListener("focus", sessionChanged);

if (isMine()) {
  forget(storage, heldKeys(storage, USER, { others: true })); // another account's, left behind
  showPending(outbox.size(), online);
  restoreHeld()
    .then(advance)
    .then(loadStats) // the task first: it is what the annotator waits for
    .then(() => keepForOffline(app.dataset.worker));
} else {
  sessionExpired(); // a copy of the page from before a sign-out, or of another account's
}
