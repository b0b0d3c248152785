// The annotator page's service worker (scope /annotate/): a reload, or a phone that killed the
// tab, starts from what the device holds when the connection is gone. The page, its stylesheet
// and its modules come from the network while there is one (so a deploy is seen at once) and are
// kept on every success; without a network they come from here. The API is never answered from
// here: answers wait in the page's outbox and the tasks held ahead in its storage (main.js).
// A page is served from here only while the browser is signed in (the signed-in cookie,
// accounts/device.py): once it is signed out, the visitor is told to sign in, and nobody gets
// the last annotator's page (docs/decisions/045-shared-phone.md).
const CACHE = "tally-annotate-2";
const SIGNED_IN = "tally_signed_in";

self.addEventListener("install", () => self.skipWaiting());

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name !== CACHE) await caches.delete(name);
      await self.clients.claim(); // the page that registered us is served from now on
    })(),
  );
});

// What the page loaded before this worker served it (its first visit): `{keep: [urls]}`.
self.addEventListener("message", (event) => {
  const urls = event.data && event.data.keep;
  if (Array.isArray(urls)) event.waitUntil(keepMissing(urls));
});

async function keepMissing(urls) {
  const cache = await caches.open(CACHE);
  await Promise.all(
    urls.filter(kept).map(async (url) => {
      if (await cache.match(url, { ignoreVary: true })) return;
      try {
        await store(cache, url, await fetch(url, { credentials: "same-origin" }));
      } catch {
        /* offline already: kept on the next visit */
      }
    }),
  );
}

// Same-origin pages and files, not the API (its answers are the server's, not the device's).
function kept(url) {
  const parsed = new URL(url, self.location.href);
  return parsed.origin === self.location.origin && !parsed.pathname.startsWith("/api/");
}

// A redirect (to the sign-in page) or an error is not the page asked for.
async function store(cache, request, response) {
  if (response.ok && !response.redirected && response.type === "basic") await cache.put(request, response);
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || !kept(request.url)) return;
  event.respondWith(networkFirst(request));
});

async function networkFirst(request) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    await store(cache, request, response.clone());
    return response;
  } catch (error) {
    // The page varies by cookie and encoding; what is kept is this device's own copy.
    if (request.mode === "navigate" && !(await signedIn())) return signedOutPage(request);
    const cached = await cache.match(request, { ignoreSearch: request.mode === "navigate", ignoreVary: true });
    if (cached) return cached;
    throw error;
  }
}

// Whether the browser is signed in, by the cookie (true where a browser cannot tell a worker).
async function signedIn() {
  if (!self.cookieStore) return true; // the page checks it again before it shows anything
  try {
    return Boolean((await self.cookieStore.get(SIGNED_IN))?.value);
  } catch {
    return true;
  }
}

function signedOutPage(request) {
  const login = `/login/?next=${encodeURIComponent(new URL(request.url).pathname)}`;
  const html = `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Signed out · Tally</title><main id="signed-out"><h1>You are signed out</h1><p>Sign in to go on: you need a connection for it.</p><p><a href="${login}">Sign in</a></p></main></html>`;
  return new Response(html, {
    status: 200,
    headers: { "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": "default-src 'none'", "Cache-Control": "no-store" },
  });
}
