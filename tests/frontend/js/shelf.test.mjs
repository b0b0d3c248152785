// The tasks held, kept in the device's storage for a reload without a connection (issue 26).
import assert from "node:assert/strict";
import { test } from "node:test";
import { createShelf } from "../../../frontend/static/frontend/js/annotate/shelf.js";

function memoryStorage() {
  const items = new Map();
  return { getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)) };
}

const NOW = Date.parse("2026-01-01T12:00:00Z");
const task = (assignment, minutesLeft) => ({ assignment, expires_at: new Date(NOW + minutesLeft * 60_000).toISOString() });

test("keeps the tasks whose lease runs and that have no answer waiting", () => {
  const shelf = createShelf(memoryStorage(), "held");
  shelf.save([task(1, 10), task(2, -1), task(3, 5)]);
  const kept = shelf.load({ now: NOW, isAnswered: (assignment) => assignment === 3 });
  assert.deepEqual(kept.map((t) => t.assignment), [1]);
});

test("nothing kept, broken storage or none: starts empty", () => {
  assert.deepEqual(createShelf(memoryStorage(), "held").load({ now: NOW, isAnswered: () => false }), []);
  const broken = memoryStorage();
  broken.setItem("held", "{not json");
  assert.deepEqual(createShelf(broken, "held").load({ now: NOW, isAnswered: () => false }), []);
  const none = createShelf(null, "held");
  none.save([task(1, 10)]);
  assert.deepEqual(none.load({ now: NOW, isAnswered: () => false }), []);
  const full = createShelf({ getItem: () => null, setItem: () => { throw new Error("quota"); } }, "held");
  full.save([task(1, 10)]); // does not throw
});
