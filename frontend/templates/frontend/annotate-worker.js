// The annotator page's service worker (scope /annotate/): a reload, or a phone that killed the
// tab, starts from what the device holds when the connection is gone. The page, its stylesheet
// and its modules come from the network while there is one (so a deploy is seen at once) and are
// kept on every success; without a network they come from here. The API is never answered from
// here: answers wait in the page's outbox and the tasks held ahead in its storage (main.js).
const CACHE = "tally-annotate-1";

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
    const cached = await cache.match(request, { ignoreSearch: request.mode === "navigate", ignoreVary: true });
    if (cached) return cached;
    throw error;
  }
}
