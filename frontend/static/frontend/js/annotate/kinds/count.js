// The count task: "How many NOUNs in the highlight?", one − / + counter per tag asked.
//
// A task kind renders its questions into a box and returns a view:
//   rows       the question elements, each to be seen before the answer is taken
//   answer()   the kind's part of the observation body (here {counts: {tag: n}})
//   activate(i), key(key) → handled?   for pointer and keyboard
import { el } from "../../lib/dom.js";
import { t } from "../text.js";

// Each count is at most the window, and together they cannot exceed it.
export function maxFor(counts, i, maxCount) {
  const others = counts.reduce((sum, c, j) => (j === i ? sum : sum + c), 0);
  return Math.max(0, maxCount - others);
}

function examplesOf(tag) {
  const examples = (tag.examples || []).filter(Boolean);
  return examples.length ? ` ${t("eg")} ${examples.map((e) => `“${e}”`).join(", ")}` : "";
}

function question(tag, i, change) {
  const id = `q${i}`;
  const guide = el("p", { class: "guide" }, tag.guideline || "");
  if (examplesOf(tag)) guide.append(el("span", { class: "eg", text: examplesOf(tag) }));
  const counter = el(
    "div",
    { class: "counter", role: "group", "aria-labelledby": `${id}-h` },
    el("button", { type: "button", class: "dec", text: "−", "aria-label": t("fewer", { tag: tag.name }), onclick: () => change(i, -1) }),
    el("output", { id: `${id}-n`, text: "0", "aria-label": t("countOf", { tag: tag.name }) }),
    el("button", { type: "button", class: "inc", text: "+", "aria-label": t("more", { tag: tag.name }), onclick: () => change(i, +1) }),
  );
  const [before, after] = t("howMany");
  const heading = el("h3", { id: `${id}-h` }, before, el("b", { text: tag.name }), after);
  return el("div", { class: "q", id }, el("div", { class: "text" }, heading, guide), counter);
}

// `say(text)`: announces a change to screen readers.
export function render(task, box, { say }) {
  const counts = task.tags.map(() => 0);
  const many = task.tags.length > 1;
  let active = 0;

  const rows = task.tags.map((tag, i) => question(tag, i, (j, delta) => set(j, counts[j] + delta)));
  rows.forEach((row, i) => row.addEventListener("pointerdown", () => activate(i)));
  box.replaceChildren(...rows);
  box.classList.toggle("single", !many);

  function paint() {
    rows.forEach((row, i) => {
      row.classList.toggle("active", many && i === active);
      row.querySelector("output").textContent = String(counts[i]);
      row.querySelector(".dec").disabled = counts[i] <= 0;
      row.querySelector(".inc").disabled = counts[i] >= maxFor(counts, i, task.max_count);
    });
  }
  function activate(i) {
    active = i;
    paint();
  }
  function set(i, value) {
    const next = Math.min(Math.max(0, value), maxFor(counts, i, task.max_count));
    active = i;
    if (next !== counts[i]) {
      counts[i] = next;
      say(`${next} ${task.tags[i].name}`);
    }
    paint();
  }
  // Up and down move between questions (with one question, they count).
  function key(k) {
    const n = task.tags.length;
    if (/^[0-9]$/.test(k)) set(active, Number(k));
    else if (k === "ArrowRight" || k === "+" || k === "=") set(active, counts[active] + 1);
    else if (k === "ArrowLeft" || k === "-") set(active, counts[active] - 1);
    else if (k === "ArrowUp") many ? activate((active + n - 1) % n) : set(active, counts[active] + 1);
    else if (k === "ArrowDown") many ? activate((active + 1) % n) : set(active, counts[active] - 1);
    else return false;
    if (many && (k === "ArrowUp" || k === "ArrowDown")) rows[active].scrollIntoView({ block: "nearest" });
    return true;
  }
  paint();

  return {
    rows,
    activate,
    key,
    answer: () => ({ counts: Object.fromEntries(task.tags.map((tag, i) => [tag.name, counts[i]])) }),
  };
}
