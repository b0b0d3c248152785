// What several panels of the dashboard show: the project, its stats, its members and the latest
// model report. A panel that loads one of them sets it here; the panels that show it are called
// with the new value. No DOM.

export function createStore() {
  const values = new Map();
  const watchers = new Map();
  return {
    get: (key) => values.get(key) ?? null,
    set(key, value) {
      values.set(key, value);
      for (const watcher of watchers.get(key) || []) watcher(value);
    },
    // Calls `watcher` whenever one of `keys` is set.
    watch(keys, watcher) {
      for (const key of [].concat(keys)) watchers.set(key, [...(watchers.get(key) || []), watcher]);
    },
  };
}
