// Invite link, signed in: join through the API, then go straight to the annotator page. A private
// project's invitee first reads what private means (the page says it) and taps Join.
import { api, describe } from "./lib/http.js";

const box = document.getElementById("join");
const status = document.getElementById("join-status");

if (box.dataset.private) {
  const go = document.getElementById("join-go");
  await new Promise((resolve) => go.addEventListener("click", resolve, { once: true }));
  go.disabled = true;
  status.textContent = "Joining…";
}

try {
  const joined = await api("POST", "/api/join/", { code: box.dataset.code });
  status.textContent = `You joined “${joined.project.name}”. Opening your first task…`;
  const target = joined.role === "manager" ? `/projects/${joined.project.id}/` : `/annotate/${joined.project.id}/`;
  window.location.replace(target);
} catch (error) {
  status.textContent =
    error.status === 404
      ? "This invite code is not valid any more. Ask the project manager for a new link."
      : error.code === "project_not_active"
        ? "This project is archived and takes no new annotators."
        : describe(error);
  document.getElementById("join-retry").hidden = false;
}
