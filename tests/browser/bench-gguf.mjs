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
  cosine, isolatedEnv, launch, nativeEmbeddings, repoRoot, serveApp, serveStatic, targetDir, testModelDir,
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

/** This project's page on `model` (engine build `simd`: `relaxed`,
 * `simd128`, or the page's own choice): texts/s of the bulk path after a
 * warm-up. */
async function ours(browser, label, model, simd = '') {
  const { env } = isolatedEnv({ QMD_EMBED_MODEL: model, QMD_RERANK_MODEL: './no-reranker' });
  const server = await serveApp(env);
  try {
    const { page } = browser;
    await page.goto(`${server.url}?device=cpu${simd && `&simd=${simd}`}`);
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

/** The native CPU kernels on the same GGUF file and texts, every core
 * (qmd-gguf-bench, one process, after loading): texts/s. */
function nativeGguf() {
  const file = path.join(os.tmpdir(), `qmd-bench-texts-${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify(texts));
  try {
    const out = execFileSync(path.join(targetDir, 'release/qmd-gguf-bench'), ['embed', gguf, file], {
      encoding: 'utf8', env: { ...process.env, BENCH_DEVICES: 'cpu' }, maxBuffer: 1 << 26,
    });
    return JSON.parse(out).cpu_per_s;
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** SmolLM2-135M Q4_1 decoding: in the page (engine build `simd`), 32
 * greedy tokens after a prompt less the same prompt with one token, so
 * tokens/s of decoding alone; and natively (qmd-gguf-bench generate). */
async function decoding(browser) {
  const smollm2 = execFileSync('bash', [path.join(repoRoot, 'scripts/test-weights.sh'), 'smollm2'], { encoding: 'utf8' }).trim();
  const prompt = '<|im_start|>user\nList three uses of a search index.<|im_end|>\n<|im_start|>assistant\n';
  const prompts = path.join(os.tmpdir(), `qmd-bench-prompts-${process.pid}.json`);
  fs.writeFileSync(prompts, JSON.stringify([prompt]));
  const native = JSON.parse(execFileSync(path.join(targetDir, 'release/qmd-gguf-bench'), ['generate', smollm2, prompts], { encoding: 'utf8' }));
  fs.rmSync(prompts, { force: true });
  const rows = [{ label: 'native CLI kernels (qmd-gguf-bench generate, every core)', rate: native.runs[0].decode_per_s }];
  const { env } = isolatedEnv({ QMD_EMBED_MODEL: modelDir, QMD_RERANK_MODEL: './no-reranker', QMD_GENERATE_MODEL: smollm2 });
  const server = await serveApp(env);
  try {
    for (const simd of ['relaxed', 'simd128']) {
      const { page } = browser;
      await page.goto(`${server.url}?device=cpu&simd=${simd}`);
      await page.evaluate(() => window.qmd.ready);
      const loaded = await page.evaluate(() => window.qmd.loadGenerator());
      const follow = (reference) =>
        page.evaluate(async ({ prompt, reference }) => {
          const start = performance.now();
          await window.qmd.followTokens(prompt, reference);
          return performance.now() - start;
        }, { prompt, reference });
      // Any 32 tokens will do: the page follows them, one decoding step each.
      const reference = Array.from({ length: 33 }, (_, i) => 100 + i);
      await follow(reference); // warm-up
      const whole = Math.min(await follow(reference), await follow(reference));
      const first = Math.min(await follow(reference.slice(0, 1)), await follow(reference.slice(0, 1)));
      rows.push({ label: `the page, ${loaded.device}`, rate: 32 / ((whole - first) / 1000) });
    }
  } finally {
    server.stop();
  }
  return rows;
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
let decode = [];
try {
  if (process.env.BENCH_ONLY !== 'decode') await embedding();
  if (process.env.BENCH_ONLY !== 'embed') {
    phase('decoding');
    decode = await decoding(browser);
  }
} finally {
  await browser.close();
}

/** The embedding rows, into `rows`. */
async function embedding() {
  phase('this project, Q8_0 GGUF, relaxed SIMD');
  rows.push(await ours(browser, 'this project, MiniLM Q8_0 GGUF, relaxed-SIMD build', gguf, 'relaxed'));
  phase('this project, Q8_0 GGUF, simd128');
  rows.push(await ours(browser, 'this project, MiniLM Q8_0 GGUF, simd128 build', gguf, 'simd128'));
  phase('this project, f32 safetensors');
  rows.push(await ours(browser, 'this project, MiniLM f32 safetensors', modelDir));
  phase('native');
  rows.push({ label: 'native, the same Q8_0 file (qmd-gguf-bench, CPU kernels, every core)', rate: nativeGguf(), worst: NaN });
  phase('wllama');
  rows.push(...(await wllama(browser)));
}
const version = execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
console.log('# GGUF models in the browser (`scripts/bench-web-gguf.sh`)\n');
console.log(`${new Date().toISOString().slice(0, 10)}, one run: MiniLM (all-MiniLM-L6-v2) on the CPU in each runtime, ` +
  `${texts.length} tldr pages cut at 254 word pieces, ${version}, headless.\n`);
if (rows.length) console.log('| runtime, in the page | texts/s | worst cosine vs native f32 | this project Q8_0 = |\n|---|---:|---:|---:|');
for (const { label, rate, worst } of rows) {
  console.log(`| ${label} | ${rate.toFixed(2)} | ${Number.isNaN(worst) ? '' : worst.toFixed(5)} | ${(rows[0].rate / rate).toFixed(2)}× |`);
}
if (decode.length) {
  console.log('\n## Decoding SmolLM2-135M Q4_1 (32 greedy tokens after a chat prompt)\n');
  console.log('| where | tokens/s | of native |');
  console.log('|---|---:|---:|');
  for (const { label, rate } of decode) console.log(`| ${label} | ${rate.toFixed(1)} | ${(rate / decode[0].rate).toFixed(2)}× |`);
}
