// The project's name, status (pause / resume), invite link and code, and its deletion (after
// the manager types its name).
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

  $("delete-project").addEventListener("click", async () => {
    const { name } = store.get("project");
    const typed = window.prompt(`This deletes "${name}" with all its sentences, answers and models, for good. Type the project's name to delete it.`);
    if (typed === null) return;
    if (typed.trim() !== name.trim()) {
      toast("The name did not match: nothing was deleted.");
      return;
    }
    try {
      await api("DELETE", `${base}/`);
      window.location.assign("/");
    } catch (error) {
      fail(error);
    }
  });

  return {
    async load() {
      store.set("project", await api("GET", `${base}/`));
    },
  };
}
