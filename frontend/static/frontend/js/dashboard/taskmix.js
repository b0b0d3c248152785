// The task mix: the share of verification tasks ("are these tags right?") served once the project
// has a model, 0 for count tasks only, fixed by the manager or chosen automatically by each model
// version (verification_share null: by value per second). A change takes effect with the next
// model version (each retrain makes that version's verification tasks).
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

// The words under the mode select: the share the latest model version chose.
export function autoShareText(project) {
  if (project.verification_version == null) return "No model yet: count tasks only.";
  return `The latest model chose ${Math.round(100 * (project.verification_share_auto ?? 0))} % verification tasks.`;
}

export function mountTaskMix({ base, store }) {
  const input = $("mix-share");
  const mode = $("mix-mode");
  const follow = () => {
    input.disabled = mode.value === "auto";
  };
  mode.addEventListener("change", follow);
  function error(text) {
    $("mix-error").textContent = text || "";
    $("mix-error").hidden = !text;
    if (text) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
  store.watch("project", (project) => {
    if (document.activeElement !== mode) mode.value = project.verification_share == null ? "auto" : "fixed";
    if (document.activeElement !== input && project.verification_share != null) {
      input.value = String(project.verification_share);
    }
    $("mix-auto-share").textContent = autoShareText(project);
    follow();
    $("mix-private").hidden = !project.private;
  });
  $("task-mix").addEventListener("submit", async (event) => {
    event.preventDefault();
    const { share, error: message } = mode.value === "auto" ? { share: null } : parseShare(input.value);
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
