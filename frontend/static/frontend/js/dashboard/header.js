// The project's name, status (pause / resume), invite link and code, and its deletion (after
// the manager types its name in the page).
import { $, toast } from "../lib/dom.js";
import { api } from "../lib/http.js";
import { copyButton } from "./ui.js";

export function mountHeader({ base, store, fail }) {
  function render(project) {
    $("p-name").textContent = project.name;
    const status = $("p-status");
    status.textContent = project.status[0].toUpperCase() + project.status.slice(1);
    status.className = `pill pill-${project.status}`;
    const pause = $("pause");
    pause.textContent = project.status === "paused" ? "Resume" : "Pause";
    pause.hidden = project.status === "archived";
    $("invite-link").value = new URL(`/join/${project.invite_code}`, window.location.origin).href;
    $("invite-code").value = project.invite_code;
  }
  store.watch("project", render);

  $("pause").addEventListener("click", async () => {
    const status = store.get("project").status === "paused" ? "active" : "paused";
    try {
      store.set("project", await api("PATCH", `${base}/`, { status }));
      toast(status === "paused" ? "Paused: no new tasks are served." : "Resumed.");
    } catch (error) {
      fail(error);
    }
  });

  copyButton($("copy-link"), $("invite-link"), "Link copied.");

  $("rotate").addEventListener("click", async () => {
    if (!window.confirm("Make a new code? The old link will stop working.")) return;
    try {
      const { invite_code } = await api("POST", `${base}/invite/`);
      store.set("project", { ...store.get("project"), invite_code });
      toast("New invite code made.");
    } catch (error) {
      fail(error);
    }
  });

  // Deleting: the page asks for the project's name in place (no browser prompt), says when it
  // does not match, and says what happened before it leaves for the project list.
  const confirmBox = $("delete-confirm");
  const deleteStatus = $("delete-status");
  function askToDelete(open) {
    confirmBox.hidden = !open;
    $("delete-project").setAttribute("aria-expanded", String(open));
    deleteStatus.textContent = "";
    $("delete-name").value = "";
    if (open) {
      $("delete-expected").textContent = store.get("project").name;
      $("delete-name").focus();
    }
  }
  $("delete-project").addEventListener("click", () => askToDelete(confirmBox.hidden));
  $("delete-cancel").addEventListener("click", () => askToDelete(false));
  confirmBox.addEventListener("submit", async (event) => {
    event.preventDefault();
    const { name } = store.get("project");
    if ($("delete-name").value.trim() !== name.trim()) {
      deleteStatus.textContent = "The name does not match: nothing was deleted.";
      return;
    }
    $("delete-go").disabled = true;
    deleteStatus.textContent = "Deleting…";
    try {
      await api("DELETE", `${base}/`);
      deleteStatus.textContent = `“${name}” is deleted. Taking you to your projects…`;
      setTimeout(() => window.location.assign("/"), 1500);
    } catch (error) {
      $("delete-go").disabled = false;
      deleteStatus.textContent = "";
      fail(error);
    }
  });

  return {
    async load() {
      store.set("project", await api("GET", `${base}/`));
    },
  };
}
