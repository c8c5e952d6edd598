import { chromium } from 'playwright-core';
import fs from 'node:fs';
const dir = fs.mkdtempSync('/tmp/chr-');
const ctx = await chromium.launchPersistentContext(dir, { executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--enable-unsafe-webgpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'] });
const page = ctx.pages()[0] ?? await ctx.newPage();
page.on('console', (m) => console.log('console:', m.text()));
page.on('pageerror', (e) => console.log('pageerror:', e.message));
page.on('worker', (w) => { console.log('worker', w.url()); w.on('console', (m) => console.log('wconsole:', m.text())); });
page.on('requestfailed', (r) => console.log('failed', r.url(), r.failure()?.errorText));
page.on('response', (r) => console.log('resp', r.status(), r.url()));
await page.goto(process.argv[2]);
await page.waitForTimeout(1000); console.log(await page.evaluate(() => import("./pkg/qmd_web.js").then(m => Object.keys(m).join(","), e => "ERR " + e)));
console.log(await page.evaluate(() => document.getElementById('engine-status').textContent + ' | ' + document.getElementById('notice').textContent));
await ctx.close();
