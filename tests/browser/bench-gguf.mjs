// The browser's GGUF benchmark (scripts/bench-web-gguf.sh): MiniLM embedding
// throughput in headless Chromium, on the CPU, in one run —
//   - this project's page, the app's bulk path (`embed`'s shares on one
//     helper Worker per core), on the Q8_0 GGUF file and on the
//     safetensors repository (the default path: quantized to Q8_0 at
//     load), served by `qmd web`;
//   - wllama (llama.cpp compiled to wasm, threads through
//     SharedArrayBuffer on a cross-origin-isolated page) on the same GGUF
//     file, a text per call;
//   - Transformers.js (ONNX Runtime Web) on the same model as an int8 ONNX
//     graph, at batch 1 and 8.
// The references' versions are tests/browser/reference/package.json's.
// Same texts everywhere (tldr pages cut at 254 word pieces, from
// `qmd-bench-texts`); each side's worst cosine against the native engine's
// f32 vectors shows they computed the same thing. Each rate is the best
// of BENCH_ROUNDS timed runs after a warm-up. Markdown on stdout.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  cosine, isolatedEnv, launch, nativeEmbeddings, repoRoot, serveApp, serveStatic, targetDir, testModelDir,
} from './harness.mjs';

const texts = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const threads = Number(process.env.BENCH_THREADS ?? 2);
// Each figure is the best of this many timed runs: on these shared
// machines a run is only ever slowed, by up to half, never sped up.
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const fixtures = execFileSync(path.join(targetDir, 'release/qmd-gguf-fixtures'), { encoding: 'utf8' }).trim();
const gguf = path.join(fixtures, 'minilm-q8_0.gguf');
const modelDir = testModelDir();
const references = path.join(import.meta.dirname, 'reference/node_modules');
const wllamaDir = path.join(references, '@wllama/wllama');
const transformersDir = path.join(references, '@huggingface/transformers');
const versionOf = (dir) => JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
const native = nativeEmbeddings(modelDir, texts, { f32: true });
const worstCosine = (vectors) => Math.min(...vectors.map((v, i) => cosine(v, native[i])));
const phase = (name) => console.error(`bench-gguf: ${name}`);

/** The fastest of `rounds` runs of `run` (each resolving to `{ms, ...}`). */
async function bestOf(run) {
  let best;
  for (let i = 0; i < rounds; i++) {
    const result = await run();
    if (!best || result.ms < best.ms) best = result;
  }
  return best;
}

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
    const { ms, vectors } = await bestOf(() => run(texts));
    return { label: `${label} (${loaded.device}, ${loaded.workers} Workers)`, rate: texts.length / (ms / 1000), worst: worstCosine(vectors) };
  } finally {
    server.stop();
  }
}

/** The native CPU kernels on the same GGUF file and texts, every core
 * (qmd-gguf-bench, one process, after loading), at most at kernel level
 * `kernels` (`QMD_KERNELS`): texts/s. */
function nativeGguf(kernels) {
  const file = path.join(os.tmpdir(), `qmd-bench-texts-${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify(texts));
  try {
    const run = () => {
      const out = execFileSync(path.join(targetDir, 'release/qmd-gguf-bench'), ['embed', gguf, file], {
        encoding: 'utf8', env: { ...process.env, BENCH_DEVICES: 'cpu', QMD_KERNELS: kernels }, maxBuffer: 1 << 26,
      });
      return JSON.parse(out).cpu_per_s;
    };
    return Math.max(...Array.from({ length: rounds }, run));
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
  // The prompt once a round: the native figure is the best run too.
  fs.writeFileSync(prompts, JSON.stringify(Array(rounds).fill(prompt)));
  const native = JSON.parse(execFileSync(path.join(targetDir, 'release/qmd-gguf-bench'), ['generate', smollm2, prompts], { encoding: 'utf8' }));
  fs.rmSync(prompts, { force: true });
  const rows = [{ label: 'native CLI kernels (qmd-gguf-bench generate, every core)', rate: Math.max(...native.runs.map((run) => run.decode_per_s)) }];
  const { env } = isolatedEnv({ QMD_EMBED_MODEL: modelDir, QMD_RERANK_MODEL: './no-reranker', QMD_GENERATE_MODEL: smollm2 });
  const server = await serveApp(env);
  try {
    for (const simd of ['threads', 'relaxed', 'simd128']) {
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
      const fastest = async (tokens) => (await bestOf(async () => ({ ms: await follow(tokens) }))).ms;
      const whole = await fastest(reference);
      const first = await fastest(reference.slice(0, 1));
      rows.push({ label: `the page, ${loaded.device}`, rate: 32 / ((whole - first) / 1000) });
    }
  } finally {
    server.stop();
  }
  return rows;
}

/** A cross-origin-isolated static server for the reference runtimes'
 * page: a folder holding the page and links to wllama's and
 * Transformers.js's files, ONNX Runtime Web's wasm, the GGUF file and a
 * Transformers.js model folder (the test model's tokenizer and config, the
 * int8 ONNX graph as `onnx/model_quantized.onnx`, what `dtype: 'q8'` loads). */
function referenceServer() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-references-'));
  fs.writeFileSync(path.join(root, 'index.html'), `<!doctype html><script type="module">
import { Wllama } from './wllama/esm/index.js';
import * as transformers from './transformers/dist/transformers.js';
window.Wllama = Wllama;
window.transformers = transformers;
window.ready = true;
</script>`);
  fs.symlinkSync(wllamaDir, path.join(root, 'wllama'));
  fs.symlinkSync(transformersDir, path.join(root, 'transformers'));
  fs.symlinkSync(path.join(references, 'onnxruntime-web/dist'), path.join(root, 'ort'));
  fs.symlinkSync(gguf, path.join(root, 'model.gguf'));
  const onnxModel = path.join(root, 'models/local/all-MiniLM-L6-v2');
  fs.mkdirSync(path.join(onnxModel, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    fs.symlinkSync(path.join(modelDir, file), path.join(onnxModel, file));
  }
  const onnx = execFileSync('bash', [path.join(repoRoot, 'scripts/test-weights.sh'), 'minilm-int8-onnx'], { encoding: 'utf8' }).trim();
  fs.symlinkSync(onnx, path.join(onnxModel, 'onnx/model_quantized.onnx'));
  process.on('exit', () => fs.rmSync(root, { recursive: true, force: true }));
  return serveStatic(root, {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
  });
}

/** Transformers.js on the int8 ONNX graph, `threads` threads, ONNX
 * Runtime Web on the CPU: texts/s at batch 1 and at batch 8 (mean pooling,
 * normalized, as the app's vectors). */
async function transformersJs(browser) {
  const server = await referenceServer();
  const version = versionOf(transformersDir);
  try {
    const { page } = browser;
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => window.ready);
    await page.evaluate(async (threads) => {
      const { env, pipeline } = window.transformers;
      env.allowRemoteModels = false;
      env.allowLocalModels = true;
      env.localModelPath = '/models/';
      env.backends.onnx.wasm.wasmPaths = '/ort/';
      env.backends.onnx.wasm.numThreads = threads;
      window.extractor = await pipeline('feature-extraction', 'local/all-MiniLM-L6-v2', { device: 'wasm', dtype: 'q8' });
    }, threads);
    const rows = [];
    for (const batch of [1, 8]) {
      phase(`Transformers.js, batch ${batch}`);
      const run = (t) =>
        page.evaluate(async ({ t, batch }) => {
          const start = performance.now();
          const vectors = [];
          for (let i = 0; i < t.length; i += batch) {
            const tensor = await window.extractor(t.slice(i, i + batch), { pooling: 'mean', normalize: true });
            vectors.push(...tensor.tolist());
          }
          return { ms: performance.now() - start, vectors };
        }, { t, batch });
      await run(texts.slice(0, 8));
      const result = await bestOf(() => run(texts));
      rows.push({
        label: `Transformers.js ${version}, int8 ONNX (ONNX Runtime Web), ${threads} threads, batch ${batch}`,
        rate: texts.length / (result.ms / 1000),
        worst: worstCosine(result.vectors),
      });
    }
    return rows;
  } finally {
    server.close();
  }
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
    const run = (t) =>
      page.evaluate(async (t) => {
        const start = performance.now();
        const vectors = [];
        for (const text of t) vectors.push((await window.wllama.createEmbedding({ input: text })).data[0].embedding);
        return { ms: performance.now() - start, vectors };
      }, t);
    await run(texts.slice(0, 4));
    const result = await bestOf(() => run(texts));
    const rows = [
      {
        label: `wllama ${versionOf(wllamaDir)}, Q8_0 GGUF, ${threads} threads${isolated ? '' : ' (not isolated: 1 thread)'}, a text per call`,
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
  if (process.env.BENCH_ONLY === 'references') await referenceRows();
  else if (process.env.BENCH_ONLY === 'ours') await pageRows();
  else if (process.env.BENCH_ONLY !== 'decode') await embedding();
  if (!['embed', 'references', 'ours'].includes(process.env.BENCH_ONLY)) {
    phase('decoding');
    decode = await decoding(browser);
  }
} finally {
  await browser.close();
}

/** The embedding rows, into `rows`. */
async function embedding() {
  await pageRows();
  phase('this project, safetensors repository');
  rows.push(await ours(browser, 'this project, MiniLM safetensors repository (the default: Q8_0 at load)', modelDir));
  phase('native');
  rows.push({ label: 'native, the same Q8_0 file (qmd-gguf-bench, CPU kernels, every core)', rate: nativeGguf('avx512-vnni'), worst: NaN });
  // The page's SIMD is 128 bits wide; AVX2 (256) is what a CPU without
  // AVX-512 VNNI runs natively.
  rows.push({ label: 'native, the same, kernels capped at AVX2 (`QMD_KERNELS=avx2`)', rate: nativeGguf('avx2'), worst: NaN });
  await referenceRows();
}

/** The page's three engine builds on the GGUF file (`BENCH_ONLY=ours`
 * runs these alone: the quick check of a kernel change). The threaded one
 * (the default on a cross-origin isolated page) first: the table's ratios
 * are to the first row. */
async function pageRows() {
  phase('this project, Q8_0 GGUF, threads');
  rows.push(await ours(browser, 'this project, MiniLM Q8_0 GGUF, threaded build', gguf, 'threads'));
  phase('this project, Q8_0 GGUF, relaxed SIMD');
  rows.push(await ours(browser, 'this project, MiniLM Q8_0 GGUF, relaxed-SIMD build', gguf, 'relaxed'));
  phase('this project, Q8_0 GGUF, simd128');
  rows.push(await ours(browser, 'this project, MiniLM Q8_0 GGUF, simd128 build', gguf, 'simd128'));
}

/** The reference runtimes' rows, into `rows`. */
async function referenceRows() {
  phase('wllama');
  rows.push(...(await wllama(browser)));
  rows.push(...(await transformersJs(browser)));
}
const version = execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
console.log('# GGUF models in the browser (`scripts/bench-web-gguf.sh`)\n');
console.log(`${new Date().toISOString().slice(0, 10)}, the best of ${rounds} timed runs each: MiniLM (all-MiniLM-L6-v2) on the CPU in each runtime, ` +
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
