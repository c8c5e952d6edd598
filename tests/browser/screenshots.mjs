// Takes the README's screenshots into www/screenshots/: the app (empty,
// indexing, results, document view) and the static-site widget:
//   node tests/browser/screenshots.mjs [TLDR_CORPUS_DIR]   # all of them
//   node tests/browser/screenshots.mjs --site               # the widget only
// The indexing shot needs a folder big enough to catch the progress bar:
// the English tldr pages when given, else the eval docs.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  addStagedFolder, evalDir, isolatedEnv, launch, qmdBin, readFolder, repoRoot, serveApp, serveStatic, stageFolder,
} from './harness.mjs';

const out = path.join(repoRoot, 'www/screenshots');
fs.mkdirSync(out, { recursive: true });
const siteOnly = process.argv[2] === '--site';
const browser = await launch();
const { page } = browser;
const shot = (name) => page.screenshot({ path: path.join(out, `${name}.png`) });

async function appShots(tldr) {
  const { env } = isolatedEnv();
  const server = await serveApp(env);
  try {
    await page.goto(server.url);
    await page.evaluate(() => window.qmd.ready);
    await shot('empty');

    const big = tldr ? readFolder(path.join(tldr, 'pages', 'common')) : null;
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
  } finally {
    server.stop();
  }
}

/** The widget on the fixture site, built and served as a user would. */
async function siteShot() {
  const site = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-shot-site-'));
  fs.cpSync(path.join(repoRoot, 'tests/fixtures/site'), site, { recursive: true });
  execFileSync(qmdBin, ['site', 'build', site, '--out', site]);
  const server = await serveStatic(site);
  try {
    await page.setViewportSize({ width: 900, height: 560 });
    await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
    await page.getByRole('combobox', { name: 'Search this site' }).fill('install archive');
    await page.waitForFunction(() => document.querySelector('qmd-search').shadowRoot.querySelector('mark'));
    await shot('site-widget');
  } finally {
    server.close();
    fs.rmSync(site, { recursive: true, force: true });
  }
}

try {
  if (!siteOnly) await appShots(process.argv[2]);
  await siteShot();
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
}
