// The corpus form's pieces that need no browser: the format a file's name suggests, error
// messages as sentences, and the settings shown as fixed on the dashboard.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fixedSettings } from "../../../frontend/static/frontend/js/dashboard/corpus.js";
import { guessFormat } from "../../../frontend/static/frontend/js/lib/corpus_form.js";
import { ApiError, asSentence, describe } from "../../../frontend/static/frontend/js/lib/http.js";

test("the format is guessed from the file's name, gzip or not", () => {
  assert.equal(guessFormat("en_ewt-ud-dev.conllu.gz"), "conllu");
  assert.equal(guessFormat("LICENSE.TXT"), "text");
  assert.equal(guessFormat("c.jsonl"), "jsonl");
  assert.equal(guessFormat("notes.md"), null);
});

test("error messages run as sentences, each with its full stop", () => {
  assert.equal(asSentence("line 3: expected 10 tab-separated columns, found 6"), "line 3: expected 10 tab-separated columns, found 6.");
  assert.equal(asSentence("Is it?"), "Is it?");
  const error = new ApiError(400, { error: { code: "invalid", message: "The request is not valid", fields: { name: ["Required"] } } });
  assert.equal(describe(error), "The request is not valid. name: Required.");
  assert.equal(`${describe(new ApiError(400, { error: { message: "line 6: found 6" } }))} Try again.`, "line 6: found 6. Try again.");
});

test("the dashboard shows the language and tag names as fixed once there are sentences", () => {
  const project = { language: "fr", frozen: ["language", "tags"], tags: [{ name: "NOUN" }, { name: "VERB" }] };
  const shown = fixedSettings(project, { fr: "French" });
  assert.deepEqual(shown[0].slice(0, 2), ["Language", "French"]);
  assert.match(shown[0][2], /fixed/);
  assert.deepEqual(shown[1].slice(0, 2), ["Tags", "NOUN VERB"]);
  assert.equal(fixedSettings({ ...project, frozen: [] }, {})[1][2], "");
});
