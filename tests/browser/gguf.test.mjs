// qmd's own model formats in the browser: an EmbeddingGemma-shaped and a
// Qwen3-Reranker-shaped GGUF file (random weights, F32 and Q8_0 made by
// tests/models/make_gguf.py, Q4_K_M by llama.cpp's own quantizer) configured as the CLI's models, served by
// `qmd web` and run in the page on the CPU (WebAssembly relaxed SIMD
// kernels, the build this Chromium gets; the simd128 build held to them
// bit for bit, or within tolerance where the relaxed build's embedding
// passes take 7-bit activations) and
// on WebGPU (the engine's WGSL kernels).
// Embeddings and rank scores are checked against llama.cpp itself
// (node-llama-cpp, qmd 2.8.3's runtime) on the same files, with the native
// tests' tolerances; the second load comes from the OPFS cache; and the
// app's reranked `query` gives the CLI's `qmd query` top 3.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import {
  addStagedFolder, cli, cosine, evalDir, evalQueries, isolatedEnv, launch, readFolder, repoRoot, serveApp, serveWithoutIsolation, stageFolder,
  targetDir, writeFolder,
} from './harness.mjs';
import { assertSameTop } from './ranking.mjs';

const fixtures = execFileSync(path.join(targetDir, 'release/qmd-gguf-fixtures'), { encoding: 'utf8' }).trim();
const llamaRefDir = execFileSync('bash', [path.join(repoRoot, 'scripts/llama-ref.sh')], { encoding: 'utf8' }).trim();
const docs = readFolder(path.join(evalDir, 'docs'));
const queries = evalQueries().map((q) => q.query);
// Paragraphs of the eval docs (cut to fit llama.cpp's 512-token context) and the queries.
const paragraphs = Object.values(docs)
  .flatMap((d) => d.split('\n\n'))
  .filter((p) => p.trim().length > 20)
  .map((p) => p.slice(0, 1200));
const allTexts = [...queries.slice(0, 8), ...paragraphs.slice(0, 40)];

/** llama.cpp's answer for `command` on `model` (tests/models/llama_ref.mjs). */
function llama(command, model, input) {
  const out = execFileSync('node', [path.join(repoRoot, 'tests/models/llama_ref.mjs'), command, model], {
    input: JSON.stringify(input),
    env: { ...process.env, LLAMA_REF_DIR: llamaRefDir },
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  return JSON.parse(out);
}

// Per type: the files, the tolerances of the native tests (tests/tests/gguf.rs).
const KINDS = {
  f32: { minCosine: 0.9999, maxRankDifference: 1e-3 },
  q8_0: { minCosine: 0.9995, maxRankDifference: 1e-2 },
  q4_k_m: { minCosine: 0.9995, maxRankDifference: 2e-2 },
};
const files = (kind) => ({
  embed: path.join(fixtures, `gemma-${kind}.gguf`),
  rerank: path.join(fixtures, `qwen3-reranker-${kind}.gguf`),
});

const servers = {};
const envs = {};
let browser;

before(async () => {
  for (const kind of Object.keys(KINDS)) {
    const { embed, rerank } = files(kind);
    const { env } = isolatedEnv({ QMD_EMBED_MODEL: embed, QMD_RERANK_MODEL: rerank });
    envs[kind] = env;
    servers[kind] = await serveApp(env);
  }
  browser = await launch();
});

after(async () => {
  await browser?.close();
  for (const server of Object.values(servers)) server.stop();
});

/** Opens the app served for `kind` on `device` and loads its models;
 * what loading reported. */
async function loadModels(kind, device = 'auto') {
  const { page } = browser;
  await page.goto(`${servers[kind].url}?device=${device}`);
  await page.evaluate(() => window.qmd.ready);
  const embedder = await page.evaluate(() => window.qmd.loadModel());
  const reranker = await page.evaluate(() => window.qmd.reranker());
  return { embedder, reranker };
}

/** The page's embeddings and (with `rank`) rank scores for `kind`'s
 * files, against llama.cpp's with that kind's tolerances; `where` names
 * the device. `step` takes every step-th text and `rankQueries` the first
 * queries: WebGPU here is SwiftShader, the GPU's work done on these two
 * cores (minutes for all 48 texts), so it checks fewer inputs (every 8th:
 * a query and five paragraphs), as the native wgpu tests on lavapipe do. */
async function assertMatchesLlama(kind, where, { rank = true, step = 1, rankQueries = 4 } = {}) {
  const { minCosine, maxRankDifference } = KINDS[kind];
  const { embed, rerank } = files(kind);
  const texts = allTexts.filter((_, i) => i % step === 0);
  const reference = llama('embed', embed, texts);
  const vectors = await browser.page.evaluate((t) => window.qmd.embedTexts(t).then((vs) => vs.map((v) => [...v])), texts);
  assert.equal(vectors.length, texts.length);
  assert.equal(vectors[0].length, reference.embeddings[0].length);
  const worst = Math.min(...vectors.map((v, i) => cosine(v, reference.embeddings[i])));
  console.log(`${kind} on ${where}: page embeddings vs llama.cpp, worst cosine ${worst.toFixed(7)} over ${texts.length} texts`);
  assert.ok(worst >= minCosine, `worst cosine ${worst} < ${minCosine}`);
  if (!rank) return;

  const differences = [];
  const spread = [];
  for (const query of queries.slice(0, rankQueries)) {
    const documents = paragraphs.slice(0, 8).map((p) => p.slice(0, 600));
    const theirs = llama('rank', rerank, { query, documents }).scores;
    const ours = [...(await browser.page.evaluate(({ q, d }) => window.qmd.rerankTexts(q, d), { q: query, d: documents }))];
    assert.equal(ours.length, documents.length);
    ours.forEach((s, i) => differences.push(Math.abs(s - theirs[i])));
    spread.push(...theirs);
  }
  assert.ok(Math.max(...spread) - Math.min(...spread) > 0.1, 'the scores spread out, so the comparison means something');
  const worstRank = Math.max(...differences);
  console.log(`${kind} on ${where}: page rank scores vs llama.cpp, worst difference ${worstRank.toExponential(1)} over ${differences.length} pairs`);
  assert.ok(worstRank <= maxRankDifference, `worst rank difference ${worstRank} > ${maxRankDifference}`);
}

for (const kind of Object.keys(KINDS)) {
  test(`${kind}: GGUF embeddings and rank scores in the page match llama.cpp`, async () => {
    const { embed, rerank } = files(kind);
    const { embedder, reranker } = await loadModels(kind);
    assert.equal(embedder.model, embed);
    // auto passes the software adapter over: the CPU kernels.
    assert.match(embedder.device, /^CPU: WebAssembly relaxed SIMD/);
    assert.equal(embedder.cached, false, 'the first load downloads');
    assert.ok(reranker, 'the configured reranker is loaded with the model');
    assert.equal(reranker.model, rerank);
    assert.match(reranker.device, /^CPU: WebAssembly relaxed SIMD/);
    assert.match(await browser.page.locator('#model-status').textContent(), /reranks with qwen3-reranker/);
    await assertMatchesLlama(kind, 'the CPU kernels');
  });
}

// The page's three engine builds (www/engine.js): this Chromium runs
// relaxed SIMD and `qmd web` makes the page cross-origin isolated, so on
// the CPU it gets pkg-threads/ (relaxed SIMD, a pool of Workers sharing
// one memory); `?simd=relaxed` loads the same kernels on one thread, and
// `?simd=simd128` the build every browser runs. Their integer products are
// exact and scaled alike, and threads split a product by whole rows, so
// all three give the same rank scores, bit for bit, and the same embeddings
// on K-quant weights; the threaded build gives the relaxed one's
// embeddings bit for bit everywhere (its pool's threads take the caller's
// 7-bit setting with each task). On Q8_0 weights the relaxed builds'
// embedding passes quantize the activations to 7 bits (one dot a byte
// pair, README *The relaxed module*), within the stated tolerance of the
// simd128 build's 8: cosine ≥ 0.999 a vector.
test('all three engine builds: threads and relaxed SIMD give the simd128 build\'s rank scores, and its embeddings within tolerance', async () => {
  const texts = allTexts.filter((_, i) => i % 3 === 0);
  const documents = paragraphs.slice(0, 8).map((p) => p.slice(0, 600));
  const { page, requests } = browser;
  const wasm = { threads: '/pkg-threads/qmd_web_bg.wasm', relaxed: '/pkg-relaxed/qmd_web_bg.wasm', simd128: '/pkg/qmd_web_bg.wasm' };
  for (const kind of ['q8_0', 'q4_k_m']) {
    const runs = {};
    // The default first: the later visits' Workers then come from the
    // service worker's cache, and must still load the build asked for.
    for (const [simd, build, device] of [
      ['', 'threads', /^CPU: WebAssembly relaxed SIMD.*, \d+ threads/],
      ['relaxed', 'relaxed', /^CPU: WebAssembly relaxed SIMD(?!.*threads)/],
      ['simd128', 'simd128', /^CPU: WebAssembly SIMD(?!.*threads)/],
    ]) {
      requests.length = 0;
      await page.goto(`${servers[kind].url}?device=cpu${simd && `&simd=${simd}`}`);
      await page.evaluate(() => window.qmd.ready);
      const embedder = await page.evaluate(() => window.qmd.loadModel());
      const reranker = await page.evaluate(() => window.qmd.reranker());
      assert.match(embedder.device, device);
      assert.match(reranker.device, device);
      const loaded = requests.map((u) => new URL(u).pathname).filter((p) => p.endsWith('.wasm') && p.includes('/pkg'));
      assert.deepEqual([...new Set(loaded)], [wasm[build]], `${simd || 'default'} loads ${wasm[build]} alone`);
      const start = performance.now();
      const vectors = await page.evaluate((t) => window.qmd.embedTexts(t).then((vs) => vs.map((v) => [...v])), texts);
      const embedMs = performance.now() - start;
      const scores = [...(await page.evaluate(({ q, d }) => window.qmd.rerankTexts(q, d), { q: queries[0], d: documents }))];
      runs[build] = { vectors, scores, embedMs };
    }
    const { threads, relaxed, simd128 } = runs;
    const ms = (run) => run.embedMs.toFixed(0);
    console.log(`${kind}: ${texts.length} texts embedded in ${ms(simd128)} ms (simd128), ${ms(relaxed)} ms (relaxed SIMD), ${ms(threads)} ms (threads)`);
    assert.deepEqual(relaxed.scores, simd128.scores, `${kind}: the builds' rank scores differ`);
    assert.deepEqual(threads.scores, relaxed.scores, `${kind}: the threaded build's rank scores differ`);
    assert.deepEqual(threads.vectors, relaxed.vectors, `${kind}: the threaded build's embeddings differ`);
    // Embedding passes differ by design: the relaxed builds' attention
    // products fuse their multiply-adds (every file), and their Q8_0
    // products take 7-bit activations (the Q8_0 file: further off).
    const worst = Math.min(...relaxed.vectors.map((v, i) => cosine(v, simd128.vectors[i])));
    console.log(`${kind}: worst cosine between the builds' embeddings ${worst.toFixed(7)}`);
    const tolerance = kind === 'q8_0' ? 0.999 : 0.9999;
    assert.ok(worst >= tolerance, `${kind}: an embedding's cosine between the builds is ${worst}`);
    assert.notDeepEqual(relaxed.vectors, simd128.vectors, `${kind}: the relaxed build's embedding passes changed no vector`);
  }
  assert.deepEqual(browser.errors, []);
});

// A host that does not isolate the page (a static server without COOP and
// COEP): no shared memory, so by default the page takes the relaxed build;
// asked for the threaded one by name, it cannot start it, runs the relaxed
// one instead and says why on the device line.
test('without cross-origin isolation the page runs the relaxed build; asked for threads, it says why it has none', async () => {
  const proxy = await serveWithoutIsolation(servers.q4_k_m.url);
  try {
    const { page, requests } = browser;
    const notes = /, no threads \(the threaded engine needs a cross-origin isolated page \(Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp\)/;
    for (const simd of ['', 'threads']) {
      requests.length = 0;
      await page.goto(`${proxy.url}?device=cpu${simd && `&simd=${simd}`}`);
      await page.evaluate(() => window.qmd.ready);
      assert.equal(await page.evaluate(() => self.crossOriginIsolated), false);
      const embedder = await page.evaluate(() => window.qmd.loadModel());
      assert.match(embedder.device, /^CPU: WebAssembly relaxed SIMD(?!.*\d+ threads)/);
      if (simd) assert.match(embedder.device, notes);
      else assert.doesNotMatch(embedder.device, /threads/);
      const loaded = requests.map((u) => new URL(u).pathname).filter((p) => p.endsWith('.wasm') && p.includes('/pkg'));
      assert.deepEqual([...new Set(loaded)], ['/pkg-relaxed/qmd_web_bg.wasm']);
      const vectors = await page.evaluate((t) => window.qmd.embedTexts(t).then((vs) => vs.length), allTexts.slice(0, 3));
      assert.equal(vectors, 3);
    }
  } finally {
    proxy.stop();
  }
  assert.deepEqual(browser.errors, []);
});

// The engine's own WGSL kernels on the page's WebGPU (SwiftShader here),
// read back asynchronously: the same files, the same tolerances.
test('f32 on WebGPU: the GGUF kernels in the page match llama.cpp', async () => {
  const { embedder, reranker } = await loadModels('f32', 'gpu');
  assert.equal(embedder.device, 'GPU: WebGPU');
  assert.equal(reranker.device, 'GPU: WebGPU');
  await assertMatchesLlama('f32', 'WebGPU', { step: 8, rankQueries: 1 });
});

// Q8_0 blocks decoded by the WGSL kernels under Chromium's compiler.
// Embeddings only: the GPU multiplies f32 activations where llama.cpp
// rounds them to Q8_0 first, which moves Q8_0 rank scores by up to 2e-2
// (the native wgpu test bounds that against llama.cpp's own shift).
// Q4_K_M's K-quant blocks (as 32-value blocks, gpu/layout.rs) likewise.
for (const kind of ['q8_0', 'q4_k_m']) {
  test(`${kind} on WebGPU: GGUF embeddings in the page match llama.cpp`, async () => {
    const { embedder } = await loadModels(kind, 'gpu');
    assert.equal(embedder.device, 'GPU: WebGPU');
    await assertMatchesLlama(kind, 'WebGPU', { rank: false, step: 8 });
  });
}

// F32, where the page's vectors equal the CLI's (cosine 1.0000000): with
// Q8_0's last-bit differences, random weights' near-tied vector ranks can
// swap, and the fused position the blend weighs with them. Even in F32 the
// last bits differ (summation orders; native's change with the CPU), so
// documents whose vector or rerank scores lie within F32_TIE of another's
// may come in either order.
const F32_TIE = 0.011;
test('f32: a new visit loads both models from the OPFS cache; the reranked query gives the CLI query top 3', async () => {
  const { page } = browser;
  await page.goto(`${servers.f32.url}?device=auto`);
  await page.evaluate(() => window.qmd.ready);
  // Cached models load by themselves on start.
  await page.waitForFunction(() => window.qmd.reranker() !== null);
  const loaded = await page.evaluate(() => window.qmd.loadModel());
  assert.equal(loaded.cached, true);

  await stageFolder(page, 'eval-docs', docs);
  await addStagedFolder(page, 'eval-docs', 'eval');
  const run = await page.evaluate(() => window.qmd.embed());
  assert.equal(run.state, 'done');

  const env = envs.f32;
  cli(env, ['collection', 'add', writeFolder(path.join(env.HOME, 'eval-docs'), docs), '--name', 'eval']);
  cli(env, ['embed']);
  for (const query of queries.slice(0, 6)) {
    const web = await page.evaluate((q) => window.qmd.hybrid(q), query);
    // (The fallback expansion's note aside: no generation model here either.)
    assert.deepEqual(web.notes.filter((n) => !/query-expansion/.test(n)), [], `no step was skipped for ${query}`);
    assert.ok(web.hits.every((h) => typeof h.rerank_score === 'number'), `the page reranked ${query}`);
    const fromCli = cli(env, ['query', query, '--json', '-n', '3']);
    const top = (hits) => hits.slice(0, 3).map((h) => [h.docid.replace(/^#?/, '#'), h.score]);
    const ours = top(web.hits.map((h) => h.hit));
    const theirs = top(fromCli);
    // The same order but for near-ties (F32_TIE), and then the same scores.
    if (!assertSameTop(query, web, theirs.map(([d]) => d), F32_TIE)) continue;
    ours.forEach(([, s], i) => assert.ok(Math.abs(s - theirs[i][1]) < 0.02, `scores of ${query}: ${s} vs ${theirs[i][1]}`));
  }
});
