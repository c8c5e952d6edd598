// The browser app over files and configs it must not trust (robustness
// class 13): frontmatter keys named like an object's machinery arrive as
// plain own keys, the worker runs only its own methods, an index's name
// is one plain OPFS name, a config.json naming another origin's models is
// refused before any request, and a model file inflated past its length
// is cut off (classes 3 and 4), and index files damaged in OPFS are read
// only as far as they declare and hold (class 3).

import http from 'node:http';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { addStagedFolder, isolatedEnv, launch, openApp, serveApp, stageFolder } from './harness.mjs';

let server;
let browser;

const NOTES = {
  'proto.md': '---\nqmd:\n  metadata:\n    __proto__: [admin, published]\n    constructor: builder\n    kind: walrus\n---\n# Proto\n\nA walrus note with hostile metadata keys.\n',
  'plain.md': '# Plain\n\nAn ordinary note.\n',
};

before(async () => {
  const { env } = isolatedEnv();
  server = await serveApp(env);
  browser = await launch();
  await openApp(browser.page, server.url);
  await stageFolder(browser.page, 'hostile', NOTES);
  await addStagedFolder(browser.page, 'hostile', 'hostile');
});

after(async () => {
  await browser?.close();
  server?.stop();
});

test('metadata keys from a file are own keys of a plain object, never its prototype', async () => {
  const seen = await browser.page.evaluate(async () => {
    const [hit] = await window.qmd.search('walrus hostile');
    const metadata = hit.metadata;
    return {
      path: hit.path,
      ownKeys: Object.keys(metadata).sort(),
      prototypeIsObjects: Object.getPrototypeOf(metadata) === Object.prototype,
      proto: Object.getOwnPropertyDescriptor(metadata, '__proto__')?.value,
      lengthLeaked: metadata.length,
      polluted: {}.admin !== undefined || Object.prototype.kind !== undefined,
    };
  });
  assert.equal(seen.path, 'proto.md');
  assert.deepEqual(seen.ownKeys, ['__proto__', 'constructor', 'kind']);
  assert.ok(seen.prototypeIsObjects, 'the prototype is Object.prototype');
  assert.deepEqual(seen.proto, ['admin', 'published']);
  assert.equal(seen.lengthLeaked, undefined);
  assert.equal(seen.polluted, false);
});

test('the worker runs only its own methods', async () => {
  for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const error = await browser.page.evaluate((m) => window.qmd.call(m, {}).then(() => null, (e) => String(e?.message ?? e)), method);
    assert.match(error ?? 'ran', /unknown method/, method);
  }
});

test('an index name is one plain OPFS name, refused with the reason otherwise', async () => {
  for (const name of ['..', '.', 'a/b', 'tab\there']) {
    const error = await browser.page.evaluate((n) => window.qmd.call('open', { name: n }).then(() => null, (e) => String(e?.message ?? e)), name);
    assert.match(error ?? 'opened', /^Invalid index name/, JSON.stringify(name));
  }
  // The index open before is still the one in use.
  const status = await browser.page.evaluate(() => window.qmd.status());
  assert.equal(status.total_documents, 2);
});

/** `qmd web` behind a proxy that answers `answers` ({path: handler}) itself:
 * a hostile server's config.json and files, which the page's service
 * worker fetches through the network as the page does (routes in the
 * browser would not see the worker's requests). Resolves to {url, stop}. */
async function hostileProxy(answers) {
  const proxy = http.createServer((req, res) => {
    const answer = answers[new URL(req.url, 'http://x').pathname];
    if (answer) return answer(res);
    const upstream = http.request(new URL(req.url, server.url), { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${proxy.address().port}/`, stop: () => proxy.close() };
}

const json = (body) => (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** Loads the model the proxy's config.json names in a fresh page; what the
 * load threw, and the requests the page made. */
async function loadThrough(answers) {
  const proxy = await hostileProxy(answers);
  const page = await browser.context.newPage();
  const start = browser.requests.length;
  try {
    await openApp(page, proxy.url);
    const error = await page.evaluate(() => window.qmd.loadModel().then(() => null, (e) => String(e?.message ?? e)));
    return { error, requests: browser.requests.slice(start), origin: new URL(proxy.url).origin };
  } finally {
    await page.close();
    proxy.stop();
  }
}

test("a config.json naming another origin's model files is refused before any request", async () => {
  for (const url of ['https://models.example/m/', '//models.example/m/', 'http://huggingface.co/x/resolve/main/', 'javascript:alert(1)//']) {
    const { error, requests, origin } = await loadThrough({ '/config.json': json({ embedModel: { id: 'x/y', url } }) });
    assert.match(error ?? 'loaded', /model files may come only from this site or Hugging Face/, url);
    // Not one request to where the config pointed (a closed page's service
    // worker may still be caching its own origin's shell meanwhile).
    const named = new URL(url, origin);
    assert.deepEqual(requests.filter((r) => r.startsWith('http') && new URL(r).hostname === named.hostname), [], url);
  }
});

test('a model file inflated past its Content-Length is cut off at it, naming the file', async () => {
  const bomb = zlib.gzipSync(Buffer.alloc(64 << 20));
  const inflating = (res) =>
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': bomb.length }).end(bomb);
  const { error } = await loadThrough({
    '/config.json': json({ embedModel: { id: 'x/y', url: 'models/hostile/' } }),
    '/models/hostile/config.json': inflating,
  });
  assert.match(error ?? 'loaded', new RegExp(`hostile/config\\.json: more than the ${bomb.length} bytes it may hold`));
});


/** Runs `change` in the page with the app closed (its worker holds a
 * handle on every index file); `change` awaits `window.indexFiles()`, the
 * index's OPFS files as {name: handle}. Resolves to what it returned. */
async function withAppClosed(page, change) {
  await page.goto(new URL('style.css', server.url).href);
  await page.evaluate(() => {
    window.indexFiles = async () => {
      const files = {};
      const walk = async (dir) => {
        for await (const [name, handle] of dir.entries()) {
          if (handle.kind === 'directory' && name !== 'fixtures') await walk(handle);
          else if (/^(seg-\d+\.qseg|manifest\.json~[ab])$/.test(name)) files[name] = handle;
        }
      };
      await walk(await navigator.storage.getDirectory());
      return files;
    };
  });
  const result = await page.evaluate(change);
  await page.goto(server.url);
  return result;
}

test('a manifest slot with bytes past what it declares opens as the same index', async () => {
  const { page } = browser;
  const before = await page.evaluate(() => window.qmd.status());
  await withAppClosed(page, async () => {
    const files = await window.indexFiles();
    for (const [name, handle] of Object.entries(files)) {
      if (!name.startsWith('manifest')) continue;
      const size = (await handle.getFile()).size;
      const writable = await handle.createWritable({ keepExistingData: true });
      await writable.write({ type: 'write', position: size, data: new Uint8Array(1 << 20).fill(0xff) });
      await writable.close();
    }
  });
  await page.evaluate(() => window.qmd.ready);
  const after = await page.evaluate(() => window.qmd.status());
  assert.equal(after.generation, before.generation);
  assert.equal(after.total_documents, before.total_documents);
});

test('an index file cut short in OPFS is named as damaged, never read past its end', async () => {
  const { page } = browser;
  const cut = await withAppClosed(page, async () => {
    const files = await window.indexFiles();
    const [name, handle] = Object.entries(files).find(([n]) => n.startsWith('seg-'));
    const size = (await handle.getFile()).size;
    const writable = await handle.createWritable({ keepExistingData: true });
    await writable.truncate(Math.floor(size / 2));
    await writable.close();
    return name;
  });
  const error = await page.evaluate(() =>
    window.qmd.ready.then(() => window.qmd.search('walrus hostile')).then(() => null, (e) => String(e?.message ?? e)),
  );
  assert.match(error ?? 'read', new RegExp(`${cut.replace('.', '\\.')} is damaged`));
});
