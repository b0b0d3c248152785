// Private projects (issue 13): each count is randomized on this device before it is kept or sent.
//
// The server sends, with each private task, `privacy.release[N][o]` = P(release o | true count N)
// for the task's window and number of asked tags (the one definition of the mechanism is the
// server's, learning/core/privacy.py). The page draws each asked tag's released value from the
// row of its true count with crypto.getRandomValues, and the answer it keeps in the outbox and
// sends holds only `released` values and the mechanism's parameters: the true counts never leave
// this function.
//
// The page does not take the server's word for the distribution (issue 24): before a private task
// is shown, `releaseProblem` checks it against the task's mechanism and α — a level no higher
// than MAX_ALPHA, rows that are distributions, each released value at most e^(α/m) times likelier
// under one true count than under another (the guarantee itself, m the tags asked), and, for krr
// and geometric, the mechanism's own formula. A server that sent the identity, or any release
// that gives away more than α promises, gets no answer. And in a project the page knows to be
// private, a task without `privacy` (held from before the switch) is never answered, and true
// counts kept from before are deleted unsent (`forgetPlain`). This module loads with the
// first private task, online at lease time, before the task is held: a page that never sees one
// does not carry it (a private project's page preloads it).

import { MESSAGES, t } from "./text.js";

// This module's messages in English, which load with it rather than with every page (the other
// languages have them in their text-xx.js, with the page's).
Object.assign(MESSAGES.en, {
  pMech: "it names an unknown privacy mechanism ({mechanism})",
  pAlpha: "its privacy level α = {alpha} is not between 0 and {max}",
  pNotCount: "it is not a count task",
  pFit: "its release table does not fit the highlighted words",
  pProb: "its release table holds a value that is not a probability",
  pSum: "its release table does not add up to one",
  pAway: "its release table gives your true count away beyond α = {alpha}",
  pNotMech: "its release table is not the {mechanism} mechanism's at α = {alpha}",
  pClassic: "its release table is not the classic mechanism's",
  pCannot: "This task cannot be answered privately: {why}.",
  pNothing: "Nothing was sent.",
  pBefore: "This task was given out before the project became private, so it cannot be answered.",
  pCounts: "A private project takes counts only.",
  pChanged: "This project's privacy setting has changed. Reload the page to go on.",
  pNow: "This project is now private: {what} deleted from this phone without being sent.",
  pGone1: "1 answer given before the change was",
  pGone: "{n} answers given before the change were",
});

// The highest level a project may choose (learning/core/privacy.py, MAX_ALPHA; a test keeps the
// two equal): above it a release is almost always the true count.
export const MAX_ALPHA = 8;
export const MECHANISMS = ["geometric", "krr", "classic"];
const TOLERANCE = 1e-9; // the server's floats come through JSON exactly; only arithmetic differs

export class PrivacyError extends Error {
  name = "PrivacyError";
}

// A uniform number in [0, 1) with 53 random bits from the browser's cryptographic generator.
export function cryptoUniform() {
  const words = crypto.getRandomValues(new Uint32Array(2));
  return (words[0] * 2 ** 21 + (words[1] >>> 11)) / 2 ** 53;
}

// The value o drawn from `distribution` (probabilities of 0, 1, …) by the inverse of its
// cumulative sum at `u` in [0, 1); the last value with mass takes what rounding leaves.
export function sample(distribution, u) {
  let total = 0;
  let last = 0;
  for (let o = 0; o < distribution.length; o++) {
    if (distribution[o] <= 0) continue;
    last = o;
    total += distribution[o];
    if (u < total) return o;
  }
  return last;
}

// The release distribution the server computes for these (learning/core/privacy.py, _channel),
// `expected[N][o]` for a window of `w` tokens at level `a` per asked tag; null for classic, whose
// distribution depends on the tag set's size (its form and the bound are checked instead).
function expectedRelease(mechanism, a, w) {
  const rows = [];
  for (let n = 0; n <= w; n++) {
    const row = [];
    for (let o = 0; o <= w; o++) {
      if (mechanism === "krr") row.push((o === n ? Math.exp(a) : 1) / (Math.exp(a) + w));
      else if (mechanism === "geometric") {
        const lam = Math.exp(-a / Math.max(w, 1));
        if (o === 0) row.push(lam ** n / (1 + lam));
        else if (o === w) row.push(lam ** (w - n) / (1 + lam));
        else row.push(((1 - lam) / (1 + lam)) * lam ** Math.abs(o - n));
      } else return null;
    }
    rows.push(row);
  }
  return rows;
}

const close = (x, y) => Math.abs(x - y) <= TOLERANCE * Math.max(1, Math.abs(x), Math.abs(y));

// Why the private task `task` must not be answered, in words for the annotator; null when its
// `privacy` holds what its mechanism and α promise. A task without `privacy` has nothing to check.
export function releaseProblem(task) {
  const privacy = task.privacy;
  if (!privacy) return null;
  const { mechanism, alpha, release } = privacy;
  if (!MECHANISMS.includes(mechanism)) return t("pMech", { mechanism });
  if (typeof alpha !== "number" || !(alpha > 0) || alpha > MAX_ALPHA)
    return t("pAlpha", { alpha, max: MAX_ALPHA });
  const w = task.window?.length;
  const asked = task.tags?.length;
  if (!Number.isInteger(w) || !Number.isInteger(asked) || asked < 1) return t("pNotCount");
  const size = w + 1;
  if (!Array.isArray(release) || release.length !== size || release.some((row) => !Array.isArray(row) || row.length !== size))
    return t("pFit");
  for (const row of release) {
    if (row.some((p) => typeof p !== "number" || !Number.isFinite(p) || p < 0)) return t("pProb");
    if (!close(row.reduce((sum, p) => sum + p, 0), 1)) return t("pSum");
  }
  // The guarantee: any released value o is at most e^(α/m) times likelier from one true count
  // than from another (a value impossible from one count and possible from another is unbounded).
  const bound = Math.exp(alpha / asked) * (1 + TOLERANCE);
  for (let o = 0; o < size; o++) {
    const column = release.map((row) => row[o]);
    const most = Math.max(...column);
    if (most > 0 && most > bound * Math.min(...column)) return t("pAway", { alpha });
  }
  const expected = expectedRelease(mechanism, alpha / asked, w);
  if (expected) {
    if (!release.every((row, n) => row.every((p, o) => close(p, expected[n][o])))) return t("pNotMech", { mechanism, alpha });
  } else {
    // classic: the true value with some probability, else a draw that ignores the true count.
    for (let o = 0; o < size; o++) {
      const others = release.filter((_, n) => n !== o).map((row) => row[o]);
      if (others.some((p) => !close(p, others[0]))) return t("pClassic");
    }
  }
  return null;
}

// The answer `{counts}` of a task as it may leave the page: unchanged for a project that is not
// private; else `{released, privacy}`, each count replaced by a draw from its release row.
// `projectPrivate`: the page knows the project to be private. Throws a PrivacyError, and nothing
// leaves, when the project is private and the task has no `privacy` (leased before the switch) or
// a `privacy` that fails `releaseProblem`.
export function privatize(task, answer, { projectPrivate = false, uniform = cryptoUniform } = {}) {
  if (!task.privacy) {
    if (projectPrivate) throw new PrivacyError(t("pBefore"));
    return answer;
  }
  const problem = releaseProblem(task);
  if (problem) throw new PrivacyError(t("pCannot", { why: problem }));
  if (!answer.counts) throw new PrivacyError(t("pCounts"));
  const { release, mechanism, alpha } = task.privacy;
  const released = {};
  for (const [name, n] of Object.entries(answer.counts)) released[name] = sample(release[n], uniform());
  return { released, privacy: { mechanism, alpha } };
}

// Whether the page may show the leased task `next` in a project it knows to be private
// (`projectPrivate`) or not; throws a PrivacyError saying why not.
export function admit(next, projectPrivate) {
  if (!next.privacy && projectPrivate) throw new PrivacyError(t("pChanged"));
  const problem = releaseProblem(next);
  if (problem) throw new PrivacyError(`${t("pCannot", { why: problem })} ${t("pNothing")}`);
}

// The project is private: deletes, unsent, the answers of `project` kept with true counts from
// before, and drops the tasks `lookahead` holds from before. Returns what to tell the annotator
// ("" when nothing was deleted).
export function forgetPlain({ outbox, lookahead = null, project }) {
  const deleted = outbox.discard((item) => item.project === project && !item.released);
  lookahead?.discard((held) => !held.privacy);
  if (!deleted) return "";
  return t("pNow", { what: deleted === 1 ? t("pGone1") : t("pGone", { n: deleted }) });
}
