// Whose pages this device holds: the signed-in cookie (accounts/device.py) says which account
// and which session the browser is signed in as, and is gone once it is signed out. The
// annotator page reads it before it shows a task or keeps an answer, the sign-out script
// (signout.js) to find what to send and forget. docs/decisions/045-shared-phone.md. No DOM.

export const COOKIE = "tally_signed_in";

// {user, session} (strings) of the browser's session, or null when it is signed out.
export function signedIn(cookie = globalThis.document?.cookie ?? "") {
  const match = cookie.match(new RegExp(`(?:^|;\\s*)${COOKIE}=([^;]*)`));
  if (!match) return null;
  const [user, session] = decodeURIComponent(match[1]).replace(/^"|"$/g, "").split(".");
  return user && session ? { user, session } : null;
}

// The keys of the tasks held for `user` (every project), or of every user but `user` with
// `{others: true}`.
export function heldKeys(storage, user, { others = false } = {}) {
  const keys = [];
  try {
    for (let i = 0; i < storage.length; i++) {
      const key = storage.key(i);
      const match = key && key.match(/^tally\.held\.([^.]+)\./);
      if (match && (match[1] === String(user)) !== others) keys.push(key);
    }
  } catch {
    /* no storage */
  }
  return keys;
}

export function forget(storage, keys) {
  for (const key of keys) {
    try {
      storage.removeItem(key);
    } catch {
      /* nothing to forget */
    }
  }
}
