// The sentence of a task with its window highlighted. Until the annotator taps "…", only the
// window and a few words on each side are shown, so that the questions below fit on a phone
// screen beside even the longest sentences.
import { el } from "../lib/dom.js";

export const AROUND = 6; // words shown on each side of the window while collapsed

// The slice of tokens shown: [from, to).
export function shownRange(nTokens, { start, length }, whole) {
  if (whole) return [0, nTokens];
  return [Math.max(0, start - AROUND), Math.min(nTokens, start + length + AROUND)];
}

// Renders into `box`; `onResize()` is called after the sentence grew to its whole length.
export function renderSentence(box, task, { whole = false, onResize = () => {} } = {}) {
  const { start, length } = task.window;
  const tokens = task.tokens;
  const [from, to] = shownRange(tokens.length, task.window, whole);
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
  const words = (a, b) => tokens.slice(a, b).join(" ");
  box.replaceChildren();
  if (from > 0) box.append(more(), " ");
  box.append(words(from, start), start > from ? " " : "");
  box.append(
    el("span", { class: "sr-only", text: "Highlighted: " }),
    el("mark", { text: words(start, start + length) }),
    el("span", { class: "sr-only", text: " (end of highlight)" }),
  );
  box.append(start + length < to ? " " : "", words(start + length, to));
  if (to < tokens.length) box.append(" ", more());
}
