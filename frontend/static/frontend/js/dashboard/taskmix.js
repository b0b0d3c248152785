// The task mix: the share of verification tasks ("are these tags right?") served once the project
// has a model, 0 for count tasks only. A change takes effect with the next model version (each
// retrain makes that version's verification tasks).
import { $, toast } from "../lib/dom.js";
import { api, describe } from "../lib/http.js";

// The share typed in the form (a number from 0 to 1), or an error message.
export function parseShare(raw) {
  const text = String(raw).trim();
  const share = Number(text);
  if (text === "" || !Number.isFinite(share) || share < 0 || share > 1) {
    return { error: "A number from 0 (count tasks only) to 1 (verification tasks only, once there is a model)." };
  }
  return { share };
}

export function mountTaskMix({ base, store }) {
  const input = $("mix-share");
  function error(text) {
    $("mix-error").textContent = text || "";
    $("mix-error").hidden = !text;
    if (text) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
  store.watch("project", (project) => {
    if (document.activeElement !== input) input.value = String(project.verification_share);
    $("mix-private").hidden = !project.private;
  });
  $("task-mix").addEventListener("submit", async (event) => {
    event.preventDefault();
    const { share, error: message } = parseShare(input.value);
    if (message) {
      error(message);
      input.focus();
      return;
    }
    error("");
    try {
      store.set("project", await api("PATCH", `${base}/`, { verification_share: share }));
      toast("Task mix saved: it applies from the next model version.");
    } catch (failure) {
      error(describe(failure));
    }
  });
}
