// Offline support: the app shell and the engine's wasm are cached on the
// first visit and served from the cache afterwards (stale-while-
// revalidate). The build stamps VERSION, so a new build replaces the cache.
// Model files are cached by the app itself, in OPFS, not here.

const VERSION = '__QMD_BUILD__';
const CACHE = `qmd-shell-${VERSION}`;
const SHELL = [
  './', 'index.html', 'style.css', 'app.js', 'folders.js', 'highlight.js', 'worker.js', 'model-cache.js',
  'helpers.js', 'model-worker.js', 'engine.js',
];
// The engine's three builds (engine.js) are not precached: a browser runs
// one, and the fetch handler below caches it when the page first loads it.


self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('qmd-shell-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  // Same-origin GETs of the shell only; model downloads pass through.
  if (event.request.method !== 'GET' || url.origin !== self.location.origin || url.pathname.includes('/models/')) return;
  event.respondWith(
    caches.open(CACHE).then(async (cache) => {
      const cached = await cache.match(event.request, { ignoreSearch: true });
      const fresh = fetch(event.request)
        .then((response) => {
          if (response.ok) cache.put(event.request, response.clone());
          return response;
        })
        .catch(() => cached);
      return cached ?? fresh;
    }),
  );
});
