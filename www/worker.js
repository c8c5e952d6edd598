// The engine's thread: the wasm core, its OPFS index and the embedding
// model run here, off the page's main thread. Requests arrive as
// {id, method, args}; each gets one {id, result} or {id, error}, and long
// operations post {progress} messages meanwhile. Requests run one at a
// time, in order: the index allows a single writer and OPFS commits are
// asynchronous. An embedding run is a chain of one-batch steps on the same
// queue, so searches still answer while it goes on, and it reports
// {embed: {state, report}} after each step. A query that expands with a
// model posts {progress} per few tokens and stops on `cancelQuery`.

import { loadEngine, startThreads } from './engine.js';
import { modelFiles } from './model-cache.js';
import { HelperPool } from './helpers.js';

/** Memory the helper Workers' model copies may take together. */
const HELPER_MODEL_BYTES = 1.5e9;

let index = null;
/** The engine module's bindings (engine.js), once loaded. */
let engine = null;
/** The engine build the page chose (engine.js); helpers load the same. */
let buildInUse;
/** The threaded build's pool size (1 for the other builds): with more,
 * the engine spreads each pass over its own pool and needs no helpers. */
let threads = 1;
/** Why the threaded build was asked for and not used, if it was. */
let threadsFailure = null;
let queue = Promise.resolve();
let embedRun = null;
/** Queries asked for and not yet answered, each {cancelled}. */
const queryRuns = new Set();
/** Helper Workers for CPU embedding (none on a GPU: one queue feeds it). */
let helpers = null;

/** `auto` as on the command line: a hardware adapter, else the CPU.
 * A software adapter (Chromium's SwiftShader) is passed over; it is far
 * slower than the CPU backend. Returns [choice, why the CPU was chosen]. */
async function resolveDevice(device) {
  if (device !== 'auto') return [device, null];
  const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
  if (!adapter) return ['cpu', 'no WebGPU adapter'];
  if (adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter) {
    return ['cpu', `the WebGPU adapter is software (${adapter.info?.architecture || 'fallback'})`];
  }
  return ['gpu', null];
}

/** A loaded model's device, with why the CPU was chosen and why the
 * threaded build is not in use, where either applies. */
function deviceLine(device, reason) {
  const notes = [reason, threadsFailure && `no threads (${threadsFailure.message ?? threadsFailure})`];
  return [device, ...notes.filter(Boolean)].join(', ');
}

function embedStep(run) {
  queue = queue.then(async () => {
    if (run.cancelled) {
      embedRun = null;
      return postMessage({ embed: { state: 'cancelled', report: run.report } });
    }
    try {
      const share = helpers?.workers > 1 ? (texts) => helpers.embed(texts, (t) => index.embedShare(t)) : undefined;
      const step = await index.embedStep(share);
      run.report = step.report;
      postMessage({ embed: { state: step.done ? 'done' : 'running', report: step.report } });
      if (step.done) embedRun = null;
      // A macrotask between steps lets a cancel message in first.
      else setTimeout(() => embedStep(run), 0);
    } catch (e) {
      embedRun = null;
      postMessage({ embed: { state: 'failed', report: run.report, error: String(e?.message ?? e) } });
    }
  });
}

/** A model's files from the OPFS cache or `url`, with download progress;
 * null when `cachedOnly` and not cached. */
async function fetchModel(label, id, url, gguf, cachedOnly) {
  const onProgress = (file, done, total) =>
    postMessage({ progress: { label, phase: file, done, total: total ?? 0, unit: 'bytes' } });
  const fetched = await modelFiles(id, url, onProgress, { cachedOnly, gguf: Boolean(gguf) });
  if (!fetched.files) return null;
  postMessage({ progress: { label: 'Loading model', phase: id, done: 0, total: 0 } });
  return fetched;
}

const progress = (label) => (phase, done, total) =>
  postMessage({ progress: { label, phase, done, total } });

/** The collection's files in a directory handle: [paths, files]. */
async function walkFolder(handle, filter) {
  const paths = [];
  const files = [];
  const pending = [[handle, '']];
  while (pending.length) {
    const [dir, prefix] = pending.pop();
    const handles = [];
    for await (const [name, entry] of dir.entries()) {
      const path = prefix + name;
      if (entry.kind === 'directory') {
        if (filter.entersDir(path)) pending.push([entry, `${path}/`]);
      } else if (filter.includes(path)) {
        paths.push(path);
        handles.push(entry);
      }
    }
    files.push(...(await Promise.all(handles.map((h) => h.getFile()))));
  }
  return [paths, files];
}

/** The collection's files of an <input webkitdirectory>: [paths, files]. */
function listPicked(fileList, filter) {
  const picked = fileList
    .map((file) => [file.webkitRelativePath.split('/').slice(1).join('/'), file])
    .filter(([path]) => filter.includes(path));
  return [picked.map(([path]) => path), picked.map(([, file]) => file)];
}

/** Hands each folder's files to the index, with the contents the update
 * will read, read concurrently (reads are round trips to the browser). */
async function scanFolders(folders) {
  // folders: [{name, handle?, files?}] — a directory handle (File System
  // Access API or OPFS) or the File list of an <input webkitdirectory>.
  let count = 0;
  for (const folder of folders) {
    postMessage({ progress: { label: 'Scanning', phase: folder.name, done: 0, total: 0 } });
    const filter = index.folderFilter(folder.name);
    const [paths, files] = folder.handle ? await walkFolder(folder.handle, filter) : listPicked(folder.files, filter);
    filter.free();
    const byPath = new Map(paths.map((path, i) => [path, files[i]]));
    const readFile = (path) => new Uint8Array(new FileReaderSync().readAsArrayBuffer(byPath.get(path)));
    const toRead = index.setFiles(
      folder.name, paths, Float64Array.from(files, (f) => f.size), Float64Array.from(files, (f) => f.lastModified), readFile,
    );
    for (let i = 0; i < toRead.length; i += 256) {
      const batch = toRead.slice(i, i + 256);
      const contents = await Promise.all(batch.map((path) => byPath.get(path).arrayBuffer()));
      // One buffer and its end offsets: one copy into the engine, not one per file.
      const ends = new Uint32Array(contents.length);
      let total = 0;
      contents.forEach((c, j) => (ends[j] = total += c.byteLength));
      const bytes = new Uint8Array(total);
      contents.forEach((c, j) => bytes.set(new Uint8Array(c), ends[j] - c.byteLength));
      index.readAhead(folder.name, batch, bytes, ends);
    }
    count += paths.length;
  }
  return count;
}

/** The code grammars of `--chunk-strategy auto` (web/grammars): fetched
 * the first time the engine chunks a code file that way, not before. A
 * failed import stays failed for its URL in this Worker's module map, so
 * a retry (the next run) asks under another. */
let grammarAttempts = 0;
async function loadGrammars() {
  const retry = grammarAttempts++ ? `?attempt=${grammarAttempts}` : '';
  const grammars = await import(`./grammars/qmd_web_grammars.js${retry}`);
  await grammars.default();
  return grammars.declarations;
}

const methods = {
  async open({ name, build, device }) {
    // The threaded build has no WebGPU: where the models would run on a
    // GPU, the relaxed build (engine.js).
    if (build === 'threads' && (await resolveDevice(device ?? 'auto'))[0] !== 'cpu') build = 'relaxed';
    // A threaded build that cannot start (no shared memory, Workers
    // refused) leaves the relaxed one, and the device line says why.
    engine = null;
    if (build === 'threads') {
      try {
        engine = await loadEngine(build);
        threads = await startThreads(engine);
      } catch (e) {
        threadsFailure = e;
        engine = null;
        build = 'relaxed';
      }
    }
    engine ??= await loadEngine(build);
    buildInUse = build;
    engine.setSyntaxLoader(loadGrammars);
    const { QmdIndex } = engine;
    index = await QmdIndex.open(name ?? 'default');
    return index.status();
  },
  status: () => index.status(),
  collections: () => index.collections(),
  async addFolder({ name, mask, handle, files }) {
    await index.addCollection(name, mask ?? undefined);
    try {
      await scanFolders([{ name, handle, files }]);
    } catch (e) {
      await index.removeCollection(name);
      throw e;
    }
    return index.update(progress('Indexing'));
  },
  async update({ folders }) {
    await scanFolders(folders);
    return index.update(progress('Indexing'));
  },
  removeCollection: ({ name }) => index.removeCollection(name),
  search: ({ query, options }) => index.search(query, options),
  query: ({ query, options }, run) => {
    const onProgress = (text, done, total) =>
      postMessage({ progress: { label: 'Expanding query', phase: text, done, total, unit: 'tokens' } });
    return index.query(query, options, onProgress, () => run.cancelled);
  },
  async loadModel({ id, url, gguf, device, cachedOnly }) {
    const files = await fetchModel('Downloading model', id, url, gguf, cachedOnly);
    if (!files) return null;
    const [choice, reason] = await resolveDevice(device ?? 'auto');
    const loaded = await index.loadEmbedder(id, files.files, choice);
    helpers?.stop();
    // Each helper holds its own copy of the model: with a large GGUF file
    // (EmbeddingGemma, 330 MB) fewer helpers, so the copies stay within
    // HELPER_MODEL_BYTES.
    const modelBytes = Object.values(files.files).reduce((sum, bytes) => sum + bytes.length, 0);
    const copies = Math.max(1, Math.floor(HELPER_MODEL_BYTES / Math.max(1, modelBytes)));
    const cores = Math.min(navigator.hardwareConcurrency || 1, copies);
    const cpu = loaded.device.startsWith('CPU');
    helpers = cpu && threads === 1 ? await HelperPool.start(id, files.files, cores, buildInUse) : null;
    const workers = helpers?.workers ?? (cpu ? threads : 1);
    return { ...loaded, device: deviceLine(loaded.device, reason), cached: files.cached, workers };
  },
  async loadReranker({ id, url, gguf, device, cachedOnly }) {
    const files = await fetchModel('Downloading reranker', id, url, gguf, cachedOnly);
    if (!files) return null;
    const [choice, reason] = await resolveDevice(device ?? 'auto');
    const loaded = await index.loadReranker(id, files.files, choice);
    return { ...loaded, device: deviceLine(loaded.device, reason), cached: files.cached };
  },
  /** The query-expansion model (one GGUF file), opt-in: qmd's is 1.2 GB. */
  async loadGenerator({ id, url, device, cachedOnly }) {
    const files = await fetchModel('Downloading expansion model', id, url, true, cachedOnly);
    if (!files) return null;
    const [choice, reason] = await resolveDevice(device ?? 'auto');
    const loaded = await index.loadGenerator(id, files.files, choice);
    return { ...loaded, device: deviceLine(loaded.device, reason), cached: files.cached };
  },
  followTokens: ({ text, reference }) => index.followTokens(text, Uint32Array.from(reference)),
  rerankTexts: ({ query, documents }) => index.rerankTexts(query, documents),
  embedTexts: ({ texts }) => index.embedTexts(texts),
  // `embed`'s bulk path (shares on the helper Workers when the model runs
  // on the CPU) on texts as given: {vectors, tokens}, for the browser bench.
  embedShared: ({ texts }) =>
    helpers?.workers > 1 ? helpers.embed(texts, (t) => index.embedShare(t)) : index.embedShare(texts),
  async embed({ force, collection, maxDocsPerBatch, chunkStrategy }) {
    if (embedRun) throw new Error('an embedding run is already going on');
    // Registered before the first await, so a cancel that comes while the
    // run is being planned is not lost.
    const run = { cancelled: false, report: null };
    embedRun = run;
    try {
      run.report = await index.embedStart(
        Boolean(force), collection ?? undefined, maxDocsPerBatch ?? undefined, chunkStrategy ?? undefined,
      );
    } catch (e) {
      embedRun = null;
      throw e;
    }
    embedStep(run);
    return run.report;
  },
  get: ({ file, options }) => index.get(file, options),
  /** qmd's `chunkDocumentAsync`, as the SDK offers it. */
  chunkDocument: ({ content, path, chunkStrategy }) => engine.chunkDocument(content, path, chunkStrategy ?? undefined),
};

onmessage = ({ data: { id, method, args } }) => {
  if (method === 'cancelEmbed') {
    // Not queued: it must overtake the run's pending steps.
    if (embedRun) embedRun.cancelled = true;
    return postMessage({ id, result: Boolean(embedRun) });
  }
  if (method === 'cancelQuery') {
    // Not queued either: the running query sees it between tokens, a
    // queued one when its turn comes.
    queryRuns.forEach((run) => (run.cancelled = true));
    return postMessage({ id, result: queryRuns.size });
  }
  const run = { cancelled: false };
  if (method === 'query') queryRuns.add(run);
  queue = queue.then(async () => {
    try {
      // Own names only: `constructor` or `toString` are not methods here.
      if (!Object.hasOwn(methods, method)) throw new Error(`unknown method ${method}`);
      if (!index && method !== 'open') throw new Error('the index is not open yet');
      postMessage({ id, result: await methods[method](args ?? {}, run) });
    } catch (e) {
      postMessage({ id, error: String(e?.message ?? e) });
    } finally {
      queryRuns.delete(run);
    }
  });
};
