// The outbox: answers kept on the device until the server has them, and the sender that empties
// it. An answer is written here before it is sent and removed only when the server has answered
// for it; it is resent with the same idempotency key, so the server stores it exactly once however
// often the network fails in between. No DOM: the page passes in its storage and its callbacks.

// `storage`: a localStorage-like object (getItem/setItem), or null. When it fails (some private
// modes), the answers are kept in memory for the page's life.
export function createOutbox(storage, key) {
  let memory = [];
  const all = () => {
    try {
      const saved = storage && storage.getItem(key);
      return saved ? JSON.parse(saved) : memory;
    } catch {
      return memory;
    }
  };
  const write = (items) => {
    memory = items;
    try {
      storage.setItem(key, JSON.stringify(items));
    } catch {
      /* memory keeps them */
    }
  };
  return {
    all,
    size: () => all().length,
    add(item) {
      write([...all(), item]);
    },
    remove(idempotencyKey) {
      write(all().filter((item) => item.idempotency_key !== idempotencyKey));
    },
    has(assignment) {
      return all().some((item) => item.assignment === assignment);
    },
    // Deletes, unsent, the answers `unfit(item)`; returns how many.
    discard(unfit) {
      const items = all();
      const kept = items.filter((item) => !unfit(item));
      if (kept.length !== items.length) write(kept);
      return items.length - kept.length;
    },
  };
}

export function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// What to do with an answer whose sending failed with `error` (an ApiError).
//   "offline": no connection: keep it, stop for now.   "session": signed out: keep it, stop.
//   "later":   server busy (429, 5xx): keep it, retry.  "refused": the server will never take
//   it (400, 404, 409): drop it, or it would block the answers behind it.
export function outcome(error) {
  if (error.status === 0) return "offline";
  if (error.status === 401 || error.status === 403) return "session";
  if (error.status === 429 || error.status >= 500) return "later";
  return "refused";
}

// An answer kept before answers named their account (`device_user`) is its outbox's owner's.
export function ownedBy(item, owner) {
  return owner === null || item.device_user === undefined || String(item.device_user) === String(owner);
}

export const FIRST_RETRY_MS = 2000;
export const LAST_RETRY_MS = 30000;

// Sends the outbox, oldest answer first; retries with backoff (2 s, 4 s, … 30 s) while answers
// wait. `post(body, item)` sends one answer and resolves to the server's reply or rejects with
// an ApiError. Callbacks (all optional): sent(item, reply), reached() (the server answered),
// offline(), signedOut(), refused(item, error), changed() (the number waiting may have changed),
// retried() (a retry emptied the outbox). `owner`: the account the page is signed in as; an
// answer given as another (its `device_user`) is left where it is, never sent as this one's.
export function createSender({ outbox, post, owner = null, on = {}, timers = globalThis }) {
  const emit = (name, ...args) => on[name] && on[name](...args);
  let flushing = null;
  let timer = 0;
  let delay = FIRST_RETRY_MS;
  let stopped = false;

  // True when the outbox is empty afterwards.
  async function sendAll() {
    for (const item of outbox.all()) {
      if (!ownedBy(item, owner)) continue;
      const { project, kind, device_session, ...body } = item; // kept on the device, not sent
      try {
        const reply = await post(body, item);
        outbox.remove(item.idempotency_key);
        emit("reached");
        emit("sent", item, reply);
      } catch (error) {
        const what = outcome(error);
        if (what === "offline") {
          emit("offline");
          return false;
        }
        if (what === "session") {
          stop();
          emit("signedOut");
          return false;
        }
        if (what === "later") return false;
        outbox.remove(item.idempotency_key);
        emit("refused", item, error);
      }
      emit("changed");
    }
    return outbox.all().every((item) => !ownedBy(item, owner));
  }

  function schedule() {
    if (timer || stopped) return;
    timer = timers.setTimeout(async () => {
      timer = 0;
      delay = Math.min(2 * delay, LAST_RETRY_MS); // for the retry after this one, if it fails
      if (await flush()) {
        delay = FIRST_RETRY_MS;
        emit("retried");
      }
    }, delay);
  }

  // One sending at a time: a second call while one runs gets the same promise.
  function flush() {
    if (stopped) return Promise.resolve(false);
    if (!flushing) {
      flushing = sendAll().finally(() => {
        flushing = null;
        emit("changed");
        if (outbox.all().some((item) => ownedBy(item, owner))) schedule();
      });
    }
    return flushing;
  }

  function stop() {
    stopped = true;
    timers.clearTimeout(timer);
    timer = 0;
  }

  return {
    flush,
    stop,
    // The connection is back: start the backoff over and send now.
    online() {
      delay = FIRST_RETRY_MS;
      return flush();
    },
    get retryDelay() {
      return delay;
    },
  };
}
