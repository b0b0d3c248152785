// "Try the model": tag a sentence typed by the manager with the current model.
import { $, el } from "../lib/dom.js";
import { pct } from "../lib/format.js";
import { api, describe } from "../lib/http.js";
import { empty } from "./ui.js";

export function mountTry({ base }) {
  $("try").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("try-text").value.trim();
    if (!text) return;
    const out = $("try-out");
    try {
      const result = await api("POST", `${base}/predict/`, { text });
      const words = result.tokens.map((token, i) =>
        el("li", {}, el("span", { class: "w", text: token }), el("span", { class: "t", text: result.tags[i] }), el("span", { class: "p", text: pct(result.probabilities[i]) })),
      );
      out.replaceChildren(el("ol", { class: "predicted", "aria-label": `Tags from model version ${result.version}` }, ...words));
    } catch (error) {
      out.replaceChildren(empty(error.code === "no_model" ? "No model yet: retrain once there are answers." : describe(error)));
    }
  });
}
