// The learning curve's forecast (computed by the server from the project's versions): the
// accuracy (or, without evaluation sentences, the count error) expected after 25 % and 100 % more
// answers, and the answers needed for a target the manager types, each with its interval.
import { $, el } from "../lib/dom.js";
import { api, describe } from "../lib/http.js";
import { fmt, pct } from "../lib/format.js";

const isAccuracy = (forecast) => forecast.metric === "accuracy";
const show = (forecast, v) => (isAccuracy(forecast) ? pct(v) : Number(v).toFixed(3));
// Answers to two significant figures: the forecast is not more precise than that.
export function roughly(n) {
  const step = n >= 100 ? 10 ** (Math.floor(Math.log10(n)) - 1) : 1;
  return fmt.format(Math.round(n / step) * step);
}

// One line per horizon: "+25 % answers (5,000 in all): 91.2 % (80 % interval 89.8 – 92.5 %)".
export function aheadLines(forecast) {
  const level = Math.round(100 * forecast.level);
  return forecast.ahead.map(
    (p) =>
      `+${Math.round(100 * p.more)} % answers (${fmt.format(p.observations)} in all): ${show(forecast, p.value)} ` +
      `(${level} % interval ${show(forecast, p.low)} – ${show(forecast, p.high)})`,
  );
}

// The answer to "how many answers for this target?"; `newest`: the answers of the newest version.
export function targetLine(forecast, newest) {
  const t = forecast.target;
  const goal = show(forecast, t.target);
  if (!t.reached) return `The fitted curve does not reach ${goal}: more answers of the same kind may never get there.`;
  if (t.value <= newest) return `Already reached: the curve passes ${goal} at about ${roughly(t.value)} answers.`;
  const level = Math.round(100 * forecast.level);
  const interval = t.high === null ? `from ${roughly(t.low)}, with no upper bound: the curve may never get there` : `${roughly(t.low)} – ${roughly(t.high)}`;
  return `About ${roughly(t.value)} answers for ${goal} (${level} % interval ${interval}); ${fmt.format(newest)} so far.`;
}

// The target typed in the form: a percentage for accuracy (sent as a fraction), a count error as
// it is; or an error message.
export function parseTarget(raw, metric) {
  const text = String(raw).trim().replace(",", ".");
  const value = Number(text);
  if (metric === "accuracy") {
    if (text === "" || !Number.isFinite(value) || value <= 0 || value > 100) return { error: "A target accuracy in percent, above 0 and at most 100 (for example 95)." };
    return { target: value / 100 };
  }
  if (text === "" || !Number.isFinite(value) || value < 0) return { error: "A target count error of 0 or more (for example 0.2; lower is better)." };
  return { target: value };
}

export function mountForecast({ base, store }) {
  const form = $("forecast-target");
  const input = $("target-input");
  let metric = "accuracy";
  function say(text, isError = false) {
    $("target-error").textContent = isError ? text : "";
    $("target-error").hidden = !isError;
    $("target-answer").textContent = isError ? "" : text;
    if (isError) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
  store.watch("report", (report) => {
    const forecast = report.forecast;
    const box = $("forecast");
    if (!forecast || !forecast.available) {
      box.replaceChildren(el("p", { class: "help", text: forecast ? forecast.reason : "" }));
      form.hidden = true;
      return;
    }
    if (forecast.metric !== metric) say("");
    metric = forecast.metric;
    box.replaceChildren(
      el("h3", { text: isAccuracy(forecast) ? "Expected accuracy" : "Expected count error (lower is better)" }),
      el("ul", { class: "forecast-list" }, ...aheadLines(forecast).map((line) => el("li", { text: line }))),
    );
    $("target-label").textContent = isAccuracy(forecast) ? "Target accuracy (%)" : "Target count error";
    input.step = isAccuracy(forecast) ? "0.1" : "0.01";
    form.hidden = false;
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const { target, error } = parseTarget(input.value, metric);
    if (error) {
      say(error, true);
      input.focus();
      return;
    }
    try {
      const report = await api("GET", `${base}/reports/latest/?target=${encodeURIComponent(target)}`);
      if (!report.forecast.available) say(report.forecast.reason);
      else say(targetLine(report.forecast, report.observations));
    } catch (failure) {
      say(describe(failure), true);
    }
  });
}
