// "Try the model": tag a sentence typed by the manager with the current model. While the server
// works the button is disabled and says so (the first call of a process may load the tokenizer
// and the model; the dashboard has the server load them as it opens: learning/predictions.py).
import { $, el, toast } from "../lib/dom.js";
import { pct } from "../lib/format.js";
import { api, describe } from "../lib/http.js";
import { empty } from "./ui.js";

function busy(on) {
  const button = $("try").querySelector("button[type=submit]");
  button.disabled = on;
  button.textContent = on ? "Tagging…" : "Tag it";
  $("try-out").setAttribute("aria-busy", String(on));
  if (on) $("try-out").replaceChildren(el("p", { class: "empty busy", text: "Tagging your sentence…" }));
}

export function mountTry({ base }) {
  $("try").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("try-text").value.trim();
    if (!text || $("try").querySelector("button[type=submit]").disabled) return;
    const out = $("try-out");
    busy(true);
    try {
      const result = await api("POST", `${base}/predict/`, { text });
      const words = result.tokens.map((token, i) =>
        el("li", {}, el("span", { class: "w", text: token }), el("span", { class: "t", text: result.tags[i] }), el("span", { class: "p", text: pct(result.probabilities[i]) })),
      );
      out.replaceChildren(el("ol", { class: "predicted", "aria-label": `Tags from model version ${result.version}` }, ...words));
    } catch (error) {
      out.replaceChildren(empty(error.code === "no_model" ? "No model yet: retrain once there are answers." : describe(error)));
    } finally {
      busy(false);
    }
  });
}

// The manager's switch for annotators trying the model (`annotators_may_predict`), saved as it
// changes; the server keeps a task's own words out of it (docs/decisions/044-reading-the-model-off.md).
export function mountPredictAccess({ base, store }) {
  const box = $("may-predict");
  const error = (text) => {
    $("may-predict-error").textContent = text || "";
    $("may-predict-error").hidden = !text;
  };
  store.watch("project", (project) => {
    box.checked = Boolean(project.annotators_may_predict);
  });
  $("predict-access").addEventListener("submit", (event) => event.preventDefault());
  box.addEventListener("change", async () => {
    const wanted = box.checked;
    box.disabled = true;
    error("");
    try {
      store.set("project", await api("PATCH", `${base}/`, { annotators_may_predict: wanted }));
      toast(wanted ? "Annotators may now try the model (never on this project's sentences)." : "Only managers may try the model now.");
    } catch (failure) {
      box.checked = !wanted;
      error(describe(failure));
    } finally {
      box.disabled = false;
    }
  });
}
