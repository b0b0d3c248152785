// Tasks leased ahead, without a browser: how many are held, what the server is told, and when
// leasing stops.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLookahead } from "../../../frontend/static/frontend/js/annotate/lookahead.js";

const task = (assignment) => ({ assignment, tokens: ["a"], window: { start: 0, length: 1 }, tags: [] });

// A server that hands out new leases, counting from `next`, and records each `holding`.
function server(next = 2) {
  const calls = [];
  return {
    calls,
    lease: async (holding) => {
      calls.push(holding);
      return task(next++);
    },
  };
}

test("holds up to the cap, counting the task on screen, naming every lease held", async () => {
  const { calls, lease } = server();
  const ahead = createLookahead({ lease, maxHeld: 3 });
  const current = task(1);
  await ahead.fill({ current: () => current, canLease: () => true, isAnswered: () => false });
  assert.equal(ahead.size, 2);
  assert.deepEqual(calls, [[1], [1, 2]]);
  assert.equal(ahead.take().assignment, 2);
  assert.equal(ahead.take().assignment, 3);
  assert.equal(ahead.take(), undefined);
});

test("no leasing while answers wait to be sent or offline, nor without a task on screen", async () => {
  for (const [current, canLease] of [[task(1), false], [null, true]]) {
    const { calls, lease } = server();
    const ahead = createLookahead({ lease, maxHeld: 3 });
    await ahead.fill({ current: () => current, canLease: () => canLease, isAnswered: () => false });
    assert.equal(ahead.size, 0);
    assert.deepEqual(calls, []);
  }
});

test("stops at a lease it holds, an answered one, none, or a failure", async () => {
  const replies = [
    async () => task(1), // the task on screen, handed back
    async () => task(9), // answered, waiting in the outbox
    async () => null, // nothing open
    async () => Promise.reject(Object.assign(new Error("offline"), { status: 0 })),
  ];
  for (const reply of replies) {
    const ahead = createLookahead({ lease: reply, maxHeld: 3 });
    await ahead.fill({ current: () => task(1), canLease: () => true, isAnswered: (a) => a === 9 });
    assert.equal(ahead.size, 0);
  }
});

test("the task on screen answered meanwhile is not held twice", async () => {
  let current = task(1);
  const ahead = createLookahead({
    lease: async () => {
      const next = task(5);
      current = next; // shown by the page while this lease was on its way
      return next;
    },
    maxHeld: 2,
  });
  await ahead.fill({ current: () => current, canLease: () => true, isAnswered: () => false });
  assert.equal(ahead.size, 0);
});

test("forget drops a held task", async () => {
  const { lease } = server();
  const ahead = createLookahead({ lease, maxHeld: 3 });
  await ahead.fill({ current: () => task(1), canLease: () => true, isAnswered: () => false });
  ahead.forget(2);
  assert.deepEqual([ahead.take().assignment, ahead.size], [3, 0]);
});

// One round trip per answer (issue 29): the answer asks for the next task, the reply brings it.

test("an answer asks for its next task naming every lease held, until the cap", async () => {
  const { lease } = server();
  const ahead = createLookahead({ lease, maxHeld: 3 });
  assert.deepEqual(ahead.holdingForNext(null), []); // nothing on screen: the first of three
  assert.deepEqual(ahead.holdingForNext(task(1)), [1]);
  await ahead.fill({ current: () => task(1), canLease: () => true, isAnswered: () => false });
  assert.equal(ahead.size, 2);
  assert.equal(ahead.holdingForNext(task(1)), null); // three held: no room
  ahead.take(); // task 2 shown, task 1 answered
  assert.deepEqual(ahead.holdingForNext(task(2)), [2, 3]);
});

test("the task a reply brings is held unless the page has it already", () => {
  const ahead = createLookahead({ lease: async () => null, maxHeld: 3 });
  const page = { current: task(1), isAnswered: (a) => a === 9 };
  assert.equal(ahead.offer(null, page), false); // none for now
  assert.equal(ahead.offer(task(1), page), false); // the one on screen, handed back
  assert.equal(ahead.offer(task(9), page), false); // answered, waiting to be sent
  assert.equal(ahead.offer(task(4), page), true);
  assert.equal(ahead.offer(task(4), page), false); // held already
  assert.deepEqual([ahead.size, ahead.take().assignment], [1, 4]);
});
