// Model files fetched once and kept in OPFS (qmd-models/<repo>/), for the
// Worker: a safetensors repository's files, or a GGUF model's one file
// (kept as `model.gguf`, the name the engine looks for). A download counts only when every file arrived whole: each is
// checked against its Content-Length (and its SHA-256 where the server
// names one, as Hugging Face does for large files), retried up to three
// times, and `complete.json` — written last — lists what was verified.
// A cached model whose files do not match that list is fetched again, so
// a partial download is never used.

const REQUIRED = ['config.json', 'tokenizer.json', 'model.safetensors'];
const OPTIONAL = ['1_Pooling/config.json', 'sentence_bert_config.json', 'config_sentence_transformers.json', 'modules.json'];
const GGUF = 'model.gguf';
const ATTEMPTS = 3;

/** The largest model file this page downloads (a 1.7B model's Q4_K_M GGUF
 * is 1.2 GB; wasm32 holds at most 4 GiB). */
const MAX_FILE_BYTES = 3 * 2 ** 30;

/** A model id as one OPFS name: what is not a plain name character joined
 * as `__`, and names that are only dots (`.`, `..`) made plain. */
export function cacheName(id) {
  const name = String(id).replace(/[^A-Za-z0-9._-]+/g, '__');
  return /^\.*$/.test(name) ? `_${name}_` : name;
}

/** The model's cache folder; with `create` false, null when there is none
 * (a lookup leaves no empty folder behind). */
async function modelDir(id, create = true) {
  try {
    const root = await navigator.storage.getDirectory();
    const models = await root.getDirectoryHandle('qmd-models', { create });
    return await models.getDirectoryHandle(cacheName(id), { create });
  } catch (e) {
    if (!create && e.name === 'NotFoundError') return null;
    throw e;
  }
}

const flat = (name) => name.replaceAll('/', '__');

async function readCached(dir, name) {
  const file = await (await dir.getFileHandle(flat(name))).getFile();
  return new Uint8Array(await file.arrayBuffer());
}

async function writeCached(dir, name, bytes) {
  const writable = await (await dir.getFileHandle(flat(name), { create: true })).createWritable();
  await writable.write(bytes);
  await writable.close();
}

/** The verified cache of model `id` from `url`, or null when any file is
 * missing or differs, or the folder holds another model (two ids can share
 * a folder name, and an id can move to another source). */
async function cached(dir, id, url) {
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(await readCached(dir, 'complete.json')));
  } catch {
    return null;
  }
  if (manifest?.id !== id || manifest?.source !== url) return null;
  // Keyed by file names from storage: no prototype, and only the names a
  // model has (a manifest is data, not a list of files to open).
  const files = Object.create(null);
  for (const [name, size] of Object.entries(manifest?.files ?? {})) {
    if (![...REQUIRED, ...OPTIONAL, GGUF].includes(name)) return null;
    try {
      const bytes = await readCached(dir, name);
      if (bytes.length !== size) return null;
      files[name] = bytes;
    } catch {
      return null;
    }
  }
  return files;
}

async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** One file, whole and verified, or null when the server has none (404). */
async function download(url, onBytes) {
  const response = await fetch(url);
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const expected = Number(response.headers.get('content-length')) || null;
  const reader = response.body.getReader();
  const chunks = [];
  let received = 0;
  // Checked as the bytes arrive, not after: a body that never ends (or
  // one the browser inflates past its Content-Length) must not fill the
  // worker's memory first.
  const limit = Math.min(expected ?? MAX_FILE_BYTES, MAX_FILE_BYTES);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
    if (received > limit) {
      await reader.cancel().catch(() => {});
      throw new Error(`${url}: more than the ${limit} bytes it may hold`);
    }
    onBytes(received, expected);
  }
  if (expected !== null && received !== expected) {
    throw new Error(`${url}: got ${received} of ${expected} bytes`);
  }
  const bytes = new Uint8Array(received);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  // Hugging Face names a large file's SHA-256 in X-Linked-Etag.
  const etag = (response.headers.get('x-linked-etag') ?? '').replaceAll('"', '');
  if (/^[0-9a-f]{64}$/.test(etag) && (await sha256(bytes)) !== etag) {
    throw new Error(`${url}: checksum mismatch`);
  }
  return bytes;
}

async function downloadWithRetry(url, onBytes) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await download(url, onBytes);
    } catch (e) {
      if (attempt >= ATTEMPTS) throw new Error(`download failed after ${ATTEMPTS} attempts: ${e.message}`);
      await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
    }
  }
}

/** What to fetch for a model: [{name, url, required}]. */
function plan(baseUrl, gguf) {
  if (gguf) return [{ name: GGUF, url: baseUrl, required: true }];
  return [...REQUIRED, ...OPTIONAL].map((name) => ({ name, url: new URL(name, baseUrl).href, required: REQUIRED.includes(name) }));
}

/**
 * The files of model `id` from `url` — a repository's base URL (ending in
 * `/`), or with `gguf` the URL of the model's .gguf file — from the OPFS
 * cache when it holds a verified copy (with `cachedOnly`, only from there:
 * `files` is null when it does not). `onProgress(file, received, total)`.
 */
export async function modelFiles(id, url, onProgress, { cachedOnly = false, gguf = false } = {}) {
  const dir = await modelDir(id, !cachedOnly);
  const hit = dir && (await cached(dir, id, url));
  if (hit && (GGUF in hit) === gguf) return { files: hit, cached: true };
  if (cachedOnly) return { files: null, cached: false };
  // The manifest goes first: from here until it is rewritten, the cache is incomplete.
  await dir.removeEntry('complete.json').catch(() => {});
  const files = Object.create(null);
  for (const { name, url: fileUrl, required } of plan(url, gguf)) {
    const bytes = await downloadWithRetry(fileUrl, (received, total) => onProgress(name, received, total));
    if (bytes === null) {
      if (required) throw new Error(`${fileUrl} is missing (HTTP 404)`);
      continue;
    }
    await writeCached(dir, name, bytes);
    files[name] = bytes;
  }
  const manifest = { id, source: url, files: Object.fromEntries(Object.entries(files).map(([n, b]) => [n, b.length])) };
  await writeCached(dir, 'complete.json', new TextEncoder().encode(JSON.stringify(manifest)));
  return { files, cached: false };
}
