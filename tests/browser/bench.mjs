// The browser benchmark (scripts/bench-web.sh): the app in headless
// Chromium against the native CLI on the same files, in the same run.
// Indexing (scan + index + OPFS commit), embedding on WebGPU (SwiftShader
// here), keyword and hybrid query latency, OPFS index size, wasm size.
// Writes Markdown to stdout.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import {
  addStagedFolder, appDir, cli, evalDir, evalQueries, isolatedEnv, launch, readFolder, serveApp, stageFolder,
  testModelDir, writeFolder,
} from './harness.mjs';

const corpus = process.argv[2];
const embedSample = Number(process.env.BENCH_EMBED_DOCS ?? 100);
const embedRuns = Number(process.env.BENCH_EMBED_RUNS ?? 3);
const queryRuns = Number(process.env.BENCH_QUERY_RUNS ?? 3);
const modelDir = testModelDir();
// No reranker: hybrid latency is measured as before (fused order).
const { env, home } = isolatedEnv({ QMD_EMBED_MODEL: modelDir, QMD_RERANK_MODEL: './no-reranker' });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(x < 10 ? 1 : 0)} ms`;
const s = (x) => `${(x / 1000).toFixed(1)} s`;
const mb = (bytes) => `${(bytes / 1048576).toFixed(2)} MB`;

function timed(work) {
  const start = performance.now();
  const result = work();
  return [performance.now() - start, result];
}

function dirBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    const stat = fs.statSync(path.join(dir, entry));
    if (stat.isFile()) total += stat.size;
  }
  return total;
}

/** Adds the OPFS folder `fixtures/<name>` as collection `name`; the
 * page-side time of the add (scan, index, OPFS commit). */
function timedAddStaged(page, name) {
  return page.evaluate(async (name) => {
    const root = await navigator.storage.getDirectory();
    const dir = await (await root.getDirectoryHandle('fixtures')).getDirectoryHandle(name);
    const start = performance.now();
    await window.qmd.addFolder(dir, name);
    return [performance.now() - start];
  }, name);
}

async function browserTimed(page, work, arg) {
  return page.evaluate(
    async ({ work, arg }) => {
      const start = performance.now();
      const result = await window.qmd[work](...arg);
      return [performance.now() - start, result];
    },
    { work, arg },
  );
}

async function queryLatency(page, kind, queries) {
  const times = [];
  for (let run = 0; run < queryRuns; run++) {
    for (const q of queries) times.push((await browserTimed(page, kind, [q]))[0]);
  }
  return median(times);
}

const began = performance.now();
const phase = (name) => console.error(`bench: ${((performance.now() - began) / 1000).toFixed(1)} s: ${name}`);
const rows = [];
const row = (...cells) => rows.push(`| ${cells.join(' | ')} |`);

const server = await serveApp(env);
const browser = await launch();
const { page } = browser;
try {
  await page.goto(`${server.url}?device=auto`);
  await page.evaluate(() => window.qmd.ready);
  const model = await page.evaluate(() => window.qmd.loadModel());

  phase('eval docs');
  // --- the qmd eval docs -----------------------------------------------------
  const evalDocs = readFolder(path.join(evalDir, 'docs'));
  const evalCopy = writeFolder(path.join(home, 'eval'), evalDocs);
  const [nativeIndexEval] = timed(() => cli(env, ['collection', 'add', evalCopy, '--name', 'eval']));
  await stageFolder(page, 'eval', evalDocs);
  const [webIndexEval] = await timedAddStaged(page, 'eval');
  phase('embedding eval docs');
  const [nativeEmbedEval] = timed(() => cli(env, ['embed']));
  const [webEmbedEval, embedded] = await browserTimed(page, 'embed', []);
  const queries = evalQueries().map((q) => q.query);
  phase('eval queries');
  const keywordEval = await queryLatency(page, 'search', queries);
  const hybridEval = await queryLatency(page, 'hybrid', queries);
  const evalStatus = await page.evaluate(() => window.qmd.status());

  phase('tldr pages');
  // --- the English tldr pages ------------------------------------------------
  const tldr = readFolder(path.join(corpus, 'pages'));
  const tldrCopy = writeFolder(path.join(home, 'tldr'), tldr);
  const [nativeIndexTldr] = timed(() => cli(env, ['collection', 'add', tldrCopy, '--name', 'tldr']));
  phase('staging tldr in OPFS');
  const names = Object.keys(tldr);
  for (let i = 0; i < names.length; i += 500) {
    await stageFolder(page, 'tldr', Object.fromEntries(names.slice(i, i + 500).map((n) => [n, tldr[n]])));
  }
  phase('indexing tldr in the browser');
  const [webIndexTldr] = await timedAddStaged(page, 'tldr');
  const tldrQueries = ['list files', 'compress a directory', 'git commit', 'show disk usage', 'kill a process',
    'download a file', 'search text in files', 'change file permissions'];
  phase('tldr queries');
  const keywordTldr = await queryLatency(page, 'search', tldrQueries);
  const tldrStatus = await page.evaluate(() => window.qmd.status());
  const nativeIndexBytes = dirBytes(path.join(home, 'cache/qmd/index.qmdx'));

  phase('embedding tldr samples');
  // Embedding all 7k pages takes too long on SwiftShader: samples, both
  // sides. The load of this shared machine drifts between one side's run
  // and the other's, so the sides take turns over several runs, each on
  // pages of its own (a page embedded once keeps its vector), and the
  // table shows medians.
  const common = names.filter((n) => n.startsWith('common/'));
  const embedRunsDone = [];
  for (let run = 0; run < embedRuns; run++) {
    const pages = common.slice(run * embedSample, (run + 1) * embedSample);
    const sample = Object.fromEntries(pages.map((n) => [n, tldr[n]]));
    const name = `sample${run}`;
    cli(env, ['collection', 'add', writeFolder(path.join(home, name), sample), '--name', name]);
    await stageFolder(page, name, sample);
    await addStagedFolder(page, name, name);
    const [native] = timed(() => cli(env, ['embed', '-c', name]));
    const [web, embedRun] = await browserTimed(page, 'embed', [{ collection: name }]);
    embedRunsDone.push({ native, web, chunks: embedRun.report.chunks });
  }
  const webEmbedSample = median(embedRunsDone.map((r) => r.web));
  const nativeEmbedSample = median(embedRunsDone.map((r) => r.native));
  const embedRatio = median(embedRunsDone.map((r) => r.web / r.native));
  const sampleChunks = median(embedRunsDone.map((r) => r.chunks));
  phase('tldr hybrid queries');
  const hybridTldr = await queryLatency(page, 'hybrid', tldrQueries);

  // --- sizes ---------------------------------------------------------------------
  const wasm = fs.readFileSync(path.join(appDir, 'pkg/qmd_web_bg.wasm'));
  const shell = ['index.html', 'app.js', 'worker.js', 'folders.js', 'highlight.js', 'model-cache.js', 'style.css', 'sw.js', 'engine.js', 'pkg/qmd_web.js']
    .map((f) => fs.readFileSync(path.join(appDir, f)));
  const gz = (b) => zlib.gzipSync(b, { level: 9 }).length;

  row('measure', 'browser', 'native CLI', 'browser ÷ native');
  row('---', '---:', '---:', '---:');
  row('index qmd eval docs (6 files)', ms(webIndexEval), ms(nativeIndexEval), (webIndexEval / nativeIndexEval).toFixed(2));
  row(`embed qmd eval docs (${embedded.report.chunks} chunks)`, s(webEmbedEval), s(nativeEmbedEval), (webEmbedEval / nativeEmbedEval).toFixed(2));
  row(`index English tldr pages (${names.length} files)`, s(webIndexTldr), s(nativeIndexTldr), (webIndexTldr / nativeIndexTldr).toFixed(2));
  row(`embed ${embedSample} tldr pages (median of ${embedRuns} runs, ~${sampleChunks} chunks)`, s(webEmbedSample), s(nativeEmbedSample), embedRatio.toFixed(2));
  row('projected: embed all English tldr pages', s((webEmbedSample * names.length) / embedSample), s((nativeEmbedSample * names.length) / embedSample), '');
  row('keyword query, eval docs (median)', ms(keywordEval), '', '');
  row('hybrid query, eval docs (median)', ms(hybridEval), '', `${(hybridEval / keywordEval).toFixed(1)}× keyword`);
  row('keyword query, tldr (median)', ms(keywordTldr), '', '');
  row('hybrid query, tldr (median)', ms(hybridTldr), '', `${(hybridTldr / keywordTldr).toFixed(1)}× keyword`);
  row('index size, eval docs + tldr pages (eval vectors)', mb(tldrStatus.index_bytes), mb(nativeIndexBytes), (tldrStatus.index_bytes / nativeIndexBytes).toFixed(2));
  row('wasm (raw / gzip -9)', `${mb(wasm.length)} / ${mb(gz(wasm))}`, '', '');
  row('app shell JS+HTML+CSS (gzip -9)', mb(shell.reduce((n, b) => n + gz(b), 0)), '', '');
  console.log(`Model: ${model.model} on ${model.device}; ${evalStatus.vectors} vectors after the eval docs.`);
  console.log(`Query latency: ${queryRuns} runs of ${queries.length} eval / ${tldrQueries.length} tldr queries, as the page sees it (worker round trip included).`);
  console.log('');
  console.log(rows.join('\n'));
  console.log('');
  console.log(`Embedding runs, browser / native (ratio): ${embedRunsDone
    .map((r) => `${s(r.web)} / ${s(r.native)} (${(r.web / r.native).toFixed(2)}, ${r.chunks} chunks)`).join('; ')}.`);
} finally {
  await browser.close();
  server.stop();
}
