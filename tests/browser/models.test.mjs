// The embedding model in the browser, on WebGPU (SwiftShader here) and on
// the CPU fallback, with real all-MiniLM-L6-v2 weights served by `qmd web`
// from the local model directory, quantized to Q8_0 at load onto the
// engine's kernels as natively: vectors match the native engine's,
// downloads are cached in OPFS and a damaged cache is fetched again, `auto`
// passes a software adapter over, and hybrid search over embedded
// documents gives the CLI's top 3.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  addStagedFolder, cli, cosine, evalDir, foreignRequests, repoRoot, evalQueries, isolatedEnv, launch, nativeEmbeddings, readFolder, serveApp,
  stageFolder, testModelDir, writeFolder,
} from './harness.mjs';
import { assertSameTop } from './ranking.mjs';

const docs = readFolder(path.join(evalDir, 'docs'));
const queries = evalQueries().map((q) => q.query);
// Queries, and passages long enough to be cut at the model's window.
const passages = Object.values(docs).map((d) => d.slice(0, 2500));
const texts = [...queries, ...passages];
const modelDir = testModelDir();
let server;
let browser;
let cliEnv;
let cliHome;
let native;
let exact;

before(async () => {
  // No reranker (a local path that does not exist): the page's hybrid is
  // then the CLI's `--no-rerank`, and nothing is fetched from elsewhere.
  const { env, home } = isolatedEnv({ QMD_EMBED_MODEL: modelDir, QMD_RERANK_MODEL: './no-reranker' });
  cliEnv = env;
  cliHome = home;
  cli(cliEnv, ['collection', 'add', writeFolder(path.join(home, 'eval-docs'), docs), '--name', 'eval']);
  native = nativeEmbeddings(modelDir, texts);
  exact = nativeEmbeddings(modelDir, texts, { f32: true });
  server = await serveApp(env);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.stop();
});

/** Opens the app on `device`, loads the model, returns what loading reported. */
async function loadOn(device) {
  const { page } = browser;
  await page.goto(`${server.url}?device=${device}`);
  await page.evaluate(() => window.qmd.ready);
  return page.evaluate(() => window.qmd.loadModel());
}

/** How far the page's vectors may be from native's: on WebGPU (and the
 * simd128 build) as far as the native kernels' own instruction-set
 * levels are from each other (`kernel_levels.rs`: an AVX2, an AVX-512
 * and a portable run round the Q8_0 activations a last bit apart, 1.8e-4
 * of cosine apart on the shortest query); on the CPU in the relaxed-SIMD
 * build (this Chromium's), whose embedding passes quantize the
 * activations to 7 bits (README, *The relaxed module*: stated tolerance
 * cosine ≥ 0.998 to the 8-bit vector; MiniLM's worst here 0.99893), that
 * far, and its scores of a query and a document up to 0.04 apart. */
const BOUNDS = {
  exact: { native: 0.9995, f32: 2e-4 },
  sevenBit: { native: 0.998, f32: 1.5e-3, tie: 0.04 },
};

/** Embeds the texts at indices `pick` (all by default) in calls of
 * `perCall` and holds them to the native engine's vectors two ways that
 * hold on any CPU: each within `bounds.native` of native's, and no
 * further from the exact answer (sentence-transformers' f32 arithmetic,
 * on burn) than native's are, to within `bounds.f32` at the worst text.
 * Returns both worst cosines. */
async function assertMatchesNative(device, { pick = [...texts.keys()], perCall = texts.length, bounds = BOUNDS.exact } = {}) {
  const vectors = [];
  for (let i = 0; i < pick.length; i += perCall) {
    const group = pick.slice(i, i + perCall).map((j) => texts[j]);
    vectors.push(...(await browser.page.evaluate((t) => window.qmd.embedTexts(t).then((vs) => vs.map((v) => [...v])), group)));
  }
  assert.equal(vectors.length, pick.length);
  const worst = Math.min(...vectors.map((v, i) => cosine(v, native[pick[i]])));
  assert.ok(worst >= bounds.native, `worst cosine to native on ${device}: ${worst}`);
  const ours = Math.min(...vectors.map((v, i) => cosine(v, exact[pick[i]])));
  const natives = Math.min(...pick.map((j) => cosine(native[j], exact[j])));
  assert.ok(ours >= natives - bounds.f32, `worst cosine to the f32 answer on ${device}: ${ours}, native's ${natives}`);
  console.log(`${device}: worst cosine ${worst.toFixed(7)} to native, ${ours.toFixed(7)} to f32 (native's ${natives.toFixed(7)}) over ${pick.length} texts`);
  return worst;
}

// The WGSL kernels multiply f32 activations where the CPU's round them to
// Q8_0 first: the bound of GGUF Q8_0 files on WebGPU (gguf.test.mjs).
test('WebGPU embeddings match the native ones', async () => {
  const loaded = await loadOn('gpu');
  assert.equal(loaded.device, 'GPU: WebGPU');
  assert.equal(loaded.dimension, 384);
  assert.equal(loaded.cached, false, 'the first load downloads');
  // SwiftShader (the GPU's work on these two cores) is slow and a batch
  // pads to its longest text: 8 queries as one batch, then the first
  // passage (cut at the 256-token window) alone.
  const pick = [...Array(8).keys(), queries.length];
  await assertMatchesNative('WebGPU', { pick, perCall: 8 });
});

test('CPU-fallback embeddings match the native ones, from the OPFS model cache', async () => {
  const loaded = await loadOn('cpu');
  assert.match(loaded.device, /^CPU/);
  assert.equal(loaded.cached, true, 'the second load reads the OPFS cache');
  await assertMatchesNative('CPU', { bounds: BOUNDS.sevenBit });
});

test('a damaged model cache is detected and downloaded again', async () => {
  const { page } = browser;
  await page.goto(`${server.url}?device=cpu`);
  await page.evaluate(() => window.qmd.ready);
  // Cut the cached weights short, as an interrupted write would.
  await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    const models = await root.getDirectoryHandle('qmd-models');
    for await (const [, dir] of models.entries()) {
      const writable = await (await dir.getFileHandle('model.safetensors')).createWritable({ keepExistingData: true });
      await writable.truncate(1000);
      await writable.close();
    }
  });
  await page.reload();
  await page.evaluate(() => window.qmd.ready);
  assert.equal(await page.locator('#load-model').isDisabled(), false, 'the damaged cache was not loaded');
  const loaded = await page.evaluate(() => window.qmd.loadModel());
  assert.equal(loaded.cached, false);
  await assertMatchesNative('CPU, re-downloaded', { bounds: BOUNDS.sevenBit });
});

test('auto picks the CPU over a software adapter; embedded documents give the CLI hybrid top 3; a cancelled run resumes', async () => {
  const { page } = browser;
  const loaded = await loadOn('auto');
  assert.match(loaded.device, /^CPU: WebAssembly (relaxed )?SIMD( \([^)]*\))?(, \d+ threads)?, the WebGPU adapter is software/);
  assert.match(await page.locator('#notice').textContent(), /No hardware WebGPU here/);
  // Bulk embedding spreads over helper Workers, one per core (at most 8):
  // the documents below are embedded by them.
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  assert.equal(loaded.workers, Math.min(cores, 8));
  if (cores > 1) assert.match(await page.locator('#model-status').textContent(), new RegExp(`embeds on ${loaded.workers} cores`));
  await stageFolder(page, 'eval-docs', docs);
  await addStagedFolder(page, 'eval-docs', 'eval');
  // One document per batch; cancelled once the first batch is committed.
  const first = await page.evaluate(async () => {
    // The first step with a committed document (a run may announce itself
    // before its first batch is written).
    const committed = new Promise((resolve) => {
      const onStep = (e) => {
        if (e.detail.report.docs < 1) return;
        removeEventListener('qmd-embed', onStep);
        resolve(e.detail);
      };
      addEventListener('qmd-embed', onStep);
    });
    const run = window.qmd.embed({ maxDocsPerBatch: 1 });
    const step = await committed;
    await window.qmd.cancelEmbed();
    return { step, end: await run };
  });
  assert.equal(first.step.state, 'running', 'the first batch committed and more were left');
  assert.equal(first.end.state, 'cancelled');
  const { docs: embedded, pending } = first.end.report;
  assert.ok(embedded >= 1 && embedded < pending, `cancelled part way: ${embedded} of ${pending} documents`);
  const resumed = await page.evaluate(() => window.qmd.embed());
  assert.equal(resumed.state, 'done');
  assert.equal(resumed.report.pending, pending - embedded, 'the resumed run starts after the committed batches');
  const status = await page.evaluate(() => window.qmd.status());
  assert.equal(status.needs_embedding, 0);
  assert.ok(status.has_vector_index);

  cli(cliEnv, ['embed']);
  for (const query of queries) {
    const web = await page.evaluate((q) => window.qmd.hybrid(q), query);
    assert.deepEqual(web.notes.filter((n) => /vector/.test(n)), [], `vectors were used for ${query}`);
    const fromCli = cli(cliEnv, ['query', query, '--json', '-n', '3', '--no-rerank']);
    // `auto` passed the software adapter over: the CPU, 7-bit embeddings.
    assertSameTop(query, web, fromCli.map((h) => h.docid), BOUNDS.sevenBit.tie);
  }
});

/** Small source files of this repository in three of the grammars'
 * languages (the boundaries themselves are checked on real sources below). */
function codeFiles() {
  const read = (relative) => fs.readFileSync(path.join(repoRoot, relative), 'utf8');
  return {
    'web/engine.js': read('www/engine.js'),
    'rust/strategy.rs': read('core/src/chunk/strategy.rs'),
    'python/quantize.py': read('tests/models/quantize.py'),
  };
}

/** The chunk count the CLI's `embed` printed. */
function embeddedChunks(output) {
  const count = /Embedded (\d+) chunks/.exec(output)?.[1];
  assert.ok(count, `no chunk count in: ${output}`);
  return Number(count);
}

test('code files are cut at their declarations as the CLI cuts them; the grammars load only then, and a failed load changes nothing', async () => {
  const { page, context } = browser;
  // Every run so far embedded markdown: the grammar module was never fetched.
  const grammarRequests = () => browser.requests.filter((url) => url.includes('/grammars/'));
  assert.deepEqual(grammarRequests(), []);
  const code = codeFiles();
  const mask = '**/*.{js,rs,py}';
  cli(cliEnv, ['collection', 'add', writeFolder(path.join(cliHome, 'code'), code), '--name', 'code', '--mask', mask]);
  const regexChunks = embeddedChunks(cli(cliEnv, ['embed', '-c', 'code', '--chunk-strategy', 'regex']));
  const autoChunks = embeddedChunks(cli(cliEnv, ['embed', '-c', 'code', '--chunk-strategy', 'auto']));

  await stageFolder(page, 'code', code);
  await addStagedFolder(page, 'code', 'code', mask);
  const before = await page.evaluate(() => window.qmd.status());
  await assert.rejects(
    page.evaluate(() => window.qmd.embed({ chunkStrategy: 'ast' })),
    /--chunk-strategy must be "auto" or "regex" \(got "ast"\)/,
  );
  // The grammar module cannot be fetched: the run fails naming it, and the
  // index is as it was (its code is not recorded as cut by `auto`).
  await context.route('**/grammars/**', (route) => route.fulfill({ status: 404, body: 'gone' }));
  await assert.rejects(page.evaluate(() => window.qmd.embed({ chunkStrategy: 'auto' })), /loading the code grammars/);
  await context.unroute('**/grammars/**');
  const failed = await page.evaluate(() => window.qmd.status());
  assert.equal(failed.vectors, before.vectors);
  assert.equal(failed.needs_embedding, before.needs_embedding);
  assert.equal(failed.chunk_strategy, undefined, 'still regex');

  // The next run loads them (a new import, not the failed one) and cuts as the CLI.
  const auto = await page.evaluate(() => window.qmd.embed({ chunkStrategy: 'auto' }));
  assert.equal(auto.state, 'done');
  assert.deepEqual(auto.report.fallbacks, []);
  assert.equal(auto.report.docs, 3);
  assert.equal(auto.report.chunks, autoChunks, 'the CLI cut these files into as many chunks');
  assert.ok(grammarRequests().some((url) => url.endsWith('/qmd_web_grammars_bg.wasm')));
  const status = await page.evaluate(() => window.qmd.status());
  assert.equal(status.chunk_strategy, 'auto');
  assert.equal(status.needs_embedding, 0);
  assert.equal(await page.locator('#chunk-strategy').inputValue(), 'auto', 'the page shows the index\'s strategy');

  // Back to the markdown rules from the page's own choice: only the code is embedded again.
  await page.locator('#chunk-strategy').selectOption('regex');
  const regex = await page.evaluate(() => window.qmd.embed());
  assert.equal(regex.report.rechunked, 3);
  assert.equal(regex.report.chunks, regexChunks);
  assert.equal((await page.evaluate(() => window.qmd.status())).chunk_strategy, undefined);
});

/** Up to `count` source files under `dir` with one of `extensions`, evenly
 * over the sorted list: UTF-8, at most 200 KB, nothing past the BMP (qmd
 * counts UTF-16 units, the engine chars: chunk_parity.rs says why). */
function sourcesOf(dir, extensions, count) {
  const files = fs
    .readdirSync(dir, { recursive: true })
    .filter((f) => extensions.some((e) => f.endsWith(e)) && !f.endsWith('.d.ts'))
    .map((f) => path.join(dir, f))
    .sort()
    .filter((file) => {
      const stat = fs.statSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile() || stat.size > 200_000) return false;
      const bytes = fs.readFileSync(file);
      const text = bytes.toString('utf8');
      return Buffer.from(text, 'utf8').equals(bytes) && ![...text].some((c) => c.codePointAt(0) > 0xffff);
    });
  if (files.length < count) return files;
  return Array.from({ length: count }, (_, i) => files[Math.floor((i * files.length) / count)]);
}

test('the page chunks real sources as qmd 2.8.3 itself does, under auto and regex', async () => {
  // qmd's own chunker under Node, installed with the sources by the parity script.
  const parts = Object.fromEntries(
    execFileSync('bash', [path.join(repoRoot, 'scripts/chunk-parity.sh')], { encoding: 'utf8' })
      .trim().split('\n').map((line) => line.split('=')),
  );
  const files = [
    ...sourcesOf(parts.node_modules, ['.ts'], 12),
    ...sourcesOf(parts.node_modules, ['.tsx', '.jsx'], 12),
    ...sourcesOf(parts.node_modules, ['.js', '.mjs', '.cjs'], 12),
    ...sourcesOf(parts.python, ['.py'], 12),
    ...sourcesOf(parts.go, ['.go'], 12),
    ...sourcesOf(path.join(repoRoot, 'core/src'), ['.rs'], 12),
  ];
  const list = path.join(cliHome, 'parity-files.txt');
  fs.writeFileSync(list, files.join('\n'));
  const theirs = execFileSync('node', [path.join(repoRoot, 'tests/parity/qmd-chunks.mjs'), parts.node_modules, list], {
    encoding: 'utf8', maxBuffer: 1 << 28,
  }).trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(theirs.length, files.length);
  let cutApart = 0;
  for (const qmd of theirs) {
    const content = fs.readFileSync(qmd.file, 'utf8');
    for (const strategy of ['auto', 'regex']) {
      const page = await browser.page.evaluate(({ c, p, s }) => window.qmd.chunkDocument(c, p, s), { c: content, p: qmd.file, s: strategy });
      assert.equal(page.fallback, null, `${qmd.file}: ${page.fallback}`);
      assert.deepEqual(page.chunks.map((chunk) => [chunk.pos, chunk.text.length]), qmd[strategy], `${qmd.file} under ${strategy}`);
    }
    if (JSON.stringify(qmd.auto) !== JSON.stringify(qmd.regex)) cutApart++;
  }
  console.log(`${theirs.length} files chunked as qmd does; ${cutApart} cut apart by auto`);
  assert.ok(cutApart >= theirs.length / 4, `auto cut only ${cutApart} files apart from regex`);

  // Hostile sources stay bounded in the grammar module as natively: past
  // 1 MB nothing is parsed, 10,000 nested blocks end in points or a reason.
  const hostile = await browser.page.evaluate(async () => {
    const big = await window.qmd.chunkDocument('a=function(b){return b+1};'.repeat(45_000), 'big.js', 'auto');
    const nested = await window.qmd.chunkDocument(`${'{'.repeat(10_000)}x${'}'.repeat(10_000)}`, 'deep.ts', 'auto');
    return { big: big.fallback, nested: nested.chunks.length };
  });
  assert.equal(hostile.big, 'javascript chunked by the markdown rules only: the file is over 1 MB');
  assert.ok(hostile.nested > 0);
});

test('only the model fetch and the app are requested, all from the page origin', () => {
  const origin = new URL(server.url).origin;
  assert.deepEqual(foreignRequests(browser.requests, origin), []);
  assert.ok(browser.requests.some((url) => url.endsWith('/models/embed/model.safetensors')));
});
