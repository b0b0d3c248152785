// The dashboard's pieces that need no browser: the learning curve's axes, the shared store, and
// number formats.
import assert from "node:assert/strict";
import { test } from "node:test";
import { niceTicks, xDomain, yDomain } from "../../../frontend/static/frontend/js/dashboard/curve.js";
import { statusText } from "../../../frontend/static/frontend/js/dashboard/retraining.js";
import { createStore } from "../../../frontend/static/frontend/js/dashboard/store.js";
import { autoShareText, parseShare } from "../../../frontend/static/frontend/js/dashboard/taskmix.js";
import { fixed, pct } from "../../../frontend/static/frontend/js/lib/format.js";

test("the curve's x axis spans the versions' answers, not from 0", () => {
  assert.deepEqual(xDomain([3000, 3120, 3500]), [3000, 3500]);
  assert.deepEqual(xDomain([80, 230, 490]), [80, 490]);
});

test("a single version sits in the middle of the x axis", () => {
  const [lo, hi] = xDomain([495]);
  assert.ok(lo < 495 && hi > 495);
  assert.equal((lo + hi) / 2, 495);
  assert.deepEqual(xDomain([0]), [-1, 1]);
});

test("ticks are round and inside the axis", () => {
  assert.deepEqual(niceTicks(3000, 3500, 4), [3000, 3200, 3400]);
  assert.deepEqual(niceTicks(80, 490, 4), [100, 200, 300, 400]);
  assert.deepEqual(niceTicks(80, 490, 2), [200, 400]);
  assert.deepEqual(niceTicks(0.6, 0.9, 4), [0.6, 0.7, 0.8, 0.9]);
  for (const [lo, hi] of [[1, 7], [12, 13], [445.5, 544.5], [0, 1e6], [85, 480], [3001, 3499], [0.61, 0.79]]) {
    for (const n of [2, 3, 4]) {
      const ticks = niceTicks(lo, hi, n);
      assert.ok(ticks.length >= 2, `${lo}..${hi} (${n}): ${ticks}`);
      assert.ok(ticks.every((t) => t >= lo && t <= hi), `${lo}..${hi} (${n}): ${ticks}`);
      assert.deepEqual(ticks, [...ticks].sort((a, b) => a - b));
    }
  }
});

test("the y axis: accuracy rounded out to tenths, count error from 0", () => {
  assert.deepEqual(yDomain([0.63, 0.79], true), [0.6, 0.9]);
  assert.deepEqual(yDomain([0.99], true), [0.9, 1]);
  assert.deepEqual(yDomain([0.2, 0.4], false), [0, 0.4 * 1.15]);
  assert.deepEqual(yDomain([0], false), [0, 0.1]);
});

test("the store calls the panels that watch a value when it is set", () => {
  const store = createStore();
  const seen = [];
  store.watch(["stats", "report"], (value) => seen.push(value));
  store.watch("members", (value) => seen.push(["members", value]));
  assert.equal(store.get("stats"), null);
  store.set("stats", 1);
  store.set("report", 2);
  store.set("members", 3);
  store.set("project", 4);
  assert.deepEqual(seen, [1, 2, ["members", 3]]);
  assert.equal(store.get("project"), 4);
});

test("numbers as the pages show them", () => {
  assert.equal(pct(0.875), "87.5 %");
  assert.equal(pct(null), "–");
  assert.equal(pct(Number.NaN), "–");
  assert.equal(fixed(3, 1), "3.0");
  assert.equal(fixed(undefined, 2), "–");
});

test("the model's status line says what the answers wait for", () => {
  assert.equal(statusText({ current_version: null, pending_observations: 12 }), "No model yet · 12 answers to learn from");
  assert.equal(statusText({ current_version: null, pending_observations: 0 }), "No model yet");
  assert.equal(statusText({ current_version: 4, pending_observations: 1, running: true }), "Model v4 · 1 new answer since · retraining…");
  assert.equal(statusText({ current_version: 4, pending_observations: 1200 }), "Model v4 · 1,200 new answers since");
});

test("the task mix takes a share from 0 to 1", () => {
  assert.deepEqual(parseShare("0.25"), { share: 0.25 });
  assert.deepEqual(parseShare(" 1 "), { share: 1 });
  assert.deepEqual(parseShare("0"), { share: 0 });
  for (const bad of ["", "1.5", "-0.1", "half", "NaN"]) assert.match(parseShare(bad).error, /from 0/);
});

test("progress cards fill their rows evenly, and counts take their noun's number (issue 26)", async () => {
  const { balancedColumns } = await import("../../../frontend/static/frontend/js/dashboard/progress.js");
  const { counted } = await import("../../../frontend/static/frontend/js/lib/format.js");
  assert.equal(balancedColumns(8, 7), 4); // 4 + 4, not 7 + 1
  assert.equal(balancedColumns(7, 7), 7);
  assert.equal(balancedColumns(5, 4), 3); // 3 + 2, not 4 + 1
  assert.equal(balancedColumns(0, 4), 1);
  assert.equal(counted(1, "check"), "1 check");
  assert.equal(counted(2, "check"), "2 checks");
  assert.equal(counted(0, "answer"), "0 answers");
});

test("the automatic task mix says what the latest version chose", () => {
  assert.equal(autoShareText({ verification_version: null, verification_share_auto: 0 }), "No model yet: count tasks only.");
  assert.match(autoShareText({ verification_version: 2, verification_share_auto: 0.234 }), /chose 23 % verification/);
});

test("the live model's line says what it follows and how far", async () => {
  const { liveText } = await import("../../../frontend/static/frontend/js/dashboard/livemodel.js");
  assert.match(liveText(null), /appears with the first answers after a retrain/);
  assert.match(liveText({ number: 0, base_version: 2, answers_applied: 0 }), /appears/);
  assert.equal(
    liveText({ number: 3, base_version: 2, answers_applied: 1500 }),
    "Live model: version 2 + 1,500 answers in 3 updates",
  );
});

test("the cost grid reads numbers and names the first bad cell", async () => {
  const { readGrid, topShares, rescored, rescoreDelay } = await import("../../../frontend/static/frontend/js/dashboard/costs.js");
  const tags = ["NOUN", "VERB"];
  assert.deepEqual(readGrid([["0", " 2 "], ["0.5", "x"]], tags), { matrix: [[0, 2], [0.5, 0]] });
  assert.deepEqual(readGrid([["0", ""], ["1", "0"]], tags), { error: "Cell (true NOUN, given VERB) is not a number.", cell: [0, 1] });
  assert.deepEqual(readGrid([["0", "1"], ["-1", "0"]], tags), { error: "Cell (true VERB, given NOUN) is negative: a cost is 0 or more.", cell: [1, 0] });
  assert.equal(topShares({ NOUN: 0.2, VERB: 0.5, DET: 0, ADJ: 0.3 }, 2), "VERB 50.0 %, ADJ 30.0 %");
  // Bounded as the server bounds it (issue 44), and a matrix of zeros decides nothing.
  assert.match(readGrid([["0", "1e308"], ["1", "0"]], tags).error, /^Cell \(true NOUN, given VERB\) is more than 1,000,000/);
  assert.deepEqual(readGrid([["0", "1000000"], ["1", "0"]], tags), { matrix: [[0, 1e6], [1, 0]] });
  assert.match(readGrid([["0", "0"], ["0", "0"]], tags).error, /^Every cost is 0/);
  // The summary follows the re-scoring: a report is taken once it is of the saved revision.
  assert.equal(rescored({ version: 2, cost: { revision: 1 } }, 2), false);
  assert.equal(rescored({ version: 2, cost: null }, 1), false);
  assert.equal(rescored({ version: 2, cost: { revision: 3 } }, 2), true);
  assert.ok(rescoreDelay(0) === 0.5 && rescoreDelay(20) === 5);
});
