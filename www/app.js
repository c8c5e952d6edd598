// The page: folders, search box, results, document view. All engine work
// happens in worker.js; this file only renders and routes input.

import { engineBuild } from './engine.js';
import { folderStore } from './folders.js';
import { highlight, queryTerms } from './highlight.js';

const $ = (id) => document.getElementById(id);

// ---- worker RPC -----------------------------------------------------------

const worker = new Worker('worker.js', { type: 'module' });
const pending = new Map();
let nextId = 1;
let onProgress = () => {};

worker.onmessage = ({ data }) => {
  if (data.progress) return onProgress(data.progress);
  if (data.embed) return onEmbed(data.embed);
  const call = pending.get(data.id);
  if (!call) return;
  pending.delete(data.id);
  data.error === undefined ? call.resolve(data.result) : call.reject(new Error(data.error));
};
worker.onerror = (e) => showNotice(`The search engine stopped: ${e.message ?? 'worker error'}`);

function call(method, args) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, method, args });
  });
}

// ---- state and small helpers ----------------------------------------------

const state = {
  collections: [], results: [], selected: -1, searchSeq: 0, busy: false,
  status: null, model: null, reranker: null, generator: null, embedding: null,
  /** The hybrid query in flight, while it may be expanding. */
  querying: false,
};

function showNotice(text) {
  $('notice').textContent = text;
  $('notice').classList.toggle('hidden', !text);
}

function setStatus(text) {
  $('engine-status').textContent = text;
}

function formatBytes(bytes) {
  if (bytes < 1024 * 1024) return `${Math.max(1, Math.round(bytes / 1024))} KB`;
  return `${(bytes / 1048576).toFixed(1)} MB`;
}

function describeStatus(status) {
  const vectors = status.vectors ? ` · ${status.vectors} vectors` : '';
  return `${status.total_documents} documents in ${status.collections.length} collection(s)${vectors} · index ${formatBytes(status.index_bytes)} in OPFS`;
}

/** The engine's notes, in this page's words rather than the CLI's. */
const pageWords = (note) => note.replace("run 'qmd embed'", 'use "Embed documents"');

function showProgress(label, cancellable = false) {
  $('progress').classList.remove('hidden');
  $('progress-label').textContent = label;
  $('progress-bar').removeAttribute('value');
  $('cancel').classList.toggle('hidden', !cancellable);
}

function setProgress(text, done, total) {
  $('progress-label').textContent = text;
  if (total) {
    $('progress-bar').max = total;
    $('progress-bar').value = done;
  } else {
    $('progress-bar').removeAttribute('value');
  }
}

function hideProgress() {
  $('progress').classList.add('hidden');
  $('cancel').classList.add('hidden');
}

/** Runs `work` with the progress bar showing the worker's progress. */
async function busy(label, work) {
  state.busy = true;
  showProgress(label);
  onProgress = ({ label, phase, done, total, unit }) => {
    if (unit === 'bytes') setProgress(`${label} ${phase}: ${formatBytes(done)}${total ? ` / ${formatBytes(total)}` : ''}`, done, total);
    else setProgress(total ? `${label} ${phase}: ${done} / ${total} files` : `${label} ${phase}…`, done, total);
  };
  try {
    return await work();
  } finally {
    state.busy = false;
    onProgress = () => {};
    hideProgress();
  }
}

function reportUpdate(report) {
  const parts = report.collections.map(
    (c) => `${c.name}: ${c.added} added, ${c.updated} updated, ${c.unchanged} unchanged, ${c.removed} removed` +
      (c.skipped.length ? `, ${c.skipped.length} skipped` : '') +
      (c.invalid_metadata.length ? `, ${c.invalid_metadata.length} with invalid qmd.metadata frontmatter` : ''),
  );
  showNotice('');
  $('result-summary').textContent = `Indexed. ${parts.join('; ')}`;
}

// ---- collections ------------------------------------------------------------

async function refreshCollections() {
  state.collections = await call('collections');
  const stored = await folderStore.names();
  const list = $('collections');
  list.replaceChildren();
  for (const c of state.collections) {
    const li = document.createElement('li');
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = c.name;
    const count = document.createElement('span');
    count.className = 'count';
    count.textContent = `${c.documents} docs${stored.includes(c.name) ? '' : ' · re-pick to update'}`;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'remove';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', `Remove collection ${c.name}`);
    remove.onclick = () => removeCollection(c.name);
    li.append(name, count, remove);
    list.append(li);
  }
  const scope = $('scope');
  const current = scope.value;
  scope.replaceChildren(new Option('All collections', ''));
  for (const c of state.collections) scope.append(new Option(c.name, c.name));
  scope.value = state.collections.some((c) => c.name === current) ? current : '';
  $('empty').classList.toggle('hidden', state.collections.length > 0);
  $('update').disabled = state.collections.length === 0;
  state.status = await call('status');
  setStatus(describeStatus(state.status));
  renderModel();
}

function freeName(base) {
  const taken = new Set(state.collections.map((c) => c.name));
  const clean = base.replace(/[/\s]+/g, '-') || 'notes';
  let name = clean;
  for (let i = 2; taken.has(name); i++) name = `${clean}-${i}`;
  return name;
}

/** The files a new collection takes: the mask field's glob (as `qmd
 * collection add --mask`), qmd's `**\/*.md` when it is empty. */
const maskChoice = () => $('mask').value.trim() || null;

/** Adds a folder (a directory handle) as a collection and indexes it. */
async function addFolder(handle, name = freeName(handle.name), mask = maskChoice()) {
  const report = await busy(`Indexing ${name}`, () => call('addFolder', { name, handle, mask }));
  await folderStore.put(name, handle);
  reportUpdate(report);
  await refreshCollections();
  return report;
}

async function addFiles(fileList) {
  const files = [...fileList];
  if (!files.length) return;
  const folder = (files[0].webkitRelativePath || 'notes').split('/')[0];
  const existing = state.collections.find((c) => c.name === folder);
  const name = existing ? existing.name : freeName(folder);
  const report = existing
    ? await busy(`Updating ${name}`, () => call('update', { folders: [{ name, files }] }))
    : await busy(`Indexing ${name}`, () => call('addFolder', { name, files, mask: maskChoice() }));
  reportUpdate(report);
  await refreshCollections();
}

/** Re-scans every folder this browser can still read and re-indexes what changed. */
async function update() {
  const folders = [];
  for (const c of state.collections) {
    const handle = await folderStore.get(c.name);
    if (!handle) continue;
    // Folders picked by the user need their read permission renewed after a reload.
    if (handle.queryPermission && (await handle.queryPermission({ mode: 'read' })) !== 'granted') {
      if ((await handle.requestPermission({ mode: 'read' })) !== 'granted') continue;
    }
    folders.push({ name: c.name, handle });
  }
  if (!folders.length) {
    showNotice('No folder to re-scan: pick the folder again with "Add folder…".');
    return null;
  }
  const report = await busy('Updating', () => call('update', { folders }));
  reportUpdate(report);
  await refreshCollections();
  return report;
}

async function removeCollection(name) {
  await call('removeCollection', { name });
  await folderStore.delete(name);
  await refreshCollections();
  runSearch();
}

// ---- search -------------------------------------------------------------------

function searchOptions() {
  const scope = $('scope').value;
  const options = { collections: scope ? [scope] : [], limit: 10 };
  const filter = $('filter').value.trim();
  if (filter) {
    try {
      options.filter = JSON.parse(filter);
    } catch (e) {
      throw new Error(`Invalid filter JSON: ${e.message}`);
    }
  }
  return options;
}

async function runSearch() {
  // A newer keystroke wins: an expansion still running is not waited for.
  if (state.querying) call('cancelQuery');
  const query = $('q').value.trim();
  const seq = ++state.searchSeq;
  if (!query) {
    renderResults([], '', 'keyword');
    return [];
  }
  const started = performance.now();
  const hits = await call('search', { query, options: searchOptions() });
  if (seq !== state.searchSeq) return hits; // a newer keystroke won
  renderResults(hits.map((hit) => ({ hit })), query, 'keyword', performance.now() - started);
  return hits;
}

async function runHybrid() {
  // A keystroke's pending keyword search would overwrite these results.
  clearTimeout(typing);
  const query = $('q').value.trim();
  if (!query) return null;
  const seq = ++state.searchSeq;
  const started = performance.now();
  let result;
  try {
    result = await expanding(() => call('query', { query, options: searchOptions() }));
  } catch (e) {
    if (e.message !== 'query cancelled') throw e;
    if (seq === state.searchSeq) $('result-summary').textContent = 'Query cancelled.';
    return null;
  }
  if (seq !== state.searchSeq) return result;
  renderResults(result.hits, result.primary_query, 'hybrid', performance.now() - started, result);
  return result;
}

/** Runs a query with the model's expansion shown as it is written
 * (tokens so far, the text's last line) and the Cancel button stopping it. */
async function expanding(work) {
  state.querying = true;
  onProgress = ({ phase, done, total }) => {
    dispatchEvent(new CustomEvent('qmd-expanding', { detail: { text: phase, done, total } }));
    showProgress('', true);
    const line = phase.trimEnd().split('\n').at(-1) || '…';
    setProgress(`Expanding query (${done} tokens): ${line}`, done, total);
  };
  try {
    return await work();
  } finally {
    state.querying = false;
    onProgress = () => {};
    if (!state.busy) hideProgress();
  }
}

function renderResults(items, query, mode, ms = 0, detail = null) {
  state.results = items;
  state.selected = -1;
  const list = $('results');
  list.replaceChildren();
  const terms = queryTerms(query);
  items.forEach((item, i) => list.append(resultItem(item, i, terms, detail)));
  $('result-summary').textContent = query
    ? `${items.length} ${mode} result${items.length === 1 ? '' : 's'} in ${ms.toFixed(0)} ms` +
      (detail?.notes?.length ? ` · ${detail.notes.map(pageWords).join('; ')}` : '')
    : '';
}

/** A result's qmd.metadata as `key: value` chips. */
function metadataLine(metadata) {
  const line = document.createElement('p');
  line.className = 'metadata';
  for (const [key, value] of Object.entries(metadata)) {
    const chip = document.createElement('span');
    chip.className = 'chip';
    chip.textContent = `${key}: ${Array.isArray(value) ? value.join(', ') : value}`;
    line.append(chip);
  }
  return line;
}

function resultItem(item, i, terms, detail) {
  const { hit } = item;
  const li = document.createElement('li');
  li.className = 'result';
  li.id = `result-${i}`;
  li.setAttribute('role', 'option');
  li.setAttribute('aria-selected', 'false');
  li.dataset.docid = hit.docid;

  const head = document.createElement('div');
  head.className = 'result-head';
  const title = document.createElement('a');
  title.href = `#${hit.docid}`;
  title.className = 'title';
  title.textContent = hit.title || hit.path;
  title.onclick = (e) => {
    e.preventDefault();
    openDocument(hit);
  };
  const score = document.createElement('span');
  score.className = 'score';
  score.textContent = `${Math.round(hit.score * 100)}%`;
  score.title = `score ${hit.score.toFixed(4)}`;
  head.append(title, score);

  const path = document.createElement('p');
  path.className = 'path';
  path.textContent = `qmd://${hit.collection}/${hit.path} · #${hit.docid}`;
  li.append(head, path);

  if (hit.metadata) li.append(metadataLine(hit.metadata));
  if (hit.context) {
    const context = document.createElement('p');
    context.className = 'context';
    context.textContent = hit.context;
    li.append(context);
  }
  const snippet = document.createElement('pre');
  snippet.className = 'snippet';
  snippet.append(...highlight(hit.snippet, terms));
  li.append(snippet);

  if (detail) li.append(explainDetail(item, detail));
  li.onclick = (e) => {
    if (e.target.closest('details')) return;
    select(i);
  };
  li.ondblclick = () => openDocument(hit);
  return li;
}

/** `--explain`: how the fused score came about, on demand. */
function explainDetail(item, detail) {
  const box = document.createElement('details');
  box.className = 'explain';
  const summary = document.createElement('summary');
  summary.textContent = 'Why this result?';
  box.append(summary);
  const lines = [
    `fused rank ${item.rrf_rank}, RRF score ${item.rrf_score.toFixed(4)}` +
      (item.top_rank_bonus ? ` (top-rank bonus ${item.top_rank_bonus.toFixed(3)})` : ''),
    ...item.contributions.map((c) => {
      const list = detail.lists[c.list];
      const where = list ? `${list.source} ${list.query_type} "${list.query}"` : `list ${c.list}`;
      return `  ${where}: rank ${c.rank}, weight ${c.weight}, score ${c.backend_score.toFixed(3)}, RRF +${c.rrf.toFixed(4)}`;
    }),
    item.rerank_score == null
      ? `no reranker: score is the fused position (blend weight ${item.blend_weight})`
      : `rerank ${item.rerank_score.toFixed(4)}, blend weight ${item.blend_weight}`,
  ];
  const pre = document.createElement('pre');
  pre.textContent = lines.join('\n');
  box.append(pre);
  return box;
}

function select(i) {
  const items = $('results').children;
  if (!items.length) return;
  state.selected = Math.max(0, Math.min(items.length - 1, i));
  [...items].forEach((li, j) => li.setAttribute('aria-selected', String(j === state.selected)));
  items[state.selected].scrollIntoView({ block: 'nearest' });
  $('q').setAttribute('aria-activedescendant', items[state.selected].id);
}

// ---- embedding model ------------------------------------------------------------

const huggingFace = (repo) => `https://huggingface.co/${repo}/resolve/main/`;
// The CLI's defaults. GGUF models (qmd's own) come as {id, url, gguf: true}.
const DEFAULT_MODELS = {
  embedModel: { id: 'sentence-transformers/all-MiniLM-L6-v2', url: huggingFace('sentence-transformers/all-MiniLM-L6-v2') },
  rerankModel: { id: 'cross-encoder/ms-marco-MiniLM-L-6-v2', url: huggingFace('cross-encoder/ms-marco-MiniLM-L-6-v2') },
  generateModel: {
    id: 'hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf',
    url: `${huggingFace('tobil/qmd-query-expansion-1.7B-gguf')}qmd-query-expansion-1.7B-q4_k_m.gguf`,
    gguf: true,
  },
};
const params = new URLSearchParams(location.search);
const deviceChoice = () => params.get('device') ?? localStorage.getItem('qmd-device') ?? 'auto';

/** Where the models come from: `qmd web` names the CLI's in config.json
 * (null where the page has none); served statically, Hugging Face. */
async function modelSources() {
  try {
    const response = await fetch('config.json');
    if (response.ok) return { ...DEFAULT_MODELS, ...(await response.json()) };
  } catch {
    // Served statically without a config: Hugging Face it is.
  }
  return DEFAULT_MODELS;
}

/** Where model files may come from: this page's origin (`qmd web` serves
 * the CLI's models) and Hugging Face, as the page's connect-src says. */
function modelOrigin(url) {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  if (url.origin === location.origin) return true;
  if (url.protocol !== 'https:') return false;
  const host = url.hostname;
  return host === 'huggingface.co' || host.endsWith('.huggingface.co') || host.endsWith('.hf.co');
}

/** The worker resolves file names against an absolute URL; a source from
 * config.json (data, not code) that leaves those origins is refused. */
function absolute(source) {
  const url = new URL(source.url, location.href);
  if (!modelOrigin(url)) throw new Error(`model files may come only from this site or Hugging Face, not ${url.origin}`);
  return { ...source, url: url.href };
}

async function loadModel({ cachedOnly = false } = {}) {
  const sources = await modelSources();
  if (!sources.embedModel) return null;
  const device = deviceChoice();
  const loaded = await busy('Loading model', () =>
    call('loadModel', { ...absolute(sources.embedModel), device, cachedOnly }),
  );
  if (!loaded) return null;
  state.model = loaded;
  if (/^CPU.*(no WebGPU adapter|adapter is software)/.test(loaded.device)) {
    showNotice(`No hardware WebGPU here (${loaded.device.split(', ').slice(1).join(', ')}): the model runs on the CPU.`);
  }
  // The reranker orders hybrid results as the CLI's `query` does; without
  // it they keep their fused order (`--no-rerank`).
  if (sources.rerankModel) {
    try {
      state.reranker = await busy('Loading reranker', () =>
        call('loadReranker', { ...absolute(sources.rerankModel), device, cachedOnly }),
      );
    } catch (e) {
      showNotice(`The reranker could not be loaded (${e.message}): results keep their fused order.`);
    }
  }
  renderModel();
  return loaded;
}

/** Loads the query-expansion model (downloading it unless `cachedOnly`);
 * plain hybrid queries then expand with it as the CLI's `query` does. */
async function loadGenerator({ cachedOnly = false } = {}) {
  const sources = await modelSources();
  if (!sources.generateModel) throw new Error('no query-expansion model is configured');
  const loaded = await busy('Loading expansion model', () =>
    call('loadGenerator', { ...absolute(sources.generateModel), device: deviceChoice(), cachedOnly }),
  );
  if (loaded) state.generator = loaded;
  renderModel();
  return loaded;
}

function renderModel() {
  const { model, status, embedding } = state;
  const pending = status?.needs_embedding ?? 0;
  $('model-status').textContent = model
    ? `${model.model.split('/').at(-1)} · ${model.dimension} dims · ${model.device}` +
      (model.workers > 1 ? ` · embeds on ${model.workers} cores` : '') +
      (state.reranker ? ` · reranks with ${state.reranker.model.split('/').at(-1)}` : '') +
      (state.generator ? ` · expands queries with ${state.generator.model.split('/').at(-1)}. ` : '. ') +
      (pending ? `${pending} document(s) need embedding.` : 'All documents embedded.')
    : 'Model not loaded: keyword search only.';
  $('load-model').disabled = Boolean(model);
  $('load-generator').disabled = Boolean(state.generator) || state.busy;
  $('embed').disabled = !model || !pending || Boolean(embedding) || state.busy;
  $('device').value = deviceChoice();
  // The index's strategy until the user picks one for the next run.
  $('chunk-strategy').value = state.chunkStrategy ?? status?.chunk_strategy ?? 'regex';
}

/** Embeds every document without vectors (of one collection, if named);
 * resolves when the run ends. Each step is also announced as a
 * `qmd-embed` event ({state, report}) on the window. */
async function embedDocuments({ force = false, collection = null, maxDocsPerBatch = null, chunkStrategy = null } = {}) {
  state.busy = true;
  showProgress('Embedding…', true);
  try {
    chunkStrategy ??= $('chunk-strategy').value;
    const report = await call('embed', { force, collection, maxDocsPerBatch, chunkStrategy });
    return await new Promise((resolve, reject) => {
      state.embedding = { resolve, reject, started: performance.now(), report };
      renderModel();
    });
  } catch (e) {
    state.busy = false;
    hideProgress();
    throw e;
  }
}

function onEmbed({ state: runState, report, error }) {
  dispatchEvent(new CustomEvent('qmd-embed', { detail: { state: runState, report } }));
  const run = state.embedding;
  if (!run) return;
  const pct = report.total_bytes ? Math.round((100 * report.bytes) / report.total_bytes) : 100;
  setProgress(`Embedding: ${report.docs} of ${report.pending} documents, ${report.chunks} chunks (${pct}%)`, report.bytes, report.total_bytes);
  if (runState === 'running') return;
  state.embedding = null;
  state.busy = false;
  hideProgress();
  const seconds = ((performance.now() - run.started) / 1000).toFixed(1);
  if (runState !== 'failed') {
    $('result-summary').textContent = `${runState === 'done' ? 'Embedded' : 'Cancelled after'} ${report.docs} documents (${report.chunks} chunks) in ${seconds} s` +
      (report.rechunked ? `; ${report.rechunked} code files re-chunked for the new strategy` : '');
    state.chunkStrategy = null;
  }
  // Settled once the page shows the index after the run (its strategy too).
  refreshCollections()
    .catch((e) => showNotice(e.message))
    .finally(() => {
      if (runState === 'failed') return run.reject(new Error(error));
      // Code files no grammar could read keep the markdown break points.
      if (report.fallbacks.length) showNotice(report.fallbacks.join('; '));
      run.resolve({ state: runState, report });
    });
}

// ---- document view --------------------------------------------------------------

async function openDocument(hit) {
  const doc = await call('get', { file: `#${hit.docid}` });
  $('doc-title').textContent = doc.title || doc.path;
  $('doc-path').textContent = `qmd://${doc.collection}/${doc.path} · #${doc.docid}`;
  $('doc-context').textContent = doc.context ?? '';
  const body = $('doc-lines').tBodies[0];
  body.replaceChildren();
  const terms = queryTerms($('q').value);
  doc.body.split('\n').forEach((text, i) => {
    const row = body.insertRow();
    row.id = `line-${i + 1}`;
    const number = row.insertCell();
    number.className = 'ln';
    number.textContent = String(i + 1);
    const line = row.insertCell();
    line.append(...highlight(text, terms));
  });
  $('doc').classList.remove('hidden');
  const target = document.getElementById(`line-${hit.line || 1}`);
  target?.classList.add('hit-line');
  target?.scrollIntoView({ block: 'center' });
  $('doc').focus();
  return doc;
}

function closeDocument() {
  $('doc').classList.add('hidden');
  $('q').focus();
}

// ---- input ------------------------------------------------------------------------

let typing = 0;
$('q').addEventListener('input', () => {
  clearTimeout(typing);
  typing = setTimeout(() => runSearch().catch((e) => showNotice(e.message)), 40);
});
$('scope').addEventListener('change', () => runSearch().catch((e) => showNotice(e.message)));
$('filter').addEventListener('change', () => runSearch().catch((e) => showNotice(e.message)));
$('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  if (state.selected >= 0 && state.results[state.selected]) {
    openDocument(state.results[state.selected].hit).catch((err) => showNotice(err.message));
  } else {
    runHybrid().catch((err) => showNotice(err.message));
  }
});
$('q').addEventListener('keydown', (e) => {
  if (e.key === 'ArrowDown') select(state.selected + 1);
  else if (e.key === 'ArrowUp') select(state.selected - 1);
  else return;
  e.preventDefault();
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && !$('doc').classList.contains('hidden')) closeDocument();
  else if (e.key === '/' && document.activeElement !== $('q')) {
    e.preventDefault();
    $('q').focus();
  }
});
$('doc-close').onclick = closeDocument;

const guard = (work) => () => {
  if (state.busy) return;
  work().catch((e) => showNotice(e.message));
};
if (window.showDirectoryPicker) {
  $('add-folder').onclick = guard(async () => {
    let handle;
    try {
      handle = await window.showDirectoryPicker({ id: 'qmd-notes', mode: 'read' });
    } catch (e) {
      if (e.name === 'AbortError') return; // the user closed the picker
      throw e;
    }
    await addFolder(handle);
  });
} else {
  // No File System Access API (Firefox, Safari): a folder input; updating
  // means picking the folder again.
  $('add-folder').classList.add('hidden');
  $('add-folder-fallback').classList.remove('hidden');
  $('folder-input').onchange = guard(async () => addFiles($('folder-input').files));
}
$('update').onclick = guard(update);
$('load-model').onclick = guard(() => loadModel());
$('embed').onclick = guard(() => embedDocuments());
$('chunk-strategy').addEventListener('change', (e) => (state.chunkStrategy = e.target.value));
$('load-generator').onclick = guard(() => loadGenerator());
$('cancel').onclick = () => call(state.querying ? 'cancelQuery' : 'cancelEmbed');
$('device').onchange = () => {
  localStorage.setItem('qmd-device', $('device').value);
  if (state.model) showNotice('The new device applies after a reload.');
};

// ---- start --------------------------------------------------------------------------

async function start() {
  try {
    // The engine build (engine.js): by the probe, or `?simd=` on the URL.
    await call('open', { name: 'default', build: engineBuild(location.search), device: deviceChoice() });
    await refreshCollections();
    const sources = await modelSources();
    $('load-generator').classList.toggle('hidden', !sources.generateModel);
    // A model cached by an earlier visit loads by itself; none is downloaded unasked.
    await loadModel({ cachedOnly: true }).catch((e) => showNotice(`The cached model could not be loaded: ${e.message}`));
    // The expansion model is opt-in (qmd's is 1.2 GB): it loads by itself
    // only when an earlier visit downloaded it.
    if (sources.generateModel) {
      await loadGenerator({ cachedOnly: true }).catch((e) =>
        showNotice(`The cached expansion model could not be loaded: ${e.message}`),
      );
    }
  } catch (e) {
    setStatus('The index could not be opened.');
    showNotice(e.message);
    throw e;
  }
  if ('serviceWorker' in navigator) {
    // Offline after the first visit: the app shell and the engine are cached.
    navigator.serviceWorker.register('sw.js').catch(() => {});
  }
}

const ready = start();
ready.catch(() => {}); // reported on the page; awaiters still see the rejection

// For automation and the browser tests: the same calls the buttons make.
window.qmd = {
  ready,
  addFolder: async (handle, name, mask) => (await ready, addFolder(handle, name, mask ?? maskChoice())),
  update: async () => (await ready, update()),
  // As typed into the page: `options.filter` (a metadata filter tree)
  // goes into the filter box, which is cleared without one.
  search: async (query, options = {}) => {
    await ready;
    $('q').value = query;
    $('filter').value = options.filter ? JSON.stringify(options.filter) : '';
    return runSearch();
  },
  hybrid: async (query, options = {}) => {
    await ready;
    $('q').value = query;
    $('filter').value = options.filter ? JSON.stringify(options.filter) : '';
    return runHybrid();
  },
  open: (hit) => openDocument(hit),
  loadModel: async () => (await ready, state.model ?? loadModel()),
  embed: async (options) => (await ready, embedDocuments(options)),
  cancelEmbed: () => call('cancelEmbed'),
  embedTexts: (texts) => call('embedTexts', { texts }),
  rerankTexts: (query, documents) => call('rerankTexts', { query, documents }),
  reranker: () => state.reranker,
  loadGenerator: async (options) => (await ready, state.generator ?? loadGenerator(options)),
  generator: () => state.generator,
  cancelQuery: () => call('cancelQuery'),
  followTokens: (text, reference) => call('followTokens', { text, reference }),
  status: () => call('status'),
  chunkDocument: (content, path, chunkStrategy) => call('chunkDocument', { content, path, chunkStrategy }),
  call,
};
