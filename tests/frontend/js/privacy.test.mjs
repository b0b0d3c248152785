// Private projects: the page's sampler draws released values with the task's distribution.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cryptoUniform, privatize, sample } from "../../../frontend/static/frontend/js/annotate/privacy.js";

// A fixed release matrix (rows: true count 0..3, columns: released value 0..3).
const RELEASE = [
  [0.5, 0.3, 0.15, 0.05],
  [0.2, 0.4, 0.3, 0.1],
  [0.05, 0.15, 0.6, 0.2],
  [0.0, 0.1, 0.2, 0.7],
];

test("the sampler inverts the cumulative distribution", () => {
  assert.equal(sample([0.5, 0.5], 0), 0);
  assert.equal(sample([0.5, 0.5], 0.4999), 0);
  assert.equal(sample([0.5, 0.5], 0.5), 1);
  assert.equal(sample([0, 1, 0], 0.99), 1);
  assert.equal(sample([0.3, 0.7, 0], 1 - 1e-16), 1); // rounding never reaches a value without mass
});

test("crypto draws are uniform in [0, 1)", () => {
  const n = 20000;
  const bins = new Array(10).fill(0);
  for (let i = 0; i < n; i++) {
    const u = cryptoUniform();
    assert.ok(u >= 0 && u < 1);
    bins[Math.floor(u * 10)]++;
  }
  const chi2 = bins.reduce((s, b) => s + (b - n / 10) ** 2 / (n / 10), 0);
  assert.ok(chi2 < 27.9, `chi-square ${chi2} (9 degrees of freedom, p = 0.001)`);
});

test("released values follow the row of the true count (chi-square, many draws)", () => {
  const n = 40000;
  for (const truth of [0, 1, 2, 3]) {
    const task = { privacy: { mechanism: "geometric", alpha: 3, release: RELEASE } };
    const seen = [0, 0, 0, 0];
    for (let i = 0; i < n; i++) seen[privatize(task, { counts: { NOUN: truth } }).released.NOUN]++;
    let chi2 = 0;
    RELEASE[truth].forEach((p, o) => {
      if (p === 0) assert.equal(seen[o], 0);
      else chi2 += (seen[o] - n * p) ** 2 / (n * p);
    });
    assert.ok(chi2 < 16.3, `true count ${truth}: chi-square ${chi2} (≤ 3 degrees of freedom, p = 0.001)`);
  }
});

test("a private answer holds released values and the mechanism, never the counts", () => {
  const task = { privacy: { mechanism: "krr", alpha: 2.5, release: RELEASE } };
  const answer = privatize(task, { counts: { NOUN: 2, VERB: 1 } }, () => 0.99);
  assert.deepEqual(answer, { released: { NOUN: 3, VERB: 3 }, privacy: { mechanism: "krr", alpha: 2.5 } });
  assert.ok(!("counts" in answer));
  const plain = { counts: { NOUN: 2 } };
  assert.equal(privatize({}, plain), plain);
});
