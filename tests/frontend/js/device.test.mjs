// Whose pages the device holds (lib/device.js): the signed-in cookie read, and the keys of the
// tasks held for one account or for the others.
import assert from "node:assert/strict";
import { test } from "node:test";
import { heldKeys, forget, signedIn } from "../../../frontend/static/frontend/js/lib/device.js";

class Storage {
  constructor(entries) {
    this.data = new Map(Object.entries(entries));
  }
  get length() {
    return this.data.size;
  }
  key(i) {
    return [...this.data.keys()][i] ?? null;
  }
  removeItem(key) {
    this.data.delete(key);
  }
}

test("the signed-in cookie names the account and the session, or nobody", () => {
  assert.deepEqual(signedIn("csrftoken=x; tally_signed_in=12.ab34; other=1"), { user: "12", session: "ab34" });
  assert.deepEqual(signedIn("tally_signed_in=12.ab34"), { user: "12", session: "ab34" });
  assert.equal(signedIn("csrftoken=x"), null);
  assert.equal(signedIn("tally_signed_in="), null);
  assert.equal(signedIn("my_tally_signed_in=12.ab"), null);
  assert.equal(signedIn(""), null);
});

test("the tasks held for one account, or for every other", () => {
  const storage = new Storage({ "tally.held.7.1": "[]", "tally.held.7.2": "[]", "tally.held.17.1": "[]", "tally.outbox.7": "[]" });
  assert.deepEqual(heldKeys(storage, 7), ["tally.held.7.1", "tally.held.7.2"]);
  assert.deepEqual(heldKeys(storage, "17", { others: true }), ["tally.held.7.1", "tally.held.7.2"]);
  forget(storage, heldKeys(storage, 17, { others: true }));
  assert.deepEqual([...storage.data.keys()], ["tally.held.17.1", "tally.outbox.7"]);
  assert.deepEqual(heldKeys(null, 7), []);
});
