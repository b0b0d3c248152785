// Webhooks: the list (on/off, delete, deliveries shown on demand and polled while one is in
// flight), the form to add one, and its secret shown once.
import { $, el, toast } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { api, describe, getOrNull } from "../lib/http.js";
import { copyButton, empty, SHORT_TIME, statusPill, when } from "./ui.js";

const DELIVERY_CLASS = { failed: "bad", retrying: "warn", pending: "warn", succeeded: "good" };

function deliveryItem(d) {
  const facts = [`v${d.version ?? "–"}`, `${d.attempts} ${d.attempts === 1 ? "attempt" : "attempts"}`];
  if (d.response_code !== null && d.response_code !== undefined) facts.push(`HTTP ${d.response_code}`);
  const times = [el("span", {}, "Created ", when(d.created_at, SHORT_TIME))];
  if (d.last_attempt_at) times.push(el("span", {}, "Last attempt ", when(d.last_attempt_at, SHORT_TIME)));
  if (d.next_attempt_at && d.status !== "succeeded" && d.status !== "failed") times.push(el("span", {}, "Next attempt ", when(d.next_attempt_at, SHORT_TIME)));
  if (d.delivered_at) times.push(el("span", {}, "Delivered ", when(d.delivered_at, SHORT_TIME)));
  return el(
    "li",
    { class: `delivery ${DELIVERY_CLASS[d.status] || ""}`, "data-delivery": String(d.id) },
    el("p", { class: "delivery-head" }, statusPill(d.status), " ", el("span", { class: "delivery-facts", text: facts.join(" · ") })),
    d.error ? el("p", { class: "error-text", text: d.error }) : null,
    el("p", { class: "delivery-times help" }, ...times.flatMap((t, i) => (i ? [" · ", t] : [t]))),
  );
}

function hookError(text) {
  $("hook-error").textContent = text || "";
  $("hook-error").hidden = !text;
}

export function mountWebhooks({ base, fail }) {
  let hooks = [];
  const open = new Set(); // webhooks whose deliveries are shown
  let timer = 0;

  async function load() {
    clearTimeout(timer);
    const page = await getOrNull(`${base}/webhooks/?limit=50`);
    if (!page) return;
    hooks = page.results;
    render();
    await Promise.all(hooks.filter((hook) => open.has(hook.id)).map(loadDeliveries));
    // A delivery in flight: look again soon.
    if (hooks.some((hook) => hook.last_delivery && ["pending", "retrying"].includes(hook.last_delivery.status))) {
      timer = setTimeout(() => load().catch(() => {}), 5000);
    }
  }

  function render() {
    for (const id of [...open]) if (!hooks.some((hook) => hook.id === id)) open.delete(id);
    $("hooks").replaceChildren(hooks.length ? el("ul", { class: "hooks" }, ...hooks.map(hookItem)) : empty("No webhooks yet."));
  }

  function hookItem(hook) {
    const last = hook.last_delivery;
    const shown = open.has(hook.id);
    const panel = el("div", { id: `deliveries-${hook.id}`, class: "deliveries" });
    panel.hidden = !shown;
    const toggle = el("button", { type: "button", class: "show-deliveries", "aria-expanded": String(shown), "aria-controls": panel.id, text: shown ? "Hide deliveries" : "Deliveries" });
    toggle.addEventListener("click", () => {
      const showing = !open.has(hook.id);
      if (showing) open.add(hook.id);
      else open.delete(hook.id);
      panel.hidden = !showing;
      toggle.textContent = showing ? "Hide deliveries" : "Deliveries";
      toggle.setAttribute("aria-expanded", String(showing));
      if (!showing) return;
      panel.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
      loadDeliveries(hook).catch((error) => panel.replaceChildren(el("p", { class: "error", text: describe(error) })));
    });
    return el(
      "li",
      { class: `hook${last && last.status === "failed" ? " bad" : ""}`, "data-hook": String(hook.id) },
      el("code", { class: "hook-url", text: hook.url }),
      el(
        "p",
        { class: "hook-meta" },
        el("span", { class: `pill ${hook.active ? "pill-active" : "pill-off"}`, text: hook.active ? "active" : "off" }),
        " ",
        ...(last ? ["Last delivery: ", statusPill(last.status), " ", when(last.at)] : [el("span", { class: "muted", text: "No deliveries yet." })]),
      ),
      el(
        "div",
        { class: "hook-actions" },
        toggle,
        el("button", { type: "button", class: "toggle-active", text: hook.active ? "Turn off" : "Turn on", onclick: () => setActive(hook, !hook.active) }),
        el("button", { type: "button", class: "danger delete-hook", text: "Delete", onclick: () => remove(hook) }),
      ),
      panel,
    );
  }

  async function setActive(hook, active) {
    try {
      await api("PATCH", `${base}/webhooks/${hook.id}/`, { active });
      toast(active ? "Webhook turned on." : "Webhook turned off: it gets no deliveries.");
      await load();
    } catch (error) {
      fail(error);
    }
  }

  async function remove(hook) {
    if (!window.confirm(`Delete the webhook to ${hook.url}? Its delivery log is deleted too.`)) return;
    try {
      await api("DELETE", `${base}/webhooks/${hook.id}/`);
      open.delete(hook.id);
      toast("Webhook deleted.");
      await load();
    } catch (error) {
      fail(error);
    }
  }

  async function loadDeliveries(hook) {
    const panel = document.getElementById(`deliveries-${hook.id}`);
    const page = await api("GET", `${base}/webhooks/${hook.id}/deliveries/?limit=20`);
    if (!panel) return;
    if (!page.results.length) {
      panel.replaceChildren(el("p", { class: "muted", text: "No deliveries yet: one is sent after every new model." }));
      return;
    }
    const more = page.count > page.results.length ? el("p", { class: "help", text: `The newest ${page.results.length} of ${fmt.format(page.count)} deliveries.` }) : null;
    panel.replaceChildren(el("ul", { class: "delivery-list", "aria-label": `Deliveries to ${hook.url}` }, ...page.results.map(deliveryItem)), ...(more ? [more] : []));
  }

  $("hook-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const url = $("hook-url").value.trim();
    const secret = $("hook-secret").value;
    if (!/^https?:\/\/\S+$/i.test(url)) {
      hookError("Enter an http:// or https:// URL.");
      $("hook-url").focus();
      return;
    }
    if (secret && (secret.length < 16 || secret.length > 200)) {
      hookError("A secret has 16 to 200 characters (or leave it empty).");
      $("hook-secret").focus();
      return;
    }
    hookError("");
    const submit = $("hook-form").querySelector("button[type=submit]");
    submit.disabled = true;
    try {
      const made = await api("POST", `${base}/webhooks/`, secret ? { url, secret } : { url });
      $("hook-form").reset();
      $("new-secret-value").value = made.secret;
      $("new-secret").hidden = false;
      $("new-secret-value").focus();
      $("new-secret-value").select();
      await load();
    } catch (error) {
      // The API's reasons (e.g. an internal address) are in `fields`.
      const reasons = error.fields ? Object.values(error.fields).flat().join(" ") : "";
      hookError(reasons || describe(error));
    } finally {
      submit.disabled = false;
    }
  });

  copyButton($("copy-secret"), $("new-secret-value"), "Secret copied.");

  $("secret-done").addEventListener("click", () => {
    $("new-secret-value").value = "";
    $("new-secret").hidden = true;
  });

  return { load };
}
