// Corpus: the files imported so far, the settings the corpus has fixed (language, tag names),
// and "Add sentences": the new-project page's corpus fields (lib/corpus_form.js). A file the
// project already has is asked about before it is imported again. A large file is imported by a
// worker (the API answers 202 and a job): its progress is shown here, with a Cancel button,
// until it ends.
import { mountCorpusFields } from "../lib/corpus_form.js";
import { $, el, toast } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { api, describe } from "../lib/http.js";

// What a fixed setting shows: its value, read-only, and why it cannot change. A private project's
// privacy level and mechanism, and what privacy does to its numbers, are shown as text.
export function fixedSettings(project, languages) {
  const frozen = new Set(project.frozen || []);
  const why = "fixed: the project has sentences";
  const rows = [
    ["Language", languages[project.language] || project.language, frozen.has("language") ? why : "changes with the next import"],
    ["Tags", project.tags.map((tag) => tag.name).join(" "), frozen.has("tags") ? `${why} (guidelines can change)` : ""],
  ];
  if (project.private) {
    rows.push(
      ["Privacy", `private · α = ${project.alpha} per answer · ${project.mechanism} mechanism`, frozen.has("alpha") ? "fixed: the project has answers" : "fixed once the first answer exists"],
      [
        "Counts",
        "privatized: each answer is randomized on the annotator's phone; observations and exports hold the released values only, and annotator scores and check scores are estimated from them (they need more answers)",
        "",
      ],
    );
  }
  return rows;
}

export function mountCorpus({ base, store, fail, reloadStats, reloadProject }) {
  const fields = mountCorpusFields("up-", { language: () => store.get("project")?.language || "en" });
  const languages = JSON.parse($("languages").textContent);

  store.watch("project", (project) => {
    $("fixed-settings").replaceChildren(
      ...fixedSettings(project, languages).flatMap(([name, value, note]) => [
        el("dt", { text: name }),
        el("dd", {}, el("span", { text: value }), note ? el("span", { class: "muted small", text: ` (${note})` }) : null),
      ]),
    );
  });

  async function load() {
    const [page] = await Promise.all([api("GET", `${base}/corpus/`), loadJobs()]);
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

  // Import jobs: the ones running, and how the last ones ended, polled while any runs.
  const JOB_POLL_MS = 2000;
  const shownJobs = 5;
  let watching = null; // the timer of the next poll
  const seen = new Map(); // job id -> status at the last poll

  function jobLine(job) {
    const name = job.filename || job.format;
    if (job.status === "queued" || job.status === "running") {
      const about = job.sentences_expected ? ` of about ${fmt.format(job.sentences_expected)}` : "";
      const doing = job.status === "queued" ? "waiting for a worker" : job.cancel_requested ? "stopping" : `${fmt.format(job.sentences_read)}${about} sentences read`;
      const bar = el("progress", { max: "1", "aria-label": `Import of ${name}` });
      if (job.status === "running" && job.progress !== null) bar.value = job.progress;
      const cancel = el("button", { type: "button", class: "cancel-import", text: "Cancel" });
      cancel.disabled = job.cancel_requested;
      cancel.addEventListener("click", async () => {
        cancel.disabled = true;
        try {
          await api("POST", `${job.url}cancel/`);
          toast("Import cancelled: nothing of it is kept.");
        } catch (error) {
          toast(describe(error));
        }
        await loadJobs();
      });
      return el("li", { "data-job": String(job.id) }, el("b", { text: name }), ` · importing: ${doing} `, bar, " ", cancel);
    }
    if (job.status === "failed") {
      return el("li", { class: "error", "data-job": String(job.id) }, el("b", { text: name }), ` · not imported: ${job.error ? job.error.message : "failed"}`);
    }
    if (job.status === "cancelled") return el("li", { class: "muted", "data-job": String(job.id) }, el("b", { text: name }), " · cancelled, nothing imported");
    return null; // done: the import is in the list below
  }

  async function loadJobs() {
    const jobs = (await api("GET", `${base}/corpus/jobs/`)).results.slice(0, shownJobs);
    let finished = false;
    for (const job of jobs) {
      const before = seen.get(job.id);
      if (before && before !== job.status && !["queued", "running"].includes(job.status)) {
        finished = true;
        if (job.status === "done") toast(`${job.filename || "The file"}: ${fmt.format(job.sentences_read)} sentences added.`);
      }
      seen.set(job.id, job.status);
    }
    const lines = jobs.map(jobLine).filter(Boolean);
    $("import-jobs").replaceChildren(lines.length ? el("ul", { class: "import-jobs" }, ...lines) : "");
    clearTimeout(watching);
    watching = jobs.some((job) => ["queued", "running"].includes(job.status)) ? setTimeout(() => loadJobs().catch(fail), JOB_POLL_MS) : null;
    if (finished) await Promise.all([load(), reloadStats(), reloadProject()]);
  }

  function showError(text) {
    $("up-error").hidden = !text;
    $("up-error").textContent = text || "";
  }

  async function upload(allowDuplicate) {
    const body = fields.appendTo(new FormData());
    if (allowDuplicate) body.append("allow_duplicate", "true");
    return api("POST", `${base}/corpus/`, body);
  }

  $("upload").addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    if (!fields.file()) return showError("Choose a corpus file.");
    $("up-submit").disabled = true;
    try {
      let done;
      try {
        done = await upload(false);
      } catch (error) {
        if (error.code !== "duplicate_corpus") throw error;
        if (!window.confirm(`${error.message.split(" Import it again")[0]} Import it again?`)) {
          toast("Not imported again.");
          return;
        }
        done = await upload(true);
      }
      if (done.status) toast("A large file: it is imported in the background; its progress is shown above.");
      else toast(`${fmt.format(done.sentences)} sentences added.`);
      fields.reset();
      $("upload").reset();
      await Promise.all([load(), reloadStats(), reloadProject()]);
    } catch (error) {
      if (error.signedOut) fail(error);
      else showError(describe(error));
    } finally {
      $("up-submit").disabled = false;
    }
  });

  return { load };
}
