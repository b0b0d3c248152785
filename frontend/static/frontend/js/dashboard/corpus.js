// Corpus: the files imported so far, and a form to add sentences.
import { $, el, toast } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { api } from "../lib/http.js";

export function mountCorpus({ base, fail, reloadStats }) {
  async function load() {
    const page = await api("GET", `${base}/corpus/`);
    const items = page.results.map((c) =>
      el(
        "li",
        {},
        el("b", { text: c.filename || c.format }),
        ` · ${fmt.format(c.sentences)} sentences (${fmt.format(c.splits.train)} to annotate, ${fmt.format(c.splits.evaluation)} held out, ${fmt.format(c.splits.gold_check)} checks)`,
      ),
    );
    $("imports").replaceChildren(items.length ? el("ul", {}, ...items) : el("p", { class: "muted", text: "No corpus yet." }));
  }

  $("upload").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("up-file").files[0];
    if (!file) return;
    const body = new FormData();
    body.append("file", file);
    body.append("format", $("up-format").value);
    try {
      const done = await api("POST", `${base}/corpus/`, body);
      toast(`${fmt.format(done.sentences)} sentences added.`);
      $("upload").reset();
      await Promise.all([load(), reloadStats()]);
    } catch (error) {
      fail(error);
    }
  });

  return { load };
}
