// The browser's GGUF benchmark (scripts/bench-web-gguf.sh): MiniLM embedding
// throughput in headless Chromium, on the CPU, in one run —
//   - this project's page, the app's bulk path (`embed`'s shares on one
//     helper Worker per core), on the Q8_0 GGUF file and on the f32
//     safetensors repository, served by `qmd web`;
//   - wllama 3.8.1 (llama.cpp compiled to wasm, threads through
//     SharedArrayBuffer on a cross-origin-isolated page) on the same GGUF
//     file, a text per call.
// Same texts everywhere (tldr pages cut at 254 word pieces, from
// `qmd-bench-texts`); each side's worst cosine against the native engine's
// f32 vectors shows they computed the same thing. Markdown on stdout.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  cosine, isolatedEnv, launch, nativeEmbeddings, serveApp, serveStatic, targetDir, testModelDir,
} from './harness.mjs';

const texts = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const threads = Number(process.env.BENCH_THREADS ?? 2);
const fixtures = execFileSync(path.join(targetDir, 'release/qmd-gguf-fixtures'), { encoding: 'utf8' }).trim();
const gguf = path.join(fixtures, 'minilm-q8_0.gguf');
const modelDir = testModelDir();
const wllamaDir = path.join(import.meta.dirname, 'reference/node_modules/@wllama/wllama');
const native = nativeEmbeddings(modelDir, texts);
const worstCosine = (vectors) => Math.min(...vectors.map((v, i) => cosine(v, native[i])));
const phase = (name) => console.error(`bench-gguf: ${name}`);

/** This project's page on `model`: texts/s of the bulk path after a warm-up. */
async function ours(browser, label, model) {
  const { env } = isolatedEnv({ QMD_EMBED_MODEL: model, QMD_RERANK_MODEL: './no-reranker' });
  const server = await serveApp(env);
  try {
    const { page } = browser;
    await page.goto(`${server.url}?device=cpu`);
    await page.evaluate(() => window.qmd.ready);
    const loaded = await page.evaluate(() => window.qmd.loadModel());
    const run = (t) =>
      page.evaluate(async (t) => {
        const start = performance.now();
        const { vectors } = await window.qmd.call('embedShared', { texts: t });
        return { ms: performance.now() - start, vectors: vectors.map((v) => [...v]) };
      }, t);
    await run(texts.slice(0, 16));
    const { ms, vectors } = await run(texts);
    return { label: `${label} (${loaded.device}, ${loaded.workers} Workers)`, rate: texts.length / (ms / 1000), worst: worstCosine(vectors) };
  } finally {
    server.stop();
  }
}

/** A cross-origin-isolated static server for the wllama page: a folder
 * holding the page and links to wllama's files and the GGUF file. */
function referenceServer() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-wllama-'));
  fs.writeFileSync(path.join(root, 'index.html'), `<!doctype html><script type="module">
import { Wllama } from './wllama/esm/index.js';
window.Wllama = Wllama;
window.ready = true;
</script>`);
  fs.symlinkSync(wllamaDir, path.join(root, 'wllama'));
  fs.symlinkSync(gguf, path.join(root, 'model.gguf'));
  process.on('exit', () => fs.rmSync(root, { recursive: true, force: true }));
  return serveStatic(root, {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
  });
}

/** wllama on the GGUF file, `threads` threads: texts/s, a text per call. */
async function wllama(browser) {
  const server = await referenceServer();
  try {
    const { page } = browser;
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => window.ready);
    const isolated = await page.evaluate(() => crossOriginIsolated);
    await page.evaluate(async (threads) => {
      const wllama = new window.Wllama({ default: '/wllama/esm/wasm/wllama.wasm' }, { suppressNativeLog: true });
      const blob = await (await fetch('/model.gguf')).blob();
      await wllama.loadModel([blob], {
        embeddings: true, pooling_type: 'mean', n_threads: threads, n_ctx: 512, n_batch: 512, n_ubatch: 512, n_gpu_layers: 0,
      });
      window.wllama = wllama;
    }, threads);
    console.error(`bench-gguf: wllama loaded (cross-origin isolated: ${isolated})`);
    phase('wllama, a text per call');
    // A text per call, as wllama's examples do: an array input in one
    // call crashed the page (8 texts) or ran past 10 minutes (200).
    const result = await page.evaluate(async (texts) => {
      const embed = async (t) => {
        const out = [];
        for (const text of t) out.push((await window.wllama.createEmbedding({ input: text })).data[0].embedding);
        return out;
      };
      await embed(texts.slice(0, 4));
      const start = performance.now();
      const vectors = await embed(texts);
      return { ms: performance.now() - start, vectors };
    }, texts);
    const rows = [
      {
        label: `wllama 3.8.1, Q8_0 GGUF, ${threads} threads${isolated ? '' : ' (not isolated: 1 thread)'}, a text per call`,
        rate: texts.length / (result.ms / 1000),
        worst: worstCosine(result.vectors),
      },
    ];
    return rows;
  } finally {
    server.close();
  }
}

const browser = await launch();
const rows = [];
try {
  phase('this project, Q8_0 GGUF');
  rows.push(await ours(browser, 'this project, MiniLM Q8_0 GGUF', gguf));
  phase('this project, f32 safetensors');
  rows.push(await ours(browser, 'this project, MiniLM f32 safetensors', modelDir));
  phase('wllama');
  rows.push(...(await wllama(browser)));
} finally {
  await browser.close();
}
const version = execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
console.log('# GGUF embedding in the browser (`scripts/bench-web-gguf.sh`)\n');
console.log(`${new Date().toISOString().slice(0, 10)}, one run: MiniLM (all-MiniLM-L6-v2) on the CPU in each runtime, ` +
  `${texts.length} tldr pages cut at 254 word pieces, ${version}, headless.\n`);
console.log('| runtime, in the page | texts/s | worst cosine vs native f32 | this project Q8_0 = |');
console.log('|---|---:|---:|---:|');
for (const { label, rate, worst } of rows) {
  console.log(`| ${label} | ${rate.toFixed(2)} | ${worst.toFixed(5)} | ${(rows[0].rate / rate).toFixed(2)}× |`);
}
