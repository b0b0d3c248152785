// The live model: the update it is at, and its progressive-validation curve — each update's
// count error on its answers under the model before it learned from them.
import { $, svg } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { empty } from "./ui.js";
import { niceTicks, xDomain, yDomain } from "./curve.js";

export function liveText(live) {
  if (!live || !live.number) return "The live model appears with the first answers after a retrain.";
  return `Live model: version ${live.base_version} + ${fmt.format(live.answers_applied)} answers in ${fmt.format(live.number)} updates`;
}

export function renderLive(live) {
  const box = $("live-curve");
  if (!box) return;
  $("live-status").textContent = liveText(live);
  const data = ((live && live.progressive) || []).filter((p) => p.count_error !== null && p.count_error !== undefined);
  if (!data.length) {
    box.replaceChildren(empty("No update yet."));
    return;
  }
  const W = Math.max(300, Math.round(box.clientWidth) || 640);
  const H = 200;
  const L = 48, R = 30, T = 14, B = 40, INSET = 8;
  const [xLo, xHi] = xDomain(data.map((p) => p.answers));
  const [yLo, yHi] = yDomain(data.map((p) => p.count_error), false);
  const x = (v) => L + INSET + ((W - L - R - 2 * INSET) * (v - xLo)) / (xHi - xLo);
  const y = (v) => T + ((H - T - B) * (yHi - v)) / (yHi - yLo);
  const last = data[data.length - 1];
  const summary = `count error before each update, ${data.length} updates; latest ${last.count_error.toFixed(3)}`;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary });
  for (const t of niceTicks(yLo, yHi)) {
    chart.append(svg("line", { class: "grid-line", x1: L, x2: W - R, y1: y(t), y2: y(t) }));
    chart.append(svg("text", { class: "y-tick", x: L - 8, y: y(t) + 4, "text-anchor": "end" }, t.toFixed(2)));
  }
  chart.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  chart.append(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  chart.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "answers since the retrain · count error before the update"));
  chart.append(svg("polyline", { class: "series", points: data.map((p) => `${x(p.answers)},${y(p.count_error)}`).join(" ") }));
  for (const p of data) {
    const dot = svg("circle", { class: "dot", cx: x(p.answers), cy: y(p.count_error), r: 3 });
    dot.append(svg("title", {}, `${fmt.format(p.answers)} answers: ${p.count_error.toFixed(3)}`));
    chart.append(dot);
  }
  box.replaceChildren(chart);
}
