// The tasks the page holds (the one on screen and those leased ahead), kept in the device's
// storage so that a page reloaded without a connection (served by the service worker,
// annotate-worker.js) can go on answering them; their answers wait in the outbox as any others.
// No DOM.

// `storage`: a localStorage-like object, or null (nothing is kept then).
export function createShelf(storage, key) {
  return {
    save(tasks) {
      try {
        storage?.setItem(key, JSON.stringify(tasks));
      } catch {
        /* storage full or refused: a reload offline then starts empty */
      }
    },
    // The tasks kept whose lease has not run out by `now` (ms, the server's clock) and that
    // `isAnswered(assignment)` does not claim.
    load({ now, isAnswered }) {
      let tasks = [];
      try {
        tasks = JSON.parse(storage?.getItem(key) || "[]");
      } catch {
        return [];
      }
      if (!Array.isArray(tasks)) return [];
      return tasks.filter((task) => task && Date.parse(task.expires_at) > now && !isAnswered(task.assignment));
    },
  };
}

// Registers the service worker and hands it what this page loaded before it was served by it
// (the page, its stylesheet, its modules), so that the next start without a connection finds them.
export async function keepForOffline(workerUrl) {
  if (!("serviceWorker" in navigator) || !workerUrl) return;
  try {
    await navigator.serviceWorker.register(workerUrl); // its folder, /annotate/, is its scope
    const registration = await navigator.serviceWorker.ready;
    const loaded = performance.getEntriesByType("resource").map((entry) => entry.name);
    registration.active?.postMessage({ keep: [location.href, ...loaded] });
  } catch {
    /* no service worker (private mode, insecure origin): the page works online as before */
  }
}
