// The annotator page's messages (issue 26, item 5): every language has every message English has,
// with the same {placeholders}; an unknown language falls back to English.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LANGUAGES, MESSAGES, setLanguage, t } from "../../../frontend/static/frontend/js/annotate/text.js";

const placeholders = (message) => JSON.stringify(message).match(/\{\w+\}/g)?.sort() ?? [];

test("every language has every message, with the same placeholders", async () => {
  for (const [lang, load] of Object.entries(LANGUAGES)) {
    const messages = (await load()).MESSAGES;
    assert.deepEqual(Object.keys(messages).sort(), Object.keys(MESSAGES.en).sort(), lang);
    for (const [key, message] of Object.entries(messages)) {
      assert.deepEqual(placeholders(message), placeholders(MESSAGES.en[key]), `${lang}.${key}`);
    }
  }
});

test("messages in the page's language, English otherwise", async () => {
  await setLanguage("fr");
  assert.equal(t("moreQuestions", { n: 2 }), "Encore 2 questions ↓");
  assert.deepEqual(t("howMany"), ["Combien de ", " dans la partie surlignée ?"]);
  const { statsLine } = await import("../../../frontend/static/frontend/js/annotate/screen.js");
  assert.equal(statsLine({ observations: 2, seconds: 9, checkScore: 0.5, kinds: {} }), "2 réponses en tout · 4.5 s par réponse · 50 % de justes aux tâches de contrôle");
  await setLanguage("xx");
  assert.equal(t("moreQuestions", { n: 2 }), "2 more questions ↓");
  await setLanguage("en");
});
