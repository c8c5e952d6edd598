// Takes the README's screenshots of the app (empty, indexing, results,
// document view) into www/screenshots/:
//   node tests/browser/screenshots.mjs [TLDR_CORPUS_DIR]
// The indexing shot needs a folder big enough to catch the progress bar:
// the English tldr pages when given, else the eval docs.

import fs from 'node:fs';
import path from 'node:path';
import {
  addStagedFolder, evalDir, isolatedEnv, launch, readFolder, repoRoot, serveApp, stageFolder,
} from './harness.mjs';

const out = path.join(repoRoot, 'www/screenshots');
fs.mkdirSync(out, { recursive: true });
const { env } = isolatedEnv();
const server = await serveApp(env);
const browser = await launch();
const { page } = browser;
const shot = (name) => page.screenshot({ path: path.join(out, `${name}.png`) });

try {
  await page.goto(server.url);
  await page.evaluate(() => window.qmd.ready);
  await shot('empty');

  const big = process.argv[2] ? readFolder(path.join(process.argv[2], 'pages', 'common')) : null;
  await stageFolder(page, 'notes', readFolder(path.join(evalDir, 'docs')));
  if (big) await stageFolder(page, 'tldr-common', big);
  const first = big ? 'tldr-common' : 'notes';
  const indexing = addStagedFolder(page, first, first);
  await page.waitForSelector('#progress:not(.hidden)');
  await page.waitForFunction(() => Number(document.getElementById('progress-bar').value) > 0).catch(() => {});
  await shot('indexing');
  await indexing;
  if (big) await addStagedFolder(page, 'notes', 'notes');

  await page.fill('#q', 'CAP theorem consistency');
  await page.press('#q', 'Enter');
  await page.waitForFunction(() => document.getElementById('result-summary').textContent.includes('hybrid'));
  await page.locator('#results .explain summary').first().click();
  await shot('results');

  await page.press('#q', 'ArrowDown');
  await page.press('#q', 'Enter');
  await page.waitForSelector('#doc:not(.hidden)');
  await shot('document');
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
  server.stop();
}
