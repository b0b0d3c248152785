// A project's dashboard: progress, invite, annotators, corpus, exports (annotation API), and the
// model's reports, the cost of errors, retraining (schedule, runs, failures) and webhooks (learning API), kept up to
// date by the project's event stream. Each panel is a module; this one puts them together.
import { $ } from "../lib/dom.js";
import { describe, getOrNull } from "../lib/http.js";
import { scrollHints } from "../lib/overflow.js";
import { mountAnnotators } from "./annotators.js";
import { renderConfusion } from "./confusion.js";
import { mountCorpus } from "./corpus.js";
import { mountCosts } from "./costs.js";
import { renderCurve } from "./curve.js";
import { mountForecast } from "./forecast.js";
import { mountHeader } from "./header.js";
import { connectLive } from "./live.js";
import { renderPerTag } from "./per-tag.js";
import { mountProgress } from "./progress.js";
import { mountRetraining } from "./retraining.js";
import { createStore } from "./store.js";
import { mountTaskMix } from "./taskmix.js";
import { mountPredictAccess, mountTry } from "./try.js";
import { mountVersions } from "./versions.js";
import { mountWebhooks } from "./webhooks.js";

const base = `/api/projects/${Number($("dash").dataset.project)}`;
const store = createStore();

function fail(error) {
  $("dash-error").hidden = false;
  $("dash-error").textContent = describe(error);
}

const header = mountHeader({ base, store, fail });
const progress = mountProgress({ base, store });
const annotators = mountAnnotators({ base, store });
const corpus = mountCorpus({ base, store, fail, reloadStats: () => progress.load(), reloadProject: () => header.load() });
const versions = mountVersions({ base });
const retraining = mountRetraining({ base });
const webhooks = mountWebhooks({ base, fail });
mountTry({ base });
mountPredictAccess({ base, store });
mountTaskMix({ base, store });
mountForecast({ base, store });
const costs = mountCosts({ base, store });

// The latest model report: the curve, per-tag scores and confusion matrix, and (through the
// store) the accuracy in progress and the annotators' reliability.
store.watch("report", (report) => {
  renderCurve(report);
  renderPerTag(report);
  renderConfusion(report);
});

async function loadReport() {
  const report = await getOrNull(`${base}/reports/latest/`); // null: no model yet
  if (report) store.set("report", report);
}

async function refreshModel() {
  try {
    await Promise.all([loadReport(), versions.load(), progress.load(), annotators.load(), retraining.loadStatus(), webhooks.load()]);
  } catch (error) {
    fail(error);
  }
}

async function start() {
  try {
    await header.load();
    await Promise.all([
      progress.load(),
      annotators.load(),
      corpus.load(),
      loadReport(),
      versions.load(),
      retraining.loadStatus(),
      retraining.loadSchedule(),
      webhooks.load(),
      costs.load(),
    ]);
  } catch (error) {
    fail(error);
  }
  connectLive({ base, version: () => store.get("report")?.version ?? null, refresh: refreshModel });
}

scrollHints($("dash"));
start();
setInterval(() => {
  if (document.visibilityState !== "visible") return;
  progress.load().catch(() => {});
  retraining.loadStatus();
  webhooks.load().catch(() => {});
}, 30000);
