// What surrounds the task on the annotator page: the state screens (loading, offline, done,
// paused, signed out), the notice, the banner of answers waiting to be sent, the screen reader's
// announcements, and the progress shown in the top bar and the footer.
import { $, el } from "../lib/dom.js";
import { t } from "./text.js";

export function say(text) {
  const live = $("sr-live");
  live.textContent = "";
  requestAnimationFrame(() => {
    live.textContent = text;
  });
}

// `kind`: "task" shows the task; anything else hides it and shows the state screen, with an
// optional action ({label, href} or {label, onClick}).
export function setState(kind, title, text = "", action = null) {
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

export function showNotice(text, action = null) {
  const notice = $("notice");
  notice.hidden = !text;
  notice.textContent = text || "";
  if (action) notice.append(el("button", { type: "button", text: action.label, onclick: action.onClick }));
}

export function showPending(n, online) {
  const pending = $("pending");
  pending.hidden = n === 0;
  pending.textContent = `${online ? "" : t("offline")}${n === 1 ? t("waiting1") : t("waiting", { n })}`;
}

// "Your 2 answers are kept on this device…" for the state screens.
export function kept(n) {
  return n === 1 ? t("kept1") : t("kept", { n });
}

// The footer's line, from the annotator's progress in this project.
// `kinds`: seconds per answer measured on this page, by task kind ({count: {n, seconds}, …}):
// shown per kind once answers of two kinds were timed (a check takes less than a count).
const kindName = (kind) => t(`kind_${kind}`) ?? kind;

export function statsLine({ observations, seconds, checkScore, estimated, kinds = {} }) {
  if (!observations) return t("firstAnswers");
  const timed = Object.entries(kinds).filter(([, k]) => k.n > 0);
  const pace =
    timed.length > 1
      ? timed.map(([kind, k]) => t("perKind", { s: (k.seconds / k.n).toFixed(1), kind: kindName(kind) }))
      : [t("perAnswer", { s: (seconds / observations).toFixed(1) })];
  const parts = [observations === 1 ? t("inAll1") : t("inAll", { n: observations }), ...pace];
  if (checkScore !== null && checkScore !== undefined) parts.push(t(estimated ? "aboutRightOnChecks" : "rightOnChecks", { pct: Math.round(checkScore * 100) }));
  return parts.join(" · ");
}

// Progress: loaded once from the server (`stats/me`), then counted here as answers reach it.
export function createProgress() {
  let stats = null;
  const render = () => {
    $("today").textContent = stats ? String(stats.today) : "–";
    if (stats) $("stats-line").textContent = statsLine(stats);
  };
  return {
    get loaded() {
      return stats !== null;
    },
    load(me) {
      stats = { today: me.observations_today, observations: me.observations, seconds: me.seconds_on_device, checkScore: me.check_score, estimated: me.check_score_estimated, kinds: {} };
      render();
    },
    // An answer the server now has. A replay is an answer whose first response was lost: it
    // was not counted here before either.
    answered(seconds, kind = "count") {
      if (!stats) return;
      stats.today += 1;
      stats.observations += 1;
      stats.seconds += seconds || 0;
      const timed = (stats.kinds[kind] ||= { n: 0, seconds: 0 });
      timed.n += 1;
      timed.seconds += seconds || 0;
      render();
    },
  };
}
