// What the annotator page says, in the project's language (the page's <html lang>). English is
// the fallback for a language or a message not here yet; a new language is one more entry of
// MESSAGES, with the same keys (tests/frontend/js/text.test.mjs checks that they match).
// `{name}` in a message is replaced by the value of `name`. No DOM needed: the language is set
// by the page (`setLanguage`), English otherwise.

export const MESSAGES = {
  en: {
    howMany: ["How many ", " in the highlight?"],
    fewer: "One fewer {tag}",
    more: "One more {tag}",
    countOf: "{tag} count",
    submit: "Submit",
    moreQuestions1: "1 more question ↓",
    moreQuestions: "{n} more questions ↓",
    allRight: "Are all of these tags right?",
    firstWrong: "Which is the first wrong word?",
    tapTag: "Tap a tag to see what it means.",
    tapFirstWrong: "From the left, tap the first word whose tag is wrong, or Skip.",
    firstWrongLabel: "{word}: the first wrong one",
    yes: "Yes",
    no: "No",
    skip: "Skip",
    eg: "e.g.",
    counts: "“{written}” = {parts}: counts as {n} words, one tag each",
    waiting1: "1 answer waiting to be sent",
    waiting: "{n} answers waiting to be sent",
    offline: "Offline · ",
  },
  fr: {
    howMany: ["Combien de ", " dans la partie surlignée ?"],
    fewer: "Un {tag} de moins",
    more: "Un {tag} de plus",
    countOf: "Nombre de {tag}",
    submit: "Envoyer",
    moreQuestions1: "Encore 1 question ↓",
    moreQuestions: "Encore {n} questions ↓",
    allRight: "Ces étiquettes sont-elles toutes justes ?",
    firstWrong: "Quel est le premier mot faux ?",
    tapTag: "Touchez une étiquette pour voir ce qu’elle veut dire.",
    tapFirstWrong: "En partant de la gauche, touchez le premier mot dont l’étiquette est fausse, ou Passer.",
    firstWrongLabel: "{word} : le premier faux",
    yes: "Oui",
    no: "Non",
    skip: "Passer",
    eg: "p. ex.",
    counts: "« {written} » = {parts} : compte pour {n} mots, une étiquette chacun",
    waiting1: "1 réponse en attente d’envoi",
    waiting: "{n} réponses en attente d’envoi",
    offline: "Hors ligne · ",
  },
};

let language = "en";

export function setLanguage(lang) {
  language = MESSAGES[lang] ? lang : "en";
}

export function t(key, vars = {}) {
  const message = MESSAGES[language][key] ?? MESSAGES.en[key];
  if (typeof message !== "string") return message;
  return message.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}
