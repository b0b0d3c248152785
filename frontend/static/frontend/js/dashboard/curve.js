// The learning curve: test accuracy (or, without evaluation sentences, count error) of each
// model version against the number of answers it learned from, and the forecast's points (hollow,
// with their intervals) for more answers.
import { $, svg } from "../lib/dom.js";
import { fmt, pct } from "../lib/format.js";
import { empty } from "./ui.js";

// Round tick values (1, 2 or 5 times a power of ten) within lo..hi: the finest step that gives
// at most n + 1 of them, and never fewer than two.
export function niceTicks(lo, hi, n = 4) {
  const within = (step) => {
    const ticks = [];
    for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k++) ticks.push(Number((k * step).toFixed(10)));
    return ticks;
  };
  let power = 10 ** Math.floor(Math.log10((hi - lo) / (n + 1) || Math.abs(hi) || 1));
  let previous = null;
  for (;;) {
    for (const m of [1, 2, 5]) {
      const ticks = within(m * power);
      if (ticks.length <= n + 1) return ticks.length >= 2 || !previous ? ticks : previous;
      previous = ticks;
    }
    power *= 10;
  }
}

// The x axis spans the versions' answers, from the first version's to the last one's (not from
// 0, which crowds the points at the right once a project has many answers); a single version
// sits in the middle.
export function xDomain(values) {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (hi > lo) return [lo, hi];
  const pad = Math.max(1, Math.abs(lo) * 0.1);
  return [lo - pad, hi + pad];
}

// The y axis: accuracy rounded out to tenths around the values; count error from 0.
export function yDomain(values, useAccuracy) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (useAccuracy) {
    lo = Math.max(0, Math.floor((lo - 0.02) * 10) / 10);
    hi = Math.min(1, Math.ceil((hi + 0.02) * 10) / 10);
  } else {
    lo = 0;
    hi = Math.max(hi * 1.15, 0.1);
  }
  return [lo, hi > lo ? hi : lo + 0.1];
}

export function renderCurve(report) {
  const box = $("curve");
  const points = (report.learning_curve || []).filter((p) => p.observations !== null);
  const useAccuracy = points.some((p) => p.accuracy !== null && p.accuracy !== undefined);
  const key = useAccuracy ? "accuracy" : "count_consistency";
  const data = points.filter((p) => p[key] !== null && p[key] !== undefined);
  if (!data.length) {
    box.replaceChildren(empty("The curve appears once a model has been evaluated."));
    return;
  }
  // The forecast's points (+25 %, +100 % answers) and their intervals extend the axes.
  const forecast = report.forecast && report.forecast.available && report.forecast.metric === key ? report.forecast.ahead : [];
  const W = Math.max(300, Math.round(box.clientWidth) || 640);
  const H = W < 500 ? 220 : 260;
  const L = 48, R = 30, T = 14, B = 40, INSET = 8; // INSET keeps the end points off the axes
  const [xLo, xHi] = xDomain([...data.map((p) => p.observations), ...forecast.map((p) => p.observations)]);
  const [yLo, yHi] = yDomain([...data.map((p) => p[key]), ...forecast.flatMap((p) => [p.low, p.high])], useAccuracy);
  const x = (v) => L + INSET + ((W - L - R - 2 * INSET) * (v - xLo)) / (xHi - xLo);
  const y = (v) => T + ((H - T - B) * (yHi - v)) / (yHi - yLo);
  const show = (v) => (useAccuracy ? pct(v) : v.toFixed(3));
  const label = useAccuracy ? "test accuracy" : "count error (lower is better)";
  const last = data[data.length - 1];
  const summary = `${label} over ${data.length} model versions; latest ${show(last[key])} after ${fmt.format(last.observations)} answers`;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary });
  for (const t of niceTicks(yLo, yHi)) {
    chart.append(svg("line", { class: "grid-line", x1: L, x2: W - R, y1: y(t), y2: y(t) }));
    chart.append(svg("text", { class: "y-tick", x: L - 8, y: y(t) + 4, "text-anchor": "end" }, useAccuracy ? `${Math.round(t * 100)}%` : t.toFixed(2)));
  }
  const xTicks = Math.max(2, Math.floor((W - L - R) / 80));
  for (const t of niceTicks(xLo, xHi, xTicks).filter(Number.isInteger)) {
    chart.append(svg("text", { class: "x-tick", x: x(t), y: H - B + 18, "text-anchor": "middle" }, fmt.format(Math.round(t))));
  }
  chart.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  chart.append(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  chart.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, `answers learned from · ${label}`));
  chart.append(svg("polyline", { class: "series", points: data.map((p) => `${x(p.observations)},${y(p[key])}`).join(" ") }));
  for (const p of data) {
    const dot = svg("circle", { class: "dot", cx: x(p.observations), cy: y(p[key]), r: 4 });
    dot.append(svg("title", {}, `version ${p.version}: ${show(p[key])} after ${fmt.format(p.observations)} answers`));
    chart.append(dot);
  }
  for (const p of forecast) {
    const at = x(p.observations);
    chart.append(svg("line", { class: "forecast-range", x1: at, x2: at, y1: y(p.low), y2: y(p.high) }));
    for (const end of [p.low, p.high]) chart.append(svg("line", { class: "forecast-range", x1: at - 5, x2: at + 5, y1: y(end), y2: y(end) }));
    const dot = svg("circle", { class: "forecast-dot", cx: at, cy: y(p.value), r: 4 });
    dot.append(svg("title", {}, `expected after ${fmt.format(p.observations)} answers: ${show(p.value)} (${show(p.low)} – ${show(p.high)})`));
    chart.append(dot);
  }
  if (forecast.length) {
    chart.append(svg("line", { class: "forecast-link", x1: x(last.observations), y1: y(last[key]), x2: x(forecast[0].observations), y2: y(forecast[0].value) }));
  }
  box.replaceChildren(chart);
}
