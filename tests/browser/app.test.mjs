// The browser app end to end on qmd's eval docs: index a folder into OPFS,
// get the CLI's results, reopen without re-indexing, re-index one changed
// file, refuse a second tab, and never talk to another origin.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  addStagedFolder, cli, evalDir, evalQueries, isolatedEnv, launch, openApp, readFolder, serveApp, stageFolder, writeFolder,
} from './harness.mjs';

const docs = readFolder(path.join(evalDir, 'docs'));
const queries = evalQueries();
let server;
let browser;
let cliEnv;
let firstReport;

before(async () => {
  const { env, home } = isolatedEnv();
  cliEnv = env;
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

test('no request leaves the page origin', () => {
  const origin = new URL(server.url).origin;
  const foreign = browser.requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'));
  assert.deepEqual(foreign, []);
  assert.ok(browser.requests.some((url) => url.endsWith('/pkg/qmd_web_bg.wasm')), 'requests were recorded');
  assert.deepEqual(browser.errors, []);
});
