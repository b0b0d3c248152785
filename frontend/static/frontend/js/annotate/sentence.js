// The sentence of a task with its window highlighted. Until the annotator taps "…", only the
// window and a few words on each side are shown, so that the questions below fit on a phone
// screen beside even the longest sentences.
//
// Words are shown as written: where the corpus splits a written word into the words that carry
// the tags (a CoNLL-U multiword token, French "au" = "à" + "le"), the written form is shown and a
// note under the sentence says how it counts. A written word that the window's edge cuts is shown
// as its words, so that the highlight covers exactly the words counted.
import { el } from "../lib/dom.js";
import { t } from "./text.js";

export const AROUND = 6; // words shown on each side of the window while collapsed

// The slice of tokens shown: [from, to).
export function shownRange(nTokens, { start, length }, whole) {
  if (whole) return [0, nTokens];
  return [Math.max(0, start - AROUND), Math.min(nTokens, start + length + AROUND)];
}

// The sentence as read: pieces {from, to, text, parts} in order, `parts` the words of a written
// word made of several (else null). `multiword`: [start, length, form] each (the task's).
export function writtenPieces(tokens, { start, length }, multiword = []) {
  const end = start + length;
  const joined = new Map((multiword || []).map(([first, n, form]) => [first, { n, form }]));
  const pieces = [];
  for (let i = 0; i < tokens.length; ) {
    const group = joined.get(i);
    const to = group ? i + group.n : i + 1;
    const cut = group && ((i < start && to > start) || (i < end && to > end));
    if (group && !cut && to <= tokens.length) {
      pieces.push({ from: i, to, text: group.form, parts: tokens.slice(i, to) });
      i = to;
    } else {
      pieces.push({ from: i, to: i + 1, text: tokens[i], parts: null });
      i += 1;
    }
  }
  return pieces;
}

// How each written word of the window counts: "au = à + le: 2 words to count".
export function countingNotes(pieces, { start, length }) {
  return pieces
    .filter((p) => p.parts && p.from >= start && p.to <= start + length)
    .map((p) => t("counts", { written: p.text, parts: p.parts.join(" + "), n: p.parts.length }));
}

// Renders into `box`; `onResize()` is called after the sentence grew to its whole length.
export function renderSentence(box, task, { whole = false, onResize = () => {} } = {}) {
  const { start, length } = task.window;
  const end = start + length;
  const tokens = task.tokens;
  const [from, to] = shownRange(tokens.length, task.window, whole);
  const pieces = writtenPieces(tokens, task.window, task.multiword);
  const shown = pieces.filter((p) => p.to > from && p.from < to);
  const more = () =>
    el("button", {
      type: "button",
      class: "more-words",
      "aria-label": "Show the whole sentence",
      text: "…",
      onclick: () => {
        renderSentence(box, task, { whole: true, onResize });
        onResize();
      },
    });
  const words = (a, b) =>
    shown
      .filter((p) => p.from >= a && p.to <= b)
      .map((p) => p.text)
      .join(" ");
  const first = shown.length ? shown[0].from : from;
  const last = shown.length ? shown[shown.length - 1].to : to;
  box.replaceChildren();
  if (first > 0) box.append(more(), " ");
  box.append(words(first, start), start > first ? " " : "");
  box.append(
    el("span", { class: "sr-only", text: "Highlighted: " }),
    el("mark", { text: words(start, end) }),
    el("span", { class: "sr-only", text: " (end of highlight)" }),
  );
  box.append(end < last ? " " : "", words(end, last));
  if (last < tokens.length) box.append(" ", more());
  const notes = countingNotes(pieces, task.window);
  if (notes.length) box.append(el("span", { class: "written-note", text: notes.join(" · ") }));
}
