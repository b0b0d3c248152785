// The annotator page's messages (issue 26, item 5): every language has every message English has,
// with the same {placeholders}; an unknown language falls back to English.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LANGUAGES, MESSAGES, setLanguage, t } from "../../../frontend/static/frontend/js/annotate/text.js";
// privacy.js adds its English messages to the catalogue as it loads: they are checked too.
import { admit, forgetPlain } from "../../../frontend/static/frontend/js/annotate/privacy.js";

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

test("every English message, the state screens' and privacy.js's included, has a French one", async () => {
  const french = (await LANGUAGES.fr()).MESSAGES;
  for (const key of ["none", "off", "offKept", "notShown", "reload", "ok", "pCannot", "pNow"]) assert.ok(key in MESSAGES.en, key);
  for (const key of Object.keys(MESSAGES.en)) {
    assert.ok(key in french, key);
    assert.equal(typeof french[key], typeof MESSAGES.en[key], key);
    if (Array.isArray(MESSAGES.en[key])) assert.equal(french[key].length, MESSAGES.en[key].length, key);
  }
});

test("privacy.js speaks French, one answer or several", async () => {
  const outbox = (n) => ({ discard: () => n });
  await setLanguage("fr");
  assert.equal(t("none")[0], "Pas de tâche pour vous en ce moment");
  assert.equal(forgetPlain({ outbox: outbox(1), project: 1 }), "Ce projet est maintenant privé : 1 réponse donnée avant le changement a été supprimée de ce téléphone, sans envoi.");
  assert.equal(forgetPlain({ outbox: outbox(2), project: 1 }), "Ce projet est maintenant privé : 2 réponses données avant le changement ont été supprimées de ce téléphone, sans envoi.");
  assert.throws(() => admit({ kind: "count" }, true), /Le réglage de confidentialité de ce projet a changé/);
  assert.throws(() => admit({ kind: "count", window: { length: 2 }, tags: ["A"], privacy: { mechanism: "krr", alpha: 20, release: [] } }, false), {
    message: "Cette tâche ne peut pas recevoir de réponse privée : son niveau de confidentialité α = 20 n’est pas entre 0 et 8. Rien n’a été envoyé.",
  });
  await setLanguage("en");
  assert.equal(forgetPlain({ outbox: outbox(2), project: 1 }), "This project is now private: 2 answers given before the change were deleted from this phone without being sent.");
  assert.throws(() => admit({ kind: "count", window: { length: 2 }, tags: ["A"], privacy: { mechanism: "krr", alpha: 20, release: [] } }, false), {
    message: "This task cannot be answered privately: its privacy level α = 20 is not between 0 and 8. Nothing was sent.",
  });
});
