// The sign-out form of every page's top bar. Before the browser is signed out, the answers the
// account's outbox holds are sent while they still can be, and what the device keeps of the
// account (the tasks held, the annotator page's offline copies) is forgotten; the server's
// response clears the rest (Clear-Site-Data, frontend TallyLogoutView). Answers that could not
// be sent stay, bound to their account: the server takes them from no one else, and they go
// when that account signs in here again (`outbox=kept` asks the server to leave the storage).
// docs/decisions/045-shared-phone.md.
import { createOutbox, createSender } from "./annotate/outbox.js";
import { forget, heldKeys, signedIn } from "./lib/device.js";
import { api } from "./lib/http.js";

const SEND_FOR_MS = 8000; // the longest a sign-out waits on a poor connection

// The annotator page's copies on this device: the service worker's caches and the worker.
async function forgetOfflineCopies() {
  try {
    for (const name of await caches.keys()) if (name.startsWith("tally-")) await caches.delete(name);
  } catch {
    /* no Cache API (insecure origin) */
  }
  try {
    for (const registration of await navigator.serviceWorker.getRegistrations()) await registration.unregister();
  } catch {
    /* no service worker */
  }
}

async function sendAndForget(form) {
  const me = signedIn();
  let storage = null;
  try {
    storage = window.localStorage;
  } catch {
    /* no storage: nothing kept */
  }
  if (me && storage) {
    const key = `tally.outbox.${me.user}`;
    const outbox = createOutbox(storage, key);
    if (outbox.size()) {
      const sender = createSender({ outbox, owner: me.user, post: (body) => api("POST", "/api/observations/", body) });
      await Promise.race([sender.flush(), new Promise((resolve) => setTimeout(resolve, SEND_FOR_MS))]);
      sender.stop();
    }
    forget(storage, heldKeys(storage, me.user));
    if (outbox.size() === 0) {
      forget(storage, [key]);
    } else {
      const kept = Object.assign(document.createElement("input"), { type: "hidden", name: "outbox", value: "kept" });
      form.append(kept);
    }
  }
  await forgetOfflineCopies();
}

for (const form of document.querySelectorAll("form.signout")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    if (button.disabled) return;
    button.disabled = true;
    try {
      await sendAndForget(form);
    } finally {
      form.submit(); // not a submit event: signed out however the sending went
    }
  });
}
