// Private projects: the page's sampler draws released values with the task's distribution.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  MAX_ALPHA,
  PrivacyError,
  admit,
  cryptoUniform,
  forgetPlain,
  privatize,
  releaseProblem,
  sample,
} from "../../../frontend/static/frontend/js/annotate/privacy.js";

// krr's release matrix (rows: true count 0..w, columns: released value 0..w) at level `a` per tag,
// written out here as learning/core/privacy.py defines it.
function krr(a, w) {
  return Array.from({ length: w + 1 }, (_, n) => Array.from({ length: w + 1 }, (_, o) => (o === n ? Math.exp(a) : 1) / (Math.exp(a) + w)));
}
// A private count task asking `tags` about a window of `w` words.
function privateTask({ mechanism = "krr", alpha = 3, w = 3, tags = ["NOUN"], release = krr(alpha / tags.length, w) } = {}) {
  return { kind: "count", window: { start: 0, length: w }, tags: tags.map((name) => ({ name })), privacy: { mechanism, alpha, release } };
}
const RELEASE = krr(1, 3);
// A seeded uniform source (mulberry32): the sampler's distribution is checked on draws that are
// the same in every run, so the check cannot fail by chance.
function seededUniform(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
  // The browser's own randomness cannot be seeded: a bound at p = 1e-6 keeps a false alarm rare.
  assert.ok(chi2 < 44.8, `chi-square ${chi2} (9 degrees of freedom, p = 1e-6)`);
});

test("released values follow the row of the true count (chi-square, many draws)", () => {
  const n = 40000;
  const uniform = seededUniform(2026);
  for (const truth of [0, 1, 2, 3]) {
    const task = privateTask({ alpha: 1, release: RELEASE });
    const seen = [0, 0, 0, 0];
    for (let i = 0; i < n; i++) seen[privatize(task, { counts: { NOUN: truth } }, { projectPrivate: true, uniform }).released.NOUN]++;
    let chi2 = 0;
    RELEASE[truth].forEach((p, o) => {
      if (p === 0) assert.equal(seen[o], 0);
      else chi2 += (seen[o] - n * p) ** 2 / (n * p);
    });
    assert.ok(chi2 < 16.3, `true count ${truth}: chi-square ${chi2} (≤ 3 degrees of freedom, p = 0.001)`);
  }
});

test("a private answer holds released values and the mechanism, never the counts", () => {
  const task = privateTask({ alpha: 2, tags: ["NOUN", "VERB"] });
  const answer = privatize(task, { counts: { NOUN: 2, VERB: 1 } }, { uniform: () => 0.99 });
  assert.deepEqual(answer, { released: { NOUN: 3, VERB: 3 }, privacy: { mechanism: "krr", alpha: 2 } });
  assert.ok(!("counts" in answer));
  const plain = { counts: { NOUN: 2 } };
  assert.equal(privatize({}, plain), plain);
});

test("a task without privacy in a project known to be private is never answered (issue 24)", () => {
  // Leased before the switch to private: the page refuses it rather than send the true count.
  assert.throws(() => privatize({ kind: "count" }, { counts: { NOUN: 2 } }, { projectPrivate: true }), PrivacyError);
  assert.throws(() => privatize({ kind: "verify" }, { answer: true }, { projectPrivate: true }), PrivacyError);
});

test("the release the server sends is checked against its mechanism and α (issue 24)", () => {
  assert.equal(releaseProblem({ kind: "count" }), null); // not private: nothing to check
  assert.equal(releaseProblem(privateTask()), null);
  assert.equal(releaseProblem(privateTask({ alpha: MAX_ALPHA, w: 10, tags: ["A", "B", "C"] })), null);
  const identity = [0, 1, 2, 3].map((n) => [0, 1, 2, 3].map((o) => (o === n ? 1 : 0)));
  const nearly = krr(40, 3); // krr at α = 40: the true count with probability 1 − 1e-17
  const refused = {
    "the identity": privateTask({ release: identity }),
    "the identity under a level of 1e9": privateTask({ alpha: 1e9, release: identity }),
    "a level above the cap": privateTask({ alpha: 40, release: nearly }),
    "a release more revealing than its α": privateTask({ alpha: 3, release: krr(4, 3) }),
    "the budget not split across the tags asked": privateTask({ alpha: 3, tags: ["NOUN", "VERB"], release: krr(3, 3) }),
    "a table for another window": privateTask({ w: 3, release: krr(3, 4) }),
    "rows that are not distributions": privateTask({ release: krr(3, 3).map((row) => row.map((p) => 2 * p)) }),
    "a negative probability": privateTask({ release: [[1.2, -0.1, -0.05, -0.05], ...krr(3, 3).slice(1)] }),
    "an unknown mechanism": privateTask({ mechanism: "none" }),
    "another mechanism's table": privateTask({ mechanism: "geometric" }),
    "a level that is not a number": privateTask({ alpha: "3" }),
    "a value impossible from one true count": privateTask({ alpha: 8, release: [[0.5, 0.5, 0, 0], ...krr(8, 3).slice(1)] }),
  };
  for (const [what, task] of Object.entries(refused)) {
    assert.ok(releaseProblem(task), what);
    assert.throws(() => privatize(task, { counts: { NOUN: 1 } }), PrivacyError, what);
  }
  // A classic table (true value or a draw that ignores it) passes; one bent towards the truth not.
  const u = [0.4, 0.3, 0.2, 0.1];
  const eps = (Math.expm1(1) * 0.1) / (1 + Math.expm1(1) * 0.1);
  const classic = [0, 1, 2, 3].map((n) => u.map((p, o) => (1 - eps) * p + (o === n ? eps : 0)));
  assert.equal(releaseProblem(privateTask({ mechanism: "classic", alpha: 1, release: classic })), null);
  const bent = classic.map((row) => [...row]);
  [bent[1][0], bent[1][1]] = [bent[1][0] - 0.01, bent[1][1] + 0.01];
  assert.ok(releaseProblem(privateTask({ mechanism: "classic", alpha: 1, release: bent })));
});

test("a private project's page admits only tasks whose release passes the checks", () => {
  assert.doesNotThrow(() => admit(privateTask(), true));
  assert.doesNotThrow(() => admit(privateTask(), false)); // the first private task: now private
  assert.doesNotThrow(() => admit({ kind: "count" }, false));
  assert.throws(() => admit({ kind: "count" }, true), /privacy setting has changed/);
  assert.throws(() => admit(privateTask({ alpha: 20, release: krr(20, 3) }), true), /not between 0 and 8/);
});

test("answers kept with true counts from before the switch are deleted unsent", () => {
  let items = [
    { project: 1, assignment: 10, counts: { NOUN: 2 }, idempotency_key: "a" },
    { project: 1, assignment: 11, released: { NOUN: 1 }, idempotency_key: "b" },
    { project: 2, assignment: 12, counts: { NOUN: 0 }, idempotency_key: "c" }, // another project
  ];
  const outbox = {
    discard(unfit) {
      const before = items.length;
      items = items.filter((item) => !unfit(item));
      return before - items.length;
    },
  };
  let held = [{ assignment: 20 }, { assignment: 21, privacy: {} }];
  const lookahead = { discard: (unfit) => (held = held.filter((task) => !unfit(task))) };
  assert.equal(forgetPlain({ outbox, lookahead, project: 1 }), "This project is now private: 1 answer given before the change was deleted from this phone without being sent.");
  assert.deepEqual(items.map((item) => item.idempotency_key), ["b", "c"]);
  assert.deepEqual(held.map((task) => task.assignment), [21]);
  assert.equal(forgetPlain({ outbox, project: 1 }), "");
});
