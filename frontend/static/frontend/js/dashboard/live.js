// Live updates: the project's event stream. A new model version (announced on connecting, or
// pushed after a retrain) makes the page reload what depends on it.
import { $, toast } from "../lib/dom.js";
import { pct } from "../lib/format.js";

// `version()`: the version of the report on screen (or null); `refresh()`: reloads the model's
// panels.
export function connectLive({ base, version, refresh }) {
  if (!window.EventSource) return;
  const live = $("live");
  const source = new EventSource(`${base}/events/`);
  // A refused stream (429: too many open; 503: the event server is full) is not reconnected by
  // EventSource: try again a while later.
  source.addEventListener("error", () => {
    if (source.readyState !== EventSource.CLOSED) return;
    live.textContent = "Not live";
    setTimeout(() => connectLive({ base, version, refresh }), 30000 + Math.random() * 30000);
  });
  source.addEventListener("open", () => {
    live.textContent = "Live";
    live.classList.add("on");
  });
  source.addEventListener("error", () => {
    // The stream ends every ~30 s and EventSource reconnects by itself.
    live.textContent = "Reconnecting…";
    live.classList.remove("on");
  });
  source.addEventListener("hello", (event) => {
    const data = JSON.parse(event.data);
    if (data.version !== null && version() !== data.version) refresh();
  });
  source.addEventListener("report", (event) => {
    const data = JSON.parse(event.data);
    if (version() !== data.version) {
      refresh();
      toast(`New model v${data.version}${data.accuracy === null ? "" : `: ${pct(data.accuracy)} accuracy`}.`);
    }
  });
}
