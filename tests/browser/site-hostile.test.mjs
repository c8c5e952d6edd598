// The site widget runs on someone else's page, over a bundle it must not
// trust: filter keys named like an object's machinery, names in entry.json
// that point off the bundle, result links a click would run, gzip bombs and
// damaged files, filter keys holding the wire's own separators, and
// attribute values with entities. Each bundle here is a real `qmd site
// build`, then altered the way an attacker (or a broken CDN) would.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { isolatedEnv, launch, qmdBin, serveStatic as serve, writeFolder } from './harness.mjs';

const site = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-site-hostile-'));
let server;
let foreign; // a second origin serving the same files
let origin;
let foreignOrigin;
let browser;
let entry; // the honest bundle's entry.json

const bundle = (name) => path.join(site, name, 'qmd');

/** Rewrites every file of `dir` (relative names) that `pick` selects. */
function rewrite(dir, pick, change) {
  for (const rel of fs.readdirSync(dir, { recursive: true })) {
    const file = path.join(dir, rel);
    if (fs.statSync(file).isFile() && pick(rel)) fs.writeFileSync(file, change(fs.readFileSync(file), rel));
  }
}

/** A copy of the honest bundle at `<site>/<name>/qmd`, altered by `alter(dir)`. */
function variant(name, alter) {
  fs.cpSync(bundle('base'), bundle(name), { recursive: true });
  alter(bundle(name));
}

const gunzip = (bytes) => zlib.gunzipSync(bytes);
const gzip = (bytes) => zlib.gzipSync(bytes);
const inEntry = (dir, change) => {
  const file = path.join(dir, 'entry.json');
  fs.writeFileSync(file, JSON.stringify(change(JSON.parse(fs.readFileSync(file, 'utf8')))));
};

before(async () => {
  const { home } = isolatedEnv();
  // Keys the build refuses (`__proto__`, `constructor`) are planted after it,
  // under names of the same length, as a hand-made bundle would hold them.
  const src = writeFolder(path.join(home, 'hostile-site'), {
    'index.html': `<html lang="en"><head><title>Home</title></head><body><main
      data-qmd-filter="tag:Tom &amp; Jerry, a=b:c, size:x&#10;y, __proto_X:polluted, constructoX:planted">
      <h1>Home</h1><h2 id="q&amp;a">Questions &amp; answers</h2><p>widget gadget answers</p></main></body></html>`,
    'two.html': `<html lang="en"><body><main data-qmd-filter="tag:other, a=b:d"><h1>Two</h1><p>widget second</p></main></body></html>`,
  });
  execFileSync(qmdBin, ['site', 'build', src, '--out', path.join(site, 'base')], { stdio: 'ignore' });
  fs.cpSync(src, site, { recursive: true }); // the pages the results link to
  const plant = (bytes) =>
    gzip(Buffer.from(gunzip(bytes).toString('latin1').replaceAll('__proto_X', '__proto__').replaceAll('constructoX', 'constructor'), 'latin1'));
  rewrite(bundle('base'), (rel) => rel.startsWith('meta.') || rel.startsWith(`f${path.sep}`), plant);
  entry = JSON.parse(fs.readFileSync(path.join(bundle('base'), 'entry.json'), 'utf8'));
  server = await serve(site);
  foreign = await serve(site);
  origin = `http://127.0.0.1:${server.address().port}`;
  foreignOrigin = `http://127.0.0.1:${foreign.address().port}`;
  fs.writeFileSync(path.join(site, 'box.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Box</title>
<script type="module" src="/base/qmd/qmd-search.js"></script></head>
<body><qmd-search bundle="/base/qmd/" facets="" page-size="10"></qmd-search></body></html>`);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
  foreign?.close();
});

/** Runs a search through the JS API of the bundle at `/<name>/qmd/`. */
function search(name, query, options = {}) {
  return browser.page.evaluate(
    async ({ name, query, options }) => {
      const { QmdSearch } = await import(`/${name}/qmd/qmd-search.js`);
      const api = new QmdSearch({ bundle: `/${name}/qmd/` });
      const { results } = await api.search(query, options);
      return Promise.all(results.map(async (r) => (await r.data()).url));
    },
    { name, query, options },
  );
}

const untouched = () =>
  browser.page.evaluate(() => ({
    proto: Object.prototype.polluted ?? Object.prototype.planted ?? null,
    object: Object.polluted ?? Object.planted ?? null,
    plain: ({}).polluted ?? null,
    constructor: ({}).constructor === Object,
  }));

test('filter keys named __proto__ and constructor are data: no prototype of the host page changes', async () => {
  const { page } = browser;
  await page.goto(`${origin}/box.html`);
  await page.getByRole('combobox', { name: 'Search this site' }).fill('widget');
  await page.getByRole('status').filter({ hasText: /^2 results$/ }).waitFor();
  assert.deepEqual(await untouched(), { proto: null, object: null, plain: null, constructor: true });
  const legends = await page.locator('qmd-search .facets legend').allTextContents();
  assert.ok(legends.includes('__proto__') && legends.includes('constructor'), `${legends}`);
  // Offered as facets like any key, and they select what they counted.
  await page.getByRole('checkbox', { name: 'polluted (1)' }).check();
  await page.getByRole('status').filter({ hasText: /^1 result$/ }).waitFor();
  assert.deepEqual(await untouched(), { proto: null, object: null, plain: null, constructor: true });
  const counts = await page.evaluate(async () => {
    const api = document.querySelector('qmd-search').search;
    const all = await api.filters();
    return {
      prototype: Object.getPrototypeOf(all),
      own: Object.getOwnPropertyNames(all).sort(),
      proto: { ...Object.getOwnPropertyDescriptor(all, '__proto__').value },
      polluted: Object.prototype.polluted ?? null,
    };
  });
  assert.equal(counts.prototype, null);
  assert.deepEqual(counts.own, ['__proto__', 'a=b', 'constructor', 'lang', 'size', 'tag']);
  assert.deepEqual(counts.proto, { polluted: 1 });
  assert.equal(counts.polluted, null);
  // The page's own `filters` attribute with such keys: a search, no error.
  await page.evaluate(() => document.querySelector('qmd-search').setAttribute('filters', '__proto__:x, constructor:y'));
  await page.getByRole('combobox', { name: 'Search this site' }).fill('widget gadget');
  await page.getByRole('status').filter({ hasText: /^No results$/ }).waitFor();
  assert.deepEqual(await untouched(), { proto: null, object: null, plain: null, constructor: true });
  assert.deepEqual(browser.errors, []);
});

test('facets whose keys hold = and values held entities select what they count', async () => {
  const { page } = browser;
  await page.goto(`${origin}/box.html`);
  await page.getByRole('combobox', { name: 'Search this site' }).fill('widget');
  await page.getByRole('status').filter({ hasText: /^2 results$/ }).waitFor();
  const labels = (await page.locator('qmd-search .facets label').allTextContents()).map((t) => t.trim());
  for (const label of ['c (1)', 'd (1)', 'Tom & Jerry (1)', 'x y (1)']) assert.ok(labels.includes(label), `${label} in ${labels}`);
  await page.getByRole('checkbox', { name: 'c (1)' }).check();
  await page.getByRole('status').filter({ hasText: /^1 result$/ }).waitFor();
  await page.getByRole('checkbox', { name: 'c (1)' }).uncheck();
  await page.getByRole('checkbox', { name: 'Tom & Jerry (1)' }).check();
  await page.getByRole('status').filter({ hasText: /^1 result$/ }).waitFor();
  // Through the API, a key with `=` and a value with a newline.
  assert.deepEqual(await search('base', 'widget', { filters: { 'a=b': 'd' } }), ['/two.html']);
  assert.deepEqual(await search('base', 'widget', { filters: { size: 'x y' } }), ['/']);
  assert.deepEqual(await search('base', 'widget', { filters: { size: 'x\ny' } }), []);
});

test('an anchor whose id holds an entity links to its heading', async () => {
  const { page } = browser;
  await page.goto(`${origin}/box.html`);
  await page.getByRole('combobox', { name: 'Search this site' }).fill('questions');
  const sub = page.locator('qmd-search li.result .sub a').first();
  await sub.waitFor();
  assert.equal(await sub.textContent(), 'Questions & answers');
  assert.equal(await sub.getAttribute('href'), '/#q%26a');
  await Promise.all([page.waitForURL(/#q%26a$/), sub.click()]);
  assert.equal(await page.evaluate(() => document.querySelector(':target')?.id), 'q&a');
});

test('names in entry.json that point off the bundle are refused before any fetch', async () => {
  const { page } = browser;
  await page.goto(`${origin}/box.html`);
  const elsewhere = [
    ['engine', `${foreignOrigin}/base/qmd/${entry.engine}`],
    ['engine', `//127.0.0.1:${foreign.address().port}/base/qmd/${entry.engine}`],
    ['meta', `../../base/qmd/${entry.meta}`],
    ['meta', `%2e%2e/%2e%2e/base/qmd/${entry.meta}`],
    ['meta', `/base/qmd/${entry.meta}`],
    ['meta', `t/..\\..\\..\\base/qmd/${entry.meta}`],
    ['engine', 'data:application/wasm;base64,AGFzbQEAAAA='],
    ['filter', `${foreignOrigin}/base/qmd/${entry.filter}`],
    ['meta', { toString: 'x' }],
  ];
  for (const [i, [key, value]] of elsewhere.entries()) {
    const name = `off-${i}`;
    variant(name, (dir) => inEntry(dir, (e) => ({ ...e, [key]: value })));
    browser.requests.length = 0;
    const options = key === 'filter' ? { filter: { key: 'status', operator: 'exists', value: true } } : {};
    await assert.rejects(search(name, 'widget', options), /is not a file of this bundle|lacks its engine/, `${key}: ${JSON.stringify(value)}`);
    const strays = browser.requests.filter((u) => !u.startsWith(`${origin}/${name}/qmd/`) && !u.startsWith('data:'));
    assert.deepEqual(strays, [], `${key}: ${JSON.stringify(value)}`);
  }
});

test('a result link a click would run is shown as text', async () => {
  const { page } = browser;
  const runnable = ['javascript:window.pwned=1//', ' JaVaScRiPt:window.pwned=1', 'java\tscript:window.pwned=1', 'data:text/html,<script>x</script>'];
  for (const [i, url] of runnable.entries()) {
    const name = `link-${i}`;
    variant(name, (dir) => {
      rewrite(dir, (rel) => rel.startsWith(`f${path.sep}`), (bytes) => gzip(JSON.stringify({ ...JSON.parse(gunzip(bytes)), url })));
      // Longer fragments than the build's: their kind's limit grows with them.
      inEntry(dir, (e) => ({ ...e, limits: { ...e.limits, f: 1 << 16 } }));
    });
    fs.writeFileSync(path.join(bundle(name), '..', 'box.html'), `<!doctype html><meta charset="utf-8">
<script type="module" src="/${name}/qmd/qmd-search.js"></script><qmd-search bundle="/${name}/qmd/"></qmd-search>`);
    await page.goto(`${origin}/${name}/box.html`);
    await page.getByRole('combobox', { name: 'Search this site' }).fill('questions');
    const title = page.locator('qmd-search li.result .title').first();
    await title.waitFor();
    assert.equal(await title.evaluate((node) => node.localName), 'span', url);
    assert.equal(await page.locator('qmd-search li.result a').count(), 0, `no link at all: ${url}`);
    await title.click();
    await page.locator('qmd-search li.result .sub span').first().click();
    assert.equal(await page.evaluate(() => window.pwned ?? null), null, url);
  }
  // http(s) and relative links stay links.
  assert.deepEqual(await search('base', 'questions'), ['/']);
  await page.goto(`${origin}/box.html`);
  await page.getByRole('combobox', { name: 'Search this site' }).fill('questions');
  assert.equal(await page.locator('qmd-search li.result a.title').first().getAttribute('href'), '/');
});

test('a gzip bomb stops at its kind\'s size, and damage is named', async () => {
  const { page } = browser;
  await page.goto(`${origin}/box.html`);
  // 64 MB of zeros in 64 KB, as every term shard.
  const bomb = gzip(Buffer.alloc(64 << 20));
  variant('bomb', (dir) => rewrite(dir, (rel) => rel.startsWith(`t${path.sep}`), () => bomb));
  const shard = entry.limits.t;
  assert.ok(shard > 0 && shard < 1 << 20, `the largest shard: ${shard} bytes`);
  await assert.rejects(search('bomb', 'widget'), new RegExp(`holds more than the ${shard} bytes its kind may`));
  // The meta as a bomb, with an entry that claims any size: the ceiling stands.
  variant('bomb-meta', (dir) => {
    fs.writeFileSync(path.join(dir, entry.meta), gzip(Buffer.alloc(300 << 20)));
    inEntry(dir, (e) => ({ ...e, limits: { meta: 1e15 } }));
  });
  await assert.rejects(search('bomb-meta', 'widget'), /holds more than the 268435456 bytes its kind may/);
  // Damaged gzip: the file is named, and so is the damage.
  variant('damaged', (dir) =>
    rewrite(dir, (rel) => rel.startsWith(`t${path.sep}`), (bytes) => Buffer.concat([bytes.subarray(0, 12), Buffer.from('garbage, not deflate')])),
  );
  await assert.rejects(search('damaged', 'widget'), /qmd search: t\/[0-9a-f]+\/\d+\.bin: damaged data/);
  // An entry.json past its cap, and one that is not JSON.
  variant('huge-entry', (dir) => fs.writeFileSync(path.join(dir, 'entry.json'), ' '.repeat(2 << 20)));
  await assert.rejects(search('huge-entry', 'widget'), /entry\.json holds more than/);
  variant('bad-entry', (dir) => fs.writeFileSync(path.join(dir, 'entry.json'), '{"format": "qmd-site/1",'));
  await assert.rejects(search('bad-entry', 'widget'), /entry\.json is not JSON/);
  // The page is still whole: the honest bundle searches.
  assert.deepEqual((await search('base', 'widget')).sort(), ['/', '/two.html']);
});
