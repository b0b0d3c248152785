// The outbox and its sender, without a browser: answers kept until the server has them, sent
// oldest first, each removed once answered for, retried with backoff.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createOutbox, createSender, FIRST_RETRY_MS, LAST_RETRY_MS, newKey, outcome } from "../../../frontend/static/frontend/js/annotate/outbox.js";

class Storage {
  constructor() {
    this.data = new Map();
  }
  getItem(key) {
    return this.data.has(key) ? this.data.get(key) : null;
  }
  setItem(key, value) {
    this.data.set(key, String(value));
  }
}

const failing = {
  getItem() {
    throw new Error("SecurityError");
  },
  setItem() {
    throw new Error("QuotaExceededError");
  },
};

// Timers run by hand: `run()` fires the pending one; `delays` records what was asked.
function manualTimers() {
  const timers = { delays: [], pending: null };
  timers.setTimeout = (fn, ms) => {
    timers.delays.push(ms);
    timers.pending = fn;
    return timers.delays.length;
  };
  timers.clearTimeout = () => {
    timers.pending = null;
  };
  timers.run = async () => {
    const fn = timers.pending;
    timers.pending = null;
    assert.ok(fn, "a retry is scheduled");
    await fn();
  };
  return timers;
}

const status = (code, body = null) => Object.assign(new Error(body?.error?.message || `HTTP ${code}`), { status: code, code: body?.error?.code || "" });
const answer = (n) => ({ project: 1, assignment: n, counts: { NOUN: n }, seconds_on_device: 2, idempotency_key: `k${n}` });

test("the outbox keeps answers in storage, under the user's key", () => {
  const storage = new Storage();
  const box = createOutbox(storage, "tally.outbox.7");
  box.add(answer(1));
  box.add(answer(2));
  assert.equal(box.size(), 2);
  assert.ok(box.has(2));
  // Another page (a reload) sees them.
  const again = createOutbox(storage, "tally.outbox.7");
  assert.deepEqual(again.all().map((a) => a.assignment), [1, 2]);
  again.remove("k1");
  assert.deepEqual(box.all().map((a) => a.assignment), [2]);
  assert.equal(createOutbox(storage, "tally.outbox.8").size(), 0);
});

test("without working storage the outbox keeps answers in memory", () => {
  for (const storage of [failing, null]) {
    const box = createOutbox(storage, "k");
    box.add(answer(1));
    box.add(answer(2));
    box.remove("k1");
    assert.deepEqual(box.all().map((a) => a.assignment), [2]);
  }
});

test("idempotency keys are 32 hex characters, new each time", () => {
  const keys = new Set(Array.from({ length: 100 }, newKey));
  assert.equal(keys.size, 100);
  for (const key of keys) assert.match(key, /^[0-9a-f]{32}$/);
});

test("what a failed sending means", () => {
  assert.equal(outcome(status(0)), "offline");
  assert.equal(outcome(status(401)), "session");
  assert.equal(outcome(status(403)), "session");
  assert.equal(outcome(status(429)), "later");
  assert.equal(outcome(status(500)), "later");
  assert.equal(outcome(status(503)), "later");
  for (const code of [400, 404, 409]) assert.equal(outcome(status(code)), "refused");
});

test("answers are sent oldest first, without their project, and removed once sent", async () => {
  const box = createOutbox(new Storage(), "k");
  [1, 2, 3].forEach((n) => box.add(answer(n)));
  const posted = [];
  const sent = [];
  const sender = createSender({
    outbox: box,
    post: async (body, item) => {
      posted.push(body);
      assert.ok(box.has(body.assignment), "still kept while on its way");
      assert.equal(item.project, 1, "the item as kept comes along, for the page to decide on `next`");
      return { id: body.assignment, replayed: false };
    },
    on: { sent: (item, reply) => sent.push([item.assignment, reply.id]) },
    timers: manualTimers(),
  });
  assert.equal(await sender.flush(), true);
  assert.deepEqual(posted.map((b) => b.assignment), [1, 2, 3]);
  assert.ok(posted.every((b) => !("project" in b) && b.idempotency_key));
  assert.deepEqual(sent, [[1, 1], [2, 2], [3, 3]]);
  assert.equal(box.size(), 0);
});

test("one sending at a time: a second flush joins the first", async () => {
  const box = createOutbox(new Storage(), "k");
  box.add(answer(1));
  let calls = 0;
  let release;
  const sender = createSender({
    outbox: box,
    post: () => {
      calls += 1;
      return new Promise((resolve) => (release = resolve));
    },
    timers: manualTimers(),
  });
  const first = sender.flush();
  const second = sender.flush();
  assert.equal(first, second);
  release({});
  assert.equal(await first, true);
  assert.equal(calls, 1);
});

test("offline: the answer is kept, the rest wait, and retries back off from 2 s to 30 s", async () => {
  const box = createOutbox(new Storage(), "k");
  [1, 2].forEach((n) => box.add(answer(n)));
  const timers = manualTimers();
  let offline = 0;
  let up = false;
  const posted = [];
  const retried = [];
  const sender = createSender({
    outbox: box,
    post: async (body) => {
      posted.push(body.idempotency_key);
      if (!up) throw status(0);
      return {};
    },
    on: { offline: () => (offline += 1), retried: () => retried.push(true) },
    timers,
  });
  assert.equal(await sender.flush(), false);
  assert.deepEqual(posted, ["k1"]); // stopped at the first
  assert.equal(box.size(), 2);
  assert.equal(offline, 1);
  for (let i = 0; i < 6; i++) await timers.run();
  assert.deepEqual(timers.delays, [2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  assert.equal(FIRST_RETRY_MS, 2000);
  assert.equal(LAST_RETRY_MS, 30000);

  up = true;
  await timers.run();
  assert.equal(box.size(), 0);
  assert.deepEqual(posted.slice(-2), ["k1", "k2"]); // the same keys: stored once by the server
  assert.deepEqual(retried, [true]);
  assert.equal(sender.retryDelay, 2000); // backoff starts over
  assert.equal(timers.pending, null); // nothing left to retry
});

test("back online, the backoff starts over", async () => {
  const box = createOutbox(new Storage(), "k");
  box.add(answer(1));
  const timers = manualTimers();
  const sender = createSender({ outbox: box, post: async () => Promise.reject(status(0)), timers });
  await sender.flush();
  await timers.run();
  await timers.run();
  assert.equal(sender.retryDelay, 8000);
  await sender.online();
  assert.equal(sender.retryDelay, 2000);
});

test("a busy server (429, 5xx) keeps the answer for a retry", async () => {
  for (const code of [429, 500, 503]) {
    const box = createOutbox(new Storage(), "k");
    box.add(answer(1));
    const timers = manualTimers();
    const sender = createSender({ outbox: box, post: async () => Promise.reject(status(code)), timers });
    assert.equal(await sender.flush(), false);
    assert.equal(box.size(), 1);
    assert.deepEqual(timers.delays, [2000]);
  }
});

test("an answer the server refuses is dropped, said, and does not block the others", async () => {
  const box = createOutbox(new Storage(), "k");
  [1, 2].forEach((n) => box.add(answer(n)));
  const refused = [];
  const sender = createSender({
    outbox: box,
    post: async (body) => {
      if (body.assignment === 1) throw status(409, { error: { code: "conflict", message: "Already answered." } });
      return {};
    },
    on: { refused: (item, error) => refused.push([item.assignment, error.message]) },
    timers: manualTimers(),
  });
  assert.equal(await sender.flush(), true);
  assert.deepEqual(refused, [[1, "Already answered."]]);
  assert.equal(box.size(), 0);
});

test("signed out: answers are kept and nothing is retried", async () => {
  const box = createOutbox(new Storage(), "k");
  [1, 2].forEach((n) => box.add(answer(n)));
  const timers = manualTimers();
  let signedOut = 0;
  let posts = 0;
  const sender = createSender({
    outbox: box,
    post: async () => {
      posts += 1;
      throw status(403);
    },
    on: { signedOut: () => (signedOut += 1) },
    timers,
  });
  assert.equal(await sender.flush(), false);
  assert.equal(signedOut, 1);
  assert.equal(box.size(), 2);
  assert.equal(timers.pending, null);
  assert.equal(await sender.flush(), false);
  assert.equal(posts, 1);
});

test("a lost response: the answer is resent with its key until one reply arrives", async () => {
  const box = createOutbox(new Storage(), "k");
  box.add(answer(1));
  const timers = manualTimers();
  const stored = new Map(); // the server: idempotency key -> counts
  let lose = 2;
  const sender = createSender({
    outbox: box,
    post: async (body) => {
      if (!stored.has(body.idempotency_key)) stored.set(body.idempotency_key, body.counts);
      if (lose-- > 0) throw status(0); // stored, but the reply never arrives
      return { replayed: true };
    },
    timers,
  });
  await sender.flush();
  await timers.run();
  assert.equal(box.size(), 1);
  await timers.run();
  assert.equal(box.size(), 0);
  assert.deepEqual([...stored], [["k1", { NOUN: 1 }]]);
});

test("a sender sends only its owner's answers, without the session they were given in", async () => {
  const box = createOutbox(new Storage(), "tally.outbox.7");
  box.add({ ...answer(1), device_user: 7, device_session: "s1" });
  box.add({ ...answer(2), device_user: 8, device_session: "s2" }); // given as another account
  box.add(answer(3)); // kept before answers named their account: the outbox's owner's
  const posted = [];
  const timers = manualTimers();
  const sender = createSender({ outbox: box, owner: "7", post: async (body) => posted.push(body), timers });
  assert.equal(await sender.flush(), true, "nothing of the owner's is left");
  assert.deepEqual(posted.map((b) => b.assignment), [1, 3]);
  assert.equal(posted[0].device_user, 7, "the server checks it against the caller");
  assert.ok(posted.every((b) => !("device_session" in b)));
  assert.deepEqual(box.all().map((a) => a.assignment), [2], "the other account's answer stays, unsent");
  assert.equal(timers.pending, null, "and is not retried");
});
