// Words as written (issue 26, item 5): a written word made of several ("au" = "à" + "le") is
// shown whole unless the window's edge cuts it, and each one inside the window says how it counts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { countingNotes, writtenPieces } from "../../../frontend/static/frontend/js/annotate/sentence.js";

const TOKENS = ["Il", "va", "à", "le", "marché", "de", "les", "fleurs"];
const MULTIWORD = [[2, 2, "au"], [5, 2, "des"]];

test("contractions are shown as written, and counted inside the window", () => {
  const window = { start: 1, length: 4 };
  const pieces = writtenPieces(TOKENS, window, MULTIWORD);
  assert.deepEqual(pieces.map((p) => p.text), ["Il", "va", "au", "marché", "des", "fleurs"]);
  assert.deepEqual(countingNotes(pieces, window), ["“au” = à + le: counts as 2 words, one tag each"]);
});

test("a contraction the window's edge cuts is shown as its words", () => {
  const window = { start: 3, length: 2 }; // "le marché"
  const pieces = writtenPieces(TOKENS, window, MULTIWORD);
  assert.deepEqual(pieces.map((p) => p.text), ["Il", "va", "à", "le", "marché", "des", "fleurs"]);
  assert.deepEqual(countingNotes(pieces, window), []);
});

test("without multiword tokens the words are the tokens", () => {
  const pieces = writtenPieces(TOKENS, { start: 0, length: 2 }, undefined);
  assert.deepEqual(pieces.map((p) => p.text), TOKENS);
});
