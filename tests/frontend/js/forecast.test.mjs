// The forecast's words under the learning curve and the target the manager types.
import assert from "node:assert/strict";
import { test } from "node:test";
import { aheadLines, parseTarget, roughly, targetLine } from "../../../frontend/static/frontend/js/dashboard/forecast.js";

const accuracy = {
  metric: "accuracy",
  level: 0.8,
  ahead: [
    { more: 0.25, observations: 5000, value: 0.912, low: 0.898, high: 0.925 },
    { more: 1, observations: 8000, value: 0.93, low: 0.9, high: 0.95 },
  ],
  target: null,
};

test("each horizon says the answers, the expected accuracy and its interval", () => {
  assert.deepEqual(aheadLines(accuracy), [
    "+25 % answers (5,000 in all): 91.2 % (80 % interval 89.8 % – 92.5 %)",
    "+100 % answers (8,000 in all): 93.0 % (80 % interval 90.0 % – 95.0 %)",
  ]);
  const error = { ...accuracy, metric: "count_consistency", ahead: [{ more: 0.25, observations: 5000, value: 0.2314, low: 0.2, high: 0.25 }] };
  assert.deepEqual(aheadLines(error), ["+25 % answers (5,000 in all): 0.231 (80 % interval 0.200 – 0.250)"]);
});

test("the answers needed: reached, already reached, unbounded, never", () => {
  const at = (target) => targetLine({ ...accuracy, target }, 4000);
  assert.equal(at({ target: 0.95, reached: true, value: 12345, low: 8012, high: 20160 }), "About 12,000 answers for 95.0 % (80 % interval 8,000 – 20,000); 4,000 so far.");
  assert.match(at({ target: 0.95, reached: true, value: 12300, low: 8000, high: null }), /interval from 8,000, with no upper bound/);
  assert.match(at({ target: 0.8, reached: true, value: 1500, low: 1200, high: 1800 }), /^Already reached: the curve passes 80.0 % at about 1,500 answers/);
  assert.match(at({ target: 0.99, reached: false, value: null, low: null, high: null }), /does not reach 99.0 %/);
});

test("answers are shown to two significant figures", () => {
  assert.deepEqual([7, 99, 123, 6251, 26681, 1234567].map(roughly), ["7", "99", "120", "6,300", "27,000", "1,200,000"]);
});

test("a target is a percentage for accuracy and a count error as it is", () => {
  assert.deepEqual(parseTarget("95", "accuracy"), { target: 0.95 });
  assert.deepEqual(parseTarget(" 92,5 ", "accuracy"), { target: 0.925 });
  for (const bad of ["", "abc", "0", "101", "-3"]) assert.ok(parseTarget(bad, "accuracy").error, bad);
  assert.deepEqual(parseTarget("0.2", "count_consistency"), { target: 0.2 });
  for (const bad of ["", "x", "-0.1"]) assert.ok(parseTarget(bad, "count_consistency").error, bad);
});
