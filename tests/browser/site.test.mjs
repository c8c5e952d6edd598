// The static-site widget end to end: `qmd site build` on a fixture HTML
// site and on qmd's eval docs, served by a plain static server, searched in
// Debian's Chromium through <qmd-search> and the JS API.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  cli, evalDir, evalQueries, isolatedEnv, launch, qmdBin, readFolder, repoRoot, serveStatic as serve, testModelDir,
  writeFolder,
} from './harness.mjs';

const site = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-site-'));
let server;
let origin;
let browser;
let cliEnv;
let evalSite;

before(async () => {
  fs.cpSync(path.join(repoRoot, 'tests/fixtures/site'), site, { recursive: true });
  // Tiny shards, so that a query has shards it must not fetch.
  execFileSync(qmdBin, ['site', 'build', site, '--out', site, '--shard-kb', '0.2']);
  // qmd's eval docs as a markdown site next to it, named as the CLI's collection.
  const { env, home } = isolatedEnv();
  cliEnv = env;
  const docs = writeFolder(path.join(home, 'eval-docs'), readFolder(path.join(evalDir, 'docs')));
  cli(cliEnv, ['collection', 'add', docs, '--name', 'eval']);
  evalSite = path.join(site, 'eval');
  execFileSync(qmdBin, ['site', 'build', docs, '--out', evalSite, '--name', 'eval', '--base-url', '/eval/docs']);
  // The semantic tier, distilled from the test model (all-MiniLM-L6-v2).
  execFileSync(qmdBin, ['site', 'build', site, '--out', path.join(site, 'sem'), '--semantic', '--model', testModelDir()], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  server = await serve(site);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
});

const bundleRequests = () => browser.requests.filter((u) => u.includes('/qmd/')).map((u) => new URL(u).pathname);

test('nothing but the module loads before the box is focused', async () => {
  browser.requests.length = 0;
  await browser.page.goto(`${origin}/install.html`);
  await browser.page.waitForFunction(() => customElements.get('qmd-search'));
  await browser.page.waitForTimeout(300);
  assert.deepEqual(bundleRequests(), ['/qmd/qmd-search.js']);
  const input = browser.page.getByRole('combobox', { name: 'Search this site' });
  await input.focus();
  await browser.page.waitForFunction(() => document.querySelector('qmd-search').search?.engine);
  const loaded = bundleRequests().map((p) => p.replace(/\.[0-9a-f]{16}\./, '.HASH.'));
  assert.deepEqual(loaded.sort(), ['/qmd/engine.HASH.wasm', '/qmd/entry.json', '/qmd/meta.HASH.bin', '/qmd/qmd-search.js']);
});

test('a query finds its pages with highlighted excerpts and sub-results, fetching only its shards', async () => {
  const { page } = browser;
  browser.requests.length = 0;
  const input = page.getByRole('combobox', { name: 'Search this site' });
  await input.fill('extract');
  const results = page.getByRole('option');
  await results.first().waitFor();
  const titles = await page.locator('qmd-search li.result > a.title').allTextContents();
  assert.equal(titles[0], 'Creating and extracting archives');
  assert.ok(!titles.includes('Installing Packrat'), 'nav and footer text is not indexed');
  const marks = await page.locator('qmd-search li.result').first().locator('mark').allTextContents();
  assert.ok(marks.length > 0 && marks.every((m) => /^extract/i.test(m)), `marks: ${marks}`);
  const sub = page.locator('qmd-search li.result').first().locator('.sub a');
  assert.ok((await sub.allTextContents()).includes('Extracting an archive'));
  assert.equal(await sub.first().getAttribute('href'), '/guide/archives.html#archives');
  const status = await page.getByRole('status').textContent();
  assert.match(status, /^\d+ results?$/);
  // Only the bundle's own origin, one term shard for one word, one
  // fragment per shown result.
  assert.ok(browser.requests.every((u) => u.startsWith(origin)), browser.requests.join('\n'));
  const shards = bundleRequests().filter((p) => p.startsWith('/qmd/t/'));
  const all = fs.readdirSync(path.join(site, 'qmd/t')).length;
  assert.equal(shards.length, 1, `${shards} of ${all}`);
  assert.ok(all > 5, `${all} shards in the bundle`);
  const fragments = bundleRequests().filter((p) => p.startsWith('/qmd/f/'));
  assert.equal(fragments.length, await results.count());
  assert.ok(!bundleRequests().some((p) => p.startsWith('/qmd/p/')), 'no positions without a phrase');
});

test('the keyboard moves through results and Enter opens one', async () => {
  const { page } = browser;
  const input = page.getByRole('combobox', { name: 'Search this site' });
  await input.fill('zstd compression level');
  await page.locator('qmd-search li.result a.title', { hasText: 'Compression levels' }).waitFor();
  await input.press('ArrowDown');
  const first = page.getByRole('option').first();
  assert.equal(await first.getAttribute('aria-selected'), 'true');
  assert.equal(await input.getAttribute('aria-activedescendant'), await first.getAttribute('id'));
  await input.press('ArrowDown');
  await input.press('ArrowUp');
  assert.equal(await first.getAttribute('aria-selected'), 'true');
  const href = await first.locator('a.title').getAttribute('href');
  await Promise.all([page.waitForURL(`${origin}${href}`), input.press('Enter')]);
  assert.equal(await page.title(), 'Compression levels · Packrat');
});

/** The result URLs of `query` through the JS API of the bundle at `bundle`
 * (one QmdSearch per bundle and page, as a page would keep it). */
function urls(page, bundle, query, options) {
  return page.evaluate(
    async ({ bundle, query, options }) => {
      const { QmdSearch } = await import(`${bundle}qmd-search.js`);
      window.apis ??= {};
      const search = (window.apis[bundle] ??= new QmdSearch());
      const { results } = await search.search(query, options);
      return Promise.all(results.map(async (r) => (await r.data()).url));
    },
    { bundle, query, options },
  );
}

test('phrases, negation, filters and no results', async () => {
  const { page } = browser;
  await page.goto(`${origin}/index.html`);
  const run = (query, options) => urls(page, '/qmd/', query, options);
  assert.deepEqual(await run('"parallel compression"'), ['/blog/2026-release.html']);
  assert.ok(!(await run('archives -extract')).includes('/guide/archives.html'));
  const guides = await run('packrat', { filters: { section: 'guide' } });
  assert.ok(guides.length >= 2 && guides.every((u) => ['/install.html', '/guide/archives.html', '/guide/compression.html'].includes(u)), `${guides}`);
  assert.deepEqual(await run('zebra'), []);
  const filters = await page.evaluate(() => window.apis['/qmd/'].filters());
  assert.deepEqual(filters.section, { blog: 1, guide: 3, home: 1, reference: 1 });
  assert.deepEqual(filters.lang, { en: 6 });
});

test('the widget and `qmd search` agree on the top 3 for all 24 eval queries', async () => {
  const { page } = browser;
  await page.goto(`${origin}/index.html`);
  const queries = evalQueries();
  assert.equal(queries.length, 24);
  for (const { query } of queries) {
    const web = await page.evaluate(async (q) => {
      const { QmdSearch } = await import('/qmd/qmd-search.js');
      const search = (window.evalSearch ??= new QmdSearch({ bundle: '/eval/qmd/' }));
      const { results } = await search.search(q, { limit: 3 });
      return Promise.all(results.map(async (r) => ({ url: (await r.data()).url, score: r.score })));
    }, query);
    const native = cli(cliEnv, ['search', query, '--json', '-n', '3']);
    const nativeUrls = native.map((h) => `/eval/docs/${h.file.replace(/^qmd:\/\/eval\//, '').replace(/\.md$/, '.html')}`);
    assert.deepEqual(web.map((h) => h.url), nativeUrls, `search ${JSON.stringify(query)}`);
    web.forEach((hit, i) => assert.ok(Math.abs(hit.score - native[i].score) <= 0.005, query));
  }
  assert.deepEqual(browser.errors, []);
});

test('metadata filters keep the pages `qmd search --filter` keeps; the metadata file loads only for them', async () => {
  const note = (status, priority) =>
    `---\nqmd:\n  metadata:\n    status: ${status}\n    priority: ${priority}\n---\n# Sourdough ${status}\n\nSourdough bread.\n`;
  const notes = {
    'a.md': note('published', 3),
    'b.md': note('draft', 9),
    'c.md': note('published', 8),
    'plain.md': '# Plain\n\nSourdough bread, no frontmatter.\n',
    'bad.md': '---\nqmd:\n  metadata:\n    when: [1, a]\n---\n# Bad\n\nSourdough bread.\n',
  };
  const { home } = isolatedEnv();
  const docs = writeFolder(path.join(home, 'meta-notes'), notes);
  cli(cliEnv, ['collection', 'add', docs, '--name', 'meta']);
  const built = execFileSync(qmdBin, ['site', 'build', docs, '--out', path.join(site, 'meta'), '--name', 'meta', '--base-url', '/meta'], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.match(built, /Indexed 5 markdown pages/);
  const { page } = browser;
  await page.goto(`${origin}/index.html`);
  browser.requests.length = 0;
  const run = (query, options) => urls(page, '/meta/qmd/', query, options);
  assert.equal((await run('sourdough')).length, 5);
  assert.ok(!bundleRequests().some((p) => /^\/meta\/qmd\/(m\/|filter\.)/.test(p)), 'an unfiltered search loads no filter code or metadata');
  const filters = [
    { key: 'status', operator: 'eq', value: 'published' },
    { and: [{ key: 'priority', operator: 'gt', value: 5 }, { not: { key: 'status', operator: 'eq', value: 'draft' } }] },
    { key: 'status', operator: 'exists', value: false },
  ];
  for (const filter of filters) {
    const native = cli(cliEnv, ['search', 'sourdough', '--json', '-c', 'meta', '--filter', JSON.stringify(filter)]);
    const expected = native.map((h) => `/meta/${h.file.replace(/^qmd:\/\/meta\//, '').replace(/\.md$/, '.html')}`).sort();
    assert.ok(expected.length > 0, JSON.stringify(filter));
    assert.deepEqual((await run('sourdough', { filter })).sort(), expected, JSON.stringify(filter));
  }
  assert.equal(bundleRequests().filter((p) => p.startsWith('/meta/qmd/m/')).length, 1, 'the metadata file is fetched once');
  assert.equal(bundleRequests().filter((p) => p.startsWith('/meta/qmd/filter.')).length, 1, 'the filter module is fetched once');
  const data = await page.evaluate(async () => {
    const { results } = await window.apis['/meta/qmd/'].search('sourdough', { filter: { key: 'priority', operator: 'gte', value: 8 } });
    return Promise.all(results.map((r) => r.data()));
  });
  assert.deepEqual(data.map((d) => d.metadata).sort((a, b) => a.priority - b.priority), [
    { priority: 8, status: 'published' },
    { priority: 9, status: 'draft' },
  ]);
  await assert.rejects(
    run('sourdough', { filter: { key: 'status', operator: 'near', value: 1 } }),
    /Invalid metadata filter at \$[^:]*: unknown operator 'near'/,
  );
  await assert.rejects(run('sourdough', { filter: '{"key":' }), /Invalid metadata filter/);
  // A filter nested past serde_json's depth limit is refused, not a stack
  // overflow (built in the page: Playwright's argument passing is not
  // what is tested).
  const deep = page.evaluate(async () => {
    let filter = { key: 'status', operator: 'exists', value: true };
    for (let i = 0; i < 500; i++) filter = { not: filter };
    return window.apis['/meta/qmd/'].search('sourdough', { filter });
  });
  await assert.rejects(deep, /Invalid filter JSON: recursion limit exceeded/);
  assert.equal((await run('sourdough')).length, 5, 'a refused filter leaves the next search whole');
  // No page of the first site has frontmatter, so its bundle has no
  // metadata file: each page is tested as having no keys.
  const plain = (options) => urls(page, '/qmd/', 'packrat', options);
  const all = (await plain()).sort();
  assert.ok(all.length > 0);
  assert.deepEqual((await plain({ filter: { key: 'status', operator: 'exists', value: false } })).sort(), all);
  assert.deepEqual(await plain({ filter: { key: 'status', operator: 'exists', value: true } }), []);
  assert.deepEqual(browser.errors, []);
});

test('the semantic tier finds pages by meaning, and nothing for a query about nothing', async () => {
  const { page } = browser;
  await page.goto(`${origin}/index.html`);
  browser.requests.length = 0;
  const run = (query, options) => urls(page, '/sem/qmd/', query, options);
  // No page has "apple" or "setup": only meaning connects them to macOS.
  assert.deepEqual(await run('apple setup', { semantic: false }), []);
  const semantic = await run('apple setup');
  assert.equal(semantic[0], '/install.html', `${semantic}`);
  const files = bundleRequests().filter((p) => p.startsWith('/sem/qmd/'));
  // Only the vocabulary shards the words can match: "apple setup" starts
  // with a and s, and continues with p, l, e, t, u.
  const vocab = files.filter((p) => p.startsWith('/sem/qmd/w/')).map((p) => p.split('/').pop());
  assert.deepEqual(vocab.sort(), ['-e', '-l', '-p', '-t', '-u', 'a', 's'].map((k) => `${k}.bin`).sort());
  const rows = files.filter((p) => p.startsWith('/sem/qmd/r/'));
  assert.ok(rows.length >= 1 && rows.length <= 3, `${rows}`);
  const total = fs.readdirSync(path.join(site, 'sem/qmd/r'), { recursive: true }).length;
  assert.ok(total > 1800, `${total} rows shards in the bundle, ${rows.length} fetched`);
  assert.ok(files.filter((p) => p.startsWith('/sem/qmd/v/')).length <= 10);
  assert.deepEqual(await run('giraffe banana'), [], 'below the similarity floor nothing is a match');
  // Fusion keeps every keyword match.
  const keyword = await run('zstd', { semantic: false });
  const fused = await run('zstd');
  assert.ok(keyword.length === 2 && keyword.every((u) => fused.includes(u)), `${keyword} / ${fused}`);
  assert.deepEqual(browser.errors, []);
});
