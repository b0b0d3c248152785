// What the annotator page says, in the project's language (the page's <html lang>). English is
// here and the fallback for a language or a message not translated yet; another language is a
// module like text-fr.js with the same keys (tests/frontend/js/text.test.mjs checks that they
// match) and one line in LANGUAGES, loaded only by the pages that speak it. `{name}` in a message
// is replaced by the value of `name`; a state screen's is [title, text]. privacy.js adds its
// English when it loads. No DOM needed.

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
    kept1: "Your answer is kept on this device",
    kept: "Your {n} answers are kept on this device",
    firstAnswers: "Your first answers: take your time.",
    inAll1: "1 answer in all",
    inAll: "{n} answers in all",
    perAnswer: "{s} s per answer",
    perKind: "{s} s per {kind}",
    kind_count: "count",
    kind_verify: "check",
    rightOnChecks: "{pct} % right on check tasks",
    aboutRightOnChecks: "about {pct} % right on check tasks (estimated: answers are private)",
    ok: "OK",
    sayNew: "New task. Highlighted: {words}",
    saySaved: "Answer saved.",
    timeUp: "Time is up for this task. Your answer is still saved if you submit it, or take a new one.",
    newTask: "New task",
    refused: "One answer could not be saved: {why}",
    loading: "Loading your next task…",
    none: ["No tasks for you right now", "Everything open has been answered. Check back later: new tasks appear as others finish."],
    look: "Look again",
    off: "You are offline",
    offKept: "{kept} and will be sent when the connection is back. New tasks will appear then.",
    offNone: "New tasks will appear when the connection is back.",
    sending: ["Sending your answers…", "The server is busy. Trying again in a few seconds."],
    notShown: "This task was not shown",
    reload: "Reload",
    paused: ["This project is paused", "The manager has paused it. Your answers so far are saved. Come back later."],
    busy: ["The server is busy", "Trying again in a few seconds…"],
    tryNow: "Try again now",
    notMember: ["You are not a member of this project", "Ask the manager for a new invite link."],
    mine: "My projects",
    wrong: "Something went wrong",
    tryAgain: "Try again",
    ended: "Your session has ended",
    signIn: "Sign in again to go on.",
    signInKept: "{kept} and will be sent after you sign in.",
    signInAgain: "Sign in again",
    otherSignIn: ["This page was someone else’s", "This device is signed in as another account now. Reload with a connection to see your own tasks."],
    newSession: ["This page is from an earlier sign-in", "Reload it with a connection to go on."],
  },
};

export const LANGUAGES = { fr: () => import("./text-fr.js") };

let language = "en";

// Loads `lang`'s messages (English when it has none, or when they cannot be loaded).
export async function setLanguage(lang) {
  if (!MESSAGES[lang] && LANGUAGES[lang]) {
    try {
      MESSAGES[lang] = (await LANGUAGES[lang]()).MESSAGES;
    } catch {
      /* offline before this page ever loaded them: English */
    }
  }
  language = MESSAGES[lang] ? lang : "en";
}

export function t(key, vars = {}) {
  const message = MESSAGES[language][key] ?? MESSAGES.en[key];
  if (typeof message !== "string") return message;
  return message.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}
