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
  // The semantic tier, built with the test model (all-MiniLM-L6-v2), and
  // the same with a similarity floor no page reaches.
  for (const [out, floor] of [['sem', '0.2'], ['sem-floor', '0.999']]) {
    const args = ['site', 'build', site, '--out', path.join(site, out), '--semantic', '--model', testModelDir()];
    execFileSync(qmdBin, [...args, '--min-similarity', floor], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  // A page that is not part of the site (written after the build): the
  // modal box with facets, on a page that offers light and dark.
  fs.writeFileSync(path.join(site, 'widget.html'), `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">
<title>Packrat</title><script type="module" src="/qmd/qmd-search.js"></script>
<style>body { font: 16px system-ui, sans-serif; margin: 1.5rem 2rem; } header { display: flex; gap: 2rem; align-items: center; }</style></head>
<body><header><strong>Packrat</strong> <qmd-search modal facets="section" placeholder="Search the docs"></qmd-search></header>
<main><h1>Packrat</h1><p>A fast archiver.</p></main></body></html>`);
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
  const subTitles = await sub.allTextContents();
  assert.ok(subTitles.includes('Extracting an archive'));
  // The page's own heading (its title) is not repeated as a sub-result.
  assert.ok(!subTitles.includes(titles[0]), `${subTitles}`);
  assert.equal(await sub.first().getAttribute('href'), '/guide/archives.html#extract');
  const status = await page.getByRole('status').textContent();
  assert.match(status, /^\d+ results?$/);
  // Only the bundle's own origin, one term shard for one word, one
  // fragment per shown result.
  assert.ok(browser.requests.every((u) => u.startsWith(origin)), browser.requests.join('\n'));
  const shards = bundleRequests().filter((p) => p.startsWith('/qmd/t/'));
  const all = fs.readdirSync(path.join(site, 'qmd/t'), { recursive: true }).filter((f) => f.endsWith('.bin')).length;
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

test('the semantic tier finds pages by meaning, and nothing under its similarity floor', async () => {
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
  // with a piece of a or ap, s or se, and continues with p, l, e, t, u.
  const vocab = files.filter((p) => p.startsWith('/sem/qmd/w/')).map((p) => p.split('/').pop());
  assert.deepEqual(vocab.sort(), ['-e', '-l', '-p', '-t', '-u', 'a', 'ap', 's', 'se'].map((k) => `${k}.bin`).sort());
  const rows = files.filter((p) => p.startsWith('/sem/qmd/r/'));
  assert.ok(rows.length >= 1 && rows.length <= 3, `${rows}`);
  const total = fs.readdirSync(path.join(site, 'sem/qmd/r'), { recursive: true }).length;
  assert.ok(total > 1800, `${total} rows shards in the bundle, ${rows.length} fetched`);
  assert.ok(files.filter((p) => p.startsWith('/sem/qmd/v/')).length <= 10);
  // Asked in the page's own words too.
  assert.equal((await run('how to install on a mac'))[0], '/install.html');
  // Vector search finds a nearest page for anything; a floor no page
  // reaches leaves only the keyword tier's matches.
  const floored = (query) => urls(page, '/sem-floor/qmd/', query);
  assert.deepEqual(await floored('apple setup'), []);
  assert.deepEqual(await floored('giraffe banana'), []);
  // Fusion keeps every keyword match.
  const keyword = await run('zstd', { semantic: false });
  const fused = await run('zstd');
  assert.ok(keyword.length === 2 && keyword.every((u) => fused.includes(u)), `${keyword} / ${fused}`);
  assert.deepEqual(await floored('zstd'), keyword);
  assert.deepEqual(browser.errors, []);
});

/** The README's screenshots go where QMD_SCREENSHOTS_DIR says (a
 * temporary folder otherwise: they are taken either way). */
const shots = process.env.QMD_SCREENSHOTS_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-shots-'));

/** WCAG relative luminance of a computed `rgb(…)` colour. */
function luminance(color) {
  const [r, g, b] = color.match(/[\d.]+/g).slice(0, 3).map((c) => {
    const v = Number(c) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a, b) => (Math.max(luminance(a), luminance(b)) + 0.05) / (Math.min(luminance(a), luminance(b)) + 0.05);

test('Ctrl+K opens the modal search, facets count and narrow its results, Escape and the backdrop close it', async () => {
  const { page } = browser;
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(`${origin}/widget.html`);
  await page.waitForFunction(() => customElements.get('qmd-search'));
  const dialog = page.getByRole('dialog', { name: 'Search this site' });
  const trigger = page.getByRole('button', { name: /^Search/ });
  assert.match(await trigger.textContent(), /Ctrl K/);
  assert.equal(await dialog.isVisible(), false);
  await page.keyboard.press('Control+k');
  await dialog.waitFor();
  const focused = () => page.evaluate(() => document.querySelector('qmd-search').shadowRoot.activeElement?.getAttribute('role'));
  assert.equal(await focused(), 'combobox', 'the box has the focus');
  await page.keyboard.type('packrat');
  const titles = page.locator('qmd-search li.result > a.title');
  await titles.first().waitFor();
  await page.getByRole('status').filter({ hasText: /^5 results$/ }).waitFor();
  // Counts among the query's results (reference: none of its 5 pages).
  const facetLabels = () => page.locator('qmd-search .facets label').allTextContents();
  assert.deepEqual((await facetLabels()).map((t) => t.trim()), ['guide (3)', 'blog (1)', 'home (1)']);
  const api = (filters) => urls(page, '/qmd/', 'packrat', { limit: 100, filters });
  await page.getByRole('checkbox', { name: 'guide (3)' }).check();
  await page.getByRole('status').filter({ hasText: /^3 results$/ }).waitFor();
  const guide = await api({ section: 'guide' });
  assert.equal(guide.length, 3);
  assert.deepEqual(await page.locator('qmd-search li.result > a.title').evaluateAll((as) => as.map((a) => a.getAttribute('href'))), guide);
  // Values of one key widen together; the counts stay the query's.
  await page.getByRole('checkbox', { name: 'blog (1)' }).check();
  await page.getByRole('status').filter({ hasText: /^4 results$/ }).waitFor();
  assert.deepEqual((await facetLabels()).map((t) => t.trim()), ['guide (3)', 'blog (1)', 'home (1)']);
  await page.getByRole('checkbox', { name: 'blog (1)' }).uncheck();
  await page.getByRole('status').filter({ hasText: /^3 results$/ }).waitFor();
  await page.screenshot({ path: path.join(shots, 'site-facets.png') });
  // The keyboard moves through the dialog's results as through the inline box's.
  await page.getByRole('combobox', { name: 'Search this site' }).focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.getByRole('option').first().getAttribute('aria-selected'), 'true');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  // Opened again by its button; a click outside the dialog closes it.
  await trigger.click();
  await dialog.waitFor();
  assert.equal(await focused(), 'combobox');
  await page.mouse.click(5, 790);
  await dialog.waitFor({ state: 'hidden' });
  // A result's link closes the dialog (same-page anchors included).
  await page.keyboard.press('Control+k');
  await page.keyboard.type('compression');
  await page.locator('qmd-search li.result > a.title').first().waitFor();
  await Promise.all([page.waitForURL(/compression/), page.locator('qmd-search li.result > a.title').first().click()]);
  assert.deepEqual(browser.errors, []);
});

test('the widget follows the page: light and dark where it offers both, light where it offers only light', async () => {
  const { page } = browser;
  const colors = () =>
    page.evaluate(() => {
      const root = document.querySelector('qmd-search').shadowRoot;
      const style = (sel) => getComputedStyle(root.querySelector(sel));
      const box = root.querySelector('dialog').open ? style('dialog') : style('input');
      return { bg: box.backgroundColor, text: box.color, mark: style('mark').backgroundColor, markText: style('mark').color };
    });
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${origin}/widget.html`);
    await page.waitForFunction(() => customElements.get('qmd-search'));
    await page.keyboard.press('Control+k');
    await page.keyboard.type('extract');
    await page.locator('qmd-search mark').first().waitFor();
    const c = await colors();
    if (scheme === 'dark') {
      assert.ok(luminance(c.bg) < 0.05 && luminance(c.text) > 0.6, JSON.stringify(c));
    } else {
      assert.ok(luminance(c.bg) > 0.8 && luminance(c.text) < 0.05, JSON.stringify(c));
    }
    // Highlighted terms stay readable in both.
    assert.ok(contrast(c.mark, c.markText) >= 4.5, `${scheme}: ${JSON.stringify(c)}`);
    await page.screenshot({ path: path.join(shots, `site-modal-${scheme}.png`) });
  }
  // A page that declares no dark scheme keeps a light widget on a dark system.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${origin}/install.html`);
  const input = page.getByRole('combobox', { name: 'Search this site' });
  await input.fill('extract');
  await page.locator('qmd-search mark').first().waitFor();
  const c = await colors();
  assert.ok(luminance(c.bg) > 0.8, JSON.stringify(c));
  // Custom properties win over the defaults.
  await page.evaluate(() => document.querySelector('qmd-search').style.setProperty('--qmd-mark', 'rgb(0, 128, 0)'));
  assert.equal((await colors()).mark, 'rgb(0, 128, 0)');
  await page.emulateMedia({ colorScheme: 'light' });
  assert.deepEqual(browser.errors, []);
});

test('facets show filter values as text, at most 12 of a key, and skip keys the site does not have', async () => {
  // 30 pages: 15 tags, and one value that is markup.
  const hostile = '<img src=x onerror="window.pwned=1">&amp;';
  const pages = {};
  for (let i = 0; i < 30; i++) {
    pages[`p${i}.html`] = `<html lang="en"><head><title>Widget ${i}</title></head>
<body><main data-qmd-filter='tag:t${String(i % 15).padStart(2, '0')}, kind:${hostile}'><h1>Widget ${i}</h1><p>A widget page.</p></main></body></html>`;
  }
  const { home } = isolatedEnv();
  const src = writeFolder(path.join(home, 'facet-site'), pages);
  execFileSync(qmdBin, ['site', 'build', src, '--out', path.join(site, 'facets')], { stdio: 'ignore' });
  fs.writeFileSync(path.join(site, 'facets', 'box.html'), `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Facets</title>
<script type="module" src="/qmd/qmd-search.js"></script></head>
<body><qmd-search bundle="/facets/qmd/" facets="tag, kind, missing" page-size="3"></qmd-search></body></html>`);
  const { page } = browser;
  await page.goto(`${origin}/facets/box.html`);
  await page.getByRole('combobox', { name: 'Search this site' }).fill('widget');
  await page.getByRole('status').filter({ hasText: /^30 results$/ }).waitFor();
  const legends = await page.locator('qmd-search .facets legend').allTextContents();
  assert.deepEqual(legends, ['tag', 'kind']);
  const tags = await page.locator('qmd-search .facets fieldset').first().locator('label').allTextContents();
  assert.equal(tags.length, 12, `${tags}`);
  assert.ok(tags.every((t) => /^ t\d\d \(2\)$/.test(t)), `${tags}`);
  const kind = await page.locator('qmd-search .facets fieldset').nth(1).locator('label').allTextContents();
  assert.equal(kind.length, 1);
  assert.ok(kind[0].includes('<img src=x onerror="window.pwned=1">') && kind[0].endsWith(' (30)'), kind[0]);
  assert.equal(await page.evaluate(() => document.querySelector('qmd-search').shadowRoot.querySelectorAll('img').length), 0);
  // Checking the markup value filters by it, as any value.
  await page.getByRole('checkbox', { name: /onerror/ }).check();
  await page.getByRole('status').filter({ hasText: /^30 results$/ }).waitFor();
  await page.getByRole('checkbox', { name: 't03 (2)' }).check();
  await page.getByRole('status').filter({ hasText: /^2 results$/ }).waitFor();
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  // "More results" adds the next page of results.
  await page.getByRole('checkbox', { name: 't03 (2)' }).uncheck();
  await page.getByRole('status').filter({ hasText: /^30 results$/ }).waitFor();
  await page.locator('qmd-search li.result').nth(2).waitFor();
  assert.equal(await page.locator('qmd-search li.result').count(), 3);
  await page.getByRole('button', { name: 'More results' }).click();
  await page.locator('qmd-search li.result').nth(5).waitFor();
  assert.equal(await page.locator('qmd-search li.result').count(), 6);
  assert.deepEqual(browser.errors, []);
});
