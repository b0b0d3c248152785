// The verification task: the highlighted words with the tag the model shows under each, and one
// question, "Are all of these tags right?": Yes / No in the dock, in thumb reach. After No,
// optionally "Which is the first wrong word?": tap it, or Skip. The first, because that is what
// the answer means to the learning side and to the gold checks (learning/core/verification.py:
// the words before it are right); after a No on a single word, that word is the wrong one. Tapping a tag before answering shows
// its one-line guideline.
//
// Besides a kind's view (count.js), this one answers by itself: `send(part)` is called with the
// kind's part of the observation body ({answer: true} or {answer: false, wrong: i | null}), and
// `dock` is the element its buttons go in (the page hides its Submit for it).
import { el } from "../../lib/dom.js";
import { t } from "../text.js";

// The body of an answer: Yes, or No with the position in the window of the word tapped (or null).
export function verificationAnswer(yes, wrong = null) {
  return yes ? { answer: true } : { answer: false, wrong };
}

function guidelineOf(tag) {
  if (!tag) return "";
  const examples = (tag.examples || []).filter(Boolean);
  const eg = examples.length ? ` ${t("eg")} ${examples.map((e) => `“${e}”`).join(", ")}` : "";
  return `${tag.name}: ${tag.guideline || ""}${eg}`;
}

export function render(task, box, { say, send, dock }) {
  const byName = Object.fromEntries(task.tags.map((tag) => [tag.name, tag]));
  const { start, length } = task.window;
  const words = task.tokens.slice(start, start + length);
  let asking = true; // false once No was tapped: which is the first wrong word?

  const heading = el("h3", { id: "q0-h", text: t("allRight") });
  const guide = el("p", { class: "guide", id: "q0-guide", "aria-live": "polite" }, t("tapTag"));
  const cells = words.map((word, i) =>
    el(
      "button",
      { type: "button", class: "vw", "data-i": String(i), "aria-describedby": "q0-guide", onclick: () => tap(i) },
      el("span", { class: "word", text: word }),
      el("span", { class: "vtag", text: task.shown[i] }),
    ),
  );
  const strip = el("div", { class: "vstrip", role: "group", "aria-labelledby": "q0-h" }, ...cells);
  const row = el("div", { class: "q verify", id: "q0" }, heading, strip, guide);
  box.replaceChildren(row);
  box.classList.remove("single");

  const yes = el("button", { type: "button", class: "choice-yes", id: "answer-yes", text: t("yes"), onclick: () => answer(true) });
  const no = el("button", { type: "button", class: "choice-no", id: "answer-no", text: t("no"), onclick: () => answer(false) });
  const skip = el("button", { type: "button", class: "choice-skip", id: "answer-skip", text: t("skip"), onclick: () => send(verificationAnswer(false, null)) });
  dock.replaceChildren(yes, no);

  function answer(isYes) {
    if (!asking) return;
    if (isYes) return send(verificationAnswer(true));
    if (words.length === 1) return send(verificationAnswer(false, 0));
    asking = false;
    row.classList.add("which");
    heading.textContent = t("firstWrong");
    guide.textContent = t("tapFirstWrong");
    cells.forEach((cell) => cell.setAttribute("aria-label", t("firstWrongLabel", { word: cell.textContent })));
    dock.replaceChildren(skip);
    say(`${t("firstWrong")} ${t("tapFirstWrong")}`);
  }
  function tap(i) {
    if (!asking) return send(verificationAnswer(false, i));
    cells.forEach((cell, j) => cell.classList.toggle("active", j === i));
    guide.textContent = guidelineOf(byName[task.shown[i]]);
  }
  // y / n answer; after No, 1–9 name the word and s (or Escape) skips.
  function key(k) {
    if (asking && (k === "y" || k === "Y")) answer(true);
    else if (asking && (k === "n" || k === "N")) answer(false);
    else if (!asking && /^[1-9]$/.test(k) && Number(k) <= words.length) send(verificationAnswer(false, Number(k) - 1));
    else if (!asking && (k === "s" || k === "S" || k === "Escape")) send(verificationAnswer(false, null));
    else return false;
    return true;
  }

  return {
    rows: [row],
    activate: () => {},
    key,
    answer: () => null, // answered by its own buttons (`send`)
    ownsAnswer: true,
  };
}
