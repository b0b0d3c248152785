// The annotator page's rules that need no browser: what counts as seen, how much of the
// sentence shows, count bounds, task kinds, the footer's line.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as count from "../../../frontend/static/frontend/js/annotate/kinds/count.js";
import { kindOf, loadKind } from "../../../frontend/static/frontend/js/annotate/kinds/index.js";
import * as verify from "../../../frontend/static/frontend/js/annotate/kinds/verify.js";
import { isSeen } from "../../../frontend/static/frontend/js/annotate/reach.js";
import { statsLine } from "../../../frontend/static/frontend/js/annotate/screen.js";
import { AROUND, shownRange } from "../../../frontend/static/frontend/js/annotate/sentence.js";

const band = { top: 56, bottom: 540 };

test("a question is seen when it is whole between the top bar and the dock", () => {
  assert.ok(isSeen({ top: 60, bottom: 180 }, band));
  assert.ok(isSeen({ top: 56, bottom: 540 }, band));
  assert.ok(!isSeen({ top: 480, bottom: 600 }, band)); // its lower part behind the dock
  assert.ok(!isSeen({ top: 20, bottom: 140 }, band)); // its title behind the top bar
  assert.ok(!isSeen({ top: 700, bottom: 820 }, band)); // below the screen
});

test("a question taller than the screen is seen when it fills it", () => {
  assert.ok(isSeen({ top: 0, bottom: 900 }, band));
  assert.ok(!isSeen({ top: 300, bottom: 1200 }, band));
});

test("the sentence shows the window and a few words around it, or all of it", () => {
  assert.equal(AROUND, 6);
  assert.deepEqual(shownRange(100, { start: 50, length: 5 }, false), [44, 61]);
  assert.deepEqual(shownRange(100, { start: 2, length: 5 }, false), [0, 13]);
  assert.deepEqual(shownRange(100, { start: 95, length: 5 }, false), [89, 100]);
  assert.deepEqual(shownRange(100, { start: 50, length: 5 }, true), [0, 100]);
});

test("counts: each within the window, together too", () => {
  assert.equal(count.maxFor([0, 0], 0, 5), 5);
  assert.equal(count.maxFor([2, 1], 0, 5), 4);
  assert.equal(count.maxFor([2, 3], 0, 5), 2);
  assert.equal(count.maxFor([0, 5, 1], 0, 5), 0);
});

test("a task's kind: count unless it says otherwise; an unknown kind is an error", () => {
  assert.equal(kindOf({ tags: [] }), kindOf({ kind: "count" }));
  assert.equal(typeof kindOf({}).render, "function");
  assert.throws(() => kindOf({ kind: "verify-all" }), /cannot show tasks of kind/);
});

test("a verification task's module loads with its first task", async () => {
  assert.equal(await loadKind({ kind: "verify" }), verify);
  assert.equal(kindOf({ kind: "verify" }), verify);
  await assert.rejects(loadKind({ kind: "verify-all" }), /cannot show tasks of kind/);
});

test("a verification answer: Yes, or No with the wrong word's place or none", () => {
  assert.deepEqual(verify.verificationAnswer(true), { answer: true });
  assert.deepEqual(verify.verificationAnswer(true, 2), { answer: true }); // a Yes names no word
  assert.deepEqual(verify.verificationAnswer(false, 2), { answer: false, wrong: 2 });
  assert.deepEqual(verify.verificationAnswer(false), { answer: false, wrong: null });
});

test("the footer gives seconds per answer by task kind once two kinds were timed", () => {
  const kinds = { count: { n: 2, seconds: 9 }, verify: { n: 4, seconds: 6 } };
  assert.equal(
    statsLine({ observations: 6, seconds: 15, checkScore: null, kinds }),
    "6 answers in all · 4.5 s per count · 1.5 s per check",
  );
  const one = { count: { n: 2, seconds: 9 } };
  assert.equal(statsLine({ observations: 2, seconds: 9, checkScore: null, kinds: one }), "2 answers in all · 4.5 s per answer");
});

test("the footer's line follows the answers", () => {
  assert.equal(statsLine({ observations: 0, seconds: 0, checkScore: null }), "Your first answers: take your time.");
  assert.equal(statsLine({ observations: 1, seconds: 4.2, checkScore: null }), "1 answer in all · 4.2 s per answer");
  assert.equal(statsLine({ observations: 13, seconds: 39, checkScore: 0.857 }), "13 answers in all · 3.0 s per answer · 86 % right on check tasks");
});
