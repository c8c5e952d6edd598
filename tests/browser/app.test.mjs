// The browser app end to end on qmd's eval docs: index a folder into OPFS,
// get the CLI's results, reopen without re-indexing, re-index one changed
// file, refuse a second tab, and never talk to another origin.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  addStagedFolder, cli, evalDir, foreignRequests, evalQueries, isolatedEnv, launch, openApp, readFolder, serveApp, stageFolder, writeFolder,
} from './harness.mjs';

const docs = readFolder(path.join(evalDir, 'docs'));
const queries = evalQueries();
let server;
let browser;
let cliEnv;
let cliHome;
let firstReport;

before(async () => {
  const { env, home } = isolatedEnv();
  cliEnv = env;
  cliHome = home;
  // The CLI indexes the same files, copied so that both see identical bytes.
  cli(cliEnv, ['collection', 'add', writeFolder(path.join(home, 'eval-docs'), docs), '--name', 'eval']);
  server = await serveApp(env);
  browser = await launch();
  await openApp(browser.page, server.url);
  await stageFolder(browser.page, 'eval-docs', docs);
  firstReport = await addStagedFolder(browser.page, 'eval-docs', 'eval');
});

after(async () => {
  await browser?.close();
  server?.stop();
});

const top3 = (hits) => hits.slice(0, 3).map((h) => `#${h.docid} qmd://${h.collection}/${h.path}`);
const cliTop3 = (hits) => hits.slice(0, 3).map((h) => `${h.docid} ${h.file}`);

test('a picked folder is indexed into OPFS', async () => {
  const [report] = firstReport.collections;
  assert.equal(report.name, 'eval');
  assert.equal(report.added, Object.keys(docs).length);
  const status = await browser.page.evaluate(() => window.qmd.status());
  assert.equal(status.total_documents, 6);
  assert.ok(status.index_bytes > 10_000, `index of ${status.index_bytes} bytes`);
});

test('keyword search gives the CLI top 3 for all 24 eval queries', async () => {
  assert.equal(queries.length, 24);
  for (const { query } of queries) {
    const web = await browser.page.evaluate((q) => window.qmd.search(q), query);
    const native = cli(cliEnv, ['search', query, '--json', '-n', '3']);
    assert.deepEqual(top3(web), cliTop3(native), `search ${JSON.stringify(query)}`);
    web.slice(0, 3).forEach((hit, i) => assert.ok(Math.abs(hit.score - native[i].score) <= 0.005, query));
  }
});

test('hybrid (Enter) gives the CLI query top 3 for all 24 eval queries', async () => {
  for (const { query } of queries) {
    const web = await browser.page.evaluate((q) => window.qmd.hybrid(q), query);
    const native = cli(cliEnv, ['query', query, '--json', '-n', '3', '--no-rerank']);
    assert.deepEqual(top3(web.hits.map((h) => h.hit)), cliTop3(native), `query ${JSON.stringify(query)}`);
  }
});

test('results render with title, path, highlighted snippet and score; a result opens with line numbers', async () => {
  const { page } = browser;
  await page.fill('#q', 'CAP theorem');
  // The previous test left hybrid results: wait for this keystroke's.
  await page.waitForFunction(() => document.getElementById('result-summary').textContent.includes('keyword result'));
  const first = page.locator('#results .result').first();
  assert.equal(await first.locator('.title').textContent(), 'Distributed Systems: A Practical Overview');
  assert.match(await first.locator('.path').textContent(), /^qmd:\/\/eval\/distributed-systems-overview\.md · #[0-9a-f]{6}$/);
  assert.deepEqual(await first.locator('.snippet mark').allTextContents(), ['CAP', 'Theorem', 'CAP', 'theorem']);
  assert.match(await first.locator('.score').textContent(), /^\d+%$/);
  // Keyboard: ↓ selects the first result, Enter opens it.
  await page.press('#q', 'ArrowDown');
  assert.equal(await first.getAttribute('aria-selected'), 'true');
  await page.press('#q', 'Enter');
  await page.waitForSelector('#doc:not(.hidden)');
  const lines = docs['distributed-systems-overview.md'].split('\n');
  assert.equal(await page.locator('#doc-lines tr').count(), lines.length);
  assert.equal(await page.locator('#line-11 .ln').textContent(), '11');
  assert.equal(await page.locator('#line-11 td').nth(1).textContent(), lines[10]);
  assert.ok(await page.locator('#line-11').evaluate((row) => row.classList.contains('hit-line')));
  await page.keyboard.press('Escape');
  await page.waitForSelector('#doc.hidden', { state: 'attached' });
});

test('a reload reopens the index from OPFS without re-indexing', async () => {
  const { page } = browser;
  const before = await page.evaluate(() => window.qmd.status());
  const hitsBefore = await page.evaluate(() => window.qmd.search('Series A fundraising'));
  await page.reload();
  await page.evaluate(() => window.qmd.ready);
  const after = await page.evaluate(() => window.qmd.status());
  assert.equal(after.generation, before.generation, 'nothing was written');
  assert.equal(after.total_documents, 6);
  assert.deepEqual(await page.evaluate(() => window.qmd.search('Series A fundraising')), hitsBefore);
  assert.equal(await page.locator('#collections li .name').textContent(), 'eval');
});

test('after a change to one file, update re-indexes only that file', async () => {
  const { page } = browser;
  const name = 'remote-work-policy.md';
  await stageFolder(page, 'eval-docs', { [name]: `${docs[name]}\n\nQuokka sightings are logged in the wiki.\n` });
  const report = await page.evaluate(() => window.qmd.update());
  const [eval_] = report.collections;
  assert.deepEqual(
    { added: eval_.added, updated: eval_.updated, unchanged: eval_.unchanged, removed: eval_.removed },
    { added: 0, updated: 1, unchanged: 5, removed: 0 },
  );
  const hits = await page.evaluate(() => window.qmd.search('quokka'));
  assert.deepEqual(hits.map((h) => h.path), [name]);
});

test('a second tab on the same index is refused with a clear message', async () => {
  const second = await browser.context.newPage();
  await second.goto(server.url);
  await assert.rejects(second.evaluate(() => window.qmd.ready), /open in another tab/);
  assert.match(await second.locator('#notice').textContent(), /open in another tab/);
  await second.close();
});

test('metadata filters narrow search and hybrid as the CLI does; results show the metadata', async () => {
  const note = (status, priority, topics) =>
    `---\nqmd:\n  metadata:\n    status: ${status}\n    priority: ${priority}\n    topics: [${topics}]\n---\n` +
    `# Sourdough ${status} ${priority}\n\nSourdough bread with flour, water and salt.\n`;
  const notes = {
    'a.md': note('published', 3, 'baking, bread'),
    'b.md': note('draft', 1, 'bread'),
    'c.md': note('published', 8, 'baking'),
    'plain.md': '# Plain\n\nSourdough bread, no frontmatter.\n',
    'bad.md': '---\nqmd:\n  metadata:\n    when: [1, a]\n---\n# Bad\n\nSourdough bread.\n',
  };
  cli(cliEnv, ['collection', 'add', writeFolder(path.join(cliHome, 'meta-notes'), notes), '--name', 'meta']);
  const { page } = browser;
  await stageFolder(page, 'meta-notes', notes);
  const report = await addStagedFolder(page, 'meta-notes', 'meta');
  const added = report.collections.find((c) => c.name === 'meta');
  assert.deepEqual(added.invalid_metadata.map((f) => f.path), ['bad.md']);
  assert.match(await page.locator('#result-summary').textContent(), /1 with invalid qmd\.metadata frontmatter/);

  const files = (hits) => hits.map((h) => `qmd://${h.collection}/${h.path}`).sort();
  const filters = [
    { key: 'status', operator: 'eq', value: 'published' },
    { and: [{ key: 'status', operator: 'eq', value: 'published' }, { key: 'priority', operator: 'gt', value: 5 }] },
    { or: [{ key: 'topics', operator: 'all', value: ['baking', 'bread'] }, { not: { key: 'status', operator: 'exists', value: true } }] },
  ];
  for (const filter of filters) {
    const native = cli(cliEnv, ['search', 'sourdough', '--json', '--filter', JSON.stringify(filter)]);
    const web = await page.evaluate((filter) => window.qmd.search('sourdough', { filter }), filter);
    assert.ok(web.length > 0, JSON.stringify(filter));
    assert.deepEqual(files(web), native.map((h) => h.file).sort(), `search ${JSON.stringify(filter)}`);
    const hybrid = await page.evaluate((filter) => window.qmd.hybrid('sourdough bread', { filter }), filter);
    const nativeQuery = cli(cliEnv, ['query', 'sourdough bread', '--json', '--no-rerank', '--no-expand', '--filter', JSON.stringify(filter)]);
    assert.deepEqual(files(hybrid.hits.map((h) => h.hit)), nativeQuery.map((h) => h.file).sort(), `query ${JSON.stringify(filter)}`);
  }
  // Results carry and show the metadata; the limit counts passing documents.
  const [c] = await page.evaluate(() => window.qmd.search('sourdough', { filter: { key: 'priority', operator: 'gte', value: 8 } }));
  assert.deepEqual(c.metadata, { priority: 8, status: 'published', topics: ['baking'] });
  assert.deepEqual(await page.locator('#results .result').first().locator('.metadata .chip').allTextContents(),
    ['priority: 8', 'status: published', 'topics: baking']);
  // Without a filter: every document, bad.md and plain.md included.
  assert.equal((await page.evaluate(() => window.qmd.search('sourdough'))).length, 5);
  // A bad filter is refused with qmd's message, shown on the page.
  await assert.rejects(
    page.evaluate(() => window.qmd.search('sourdough', { filter: { key: 'status', operator: 'exists', value: 'yes' } })),
    /Invalid metadata filter at \$\.value: 'exists' requires a boolean value/,
  );
  await page.fill('#filter', '{status: published}');
  await page.dispatchEvent('#filter', 'change');
  await page.waitForFunction(() => /Invalid filter JSON/.test(document.getElementById('notice').textContent));
  await page.fill('#filter', '');
});

test('no request leaves the page origin', () => {
  const origin = new URL(server.url).origin;
  assert.deepEqual(foreignRequests(browser.requests, origin), []);
  // This Chromium runs relaxed SIMD and `qmd web` isolates the page, so
  // the page loads the threaded build (www/engine.js).
  assert.ok(browser.requests.some((url) => url.endsWith('/pkg-threads/qmd_web_bg.wasm')), 'requests were recorded');
  assert.deepEqual(browser.errors, []);
});
