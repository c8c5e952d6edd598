// qmd site search: the keyword engine of a `qmd site build` bundle, as a
// JS API (`QmdSearch`) and a `<qmd-search>` element. One module, no
// dependencies, no build step. Nothing is fetched until the first search
// (or, for the element, until its box is focused).

const MARK_START = '\uE000';
const MARK_END = '\uE001';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The bundle folder this module was loaded from. */
const HERE = new URL('.', import.meta.url);

/** The most any bundle file is inflated to, whatever its entry says. */
const CEILING = 256 << 20;
/** entry.json is read up to this (it names files; it holds no index). */
const ENTRY_BYTES = 1 << 20;

/**
 * The URL of bundle file `name`: only a plain relative name under the
 * bundle's folder (same origin, path prefix). Names come from entry.json
 * and the engine's reading of the meta, which are data, never trusted to
 * point elsewhere.
 */
function bundleUrl(base, name) {
  const shown = typeof name === 'string' ? JSON.stringify(name).slice(0, 80) : `a ${typeof name}`;
  const refuse = () => new Error(`qmd search: ${shown} is not a file of this bundle`);
  if (typeof name !== 'string' || !name || /[\\?#%:]|^\//.test(name) || /[\u0000-\u0020\u007f]/.test(name)) throw refuse();
  const url = new URL(name, base);
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname) || url.search || url.hash) throw refuse();
  return url;
}

/**
 * A file's kind, as the build names it (`t` for `t/…/3.bin`, `meta` for
 * `meta.….bin`): entry.json's `limits` give each kind's largest file.
 */
const kindOf = (name) => name.split(/[./]/)[0];

/** A response body's bytes, failing past `cap` bytes (the rest unread). */
async function readCapped(stream, cap, what) {
  if (!stream) throw new Error(`qmd search: ${what}: the response has no body`);
  const reader = stream.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch (err) {
      throw new Error(`qmd search: ${what}: damaged data (${err.message})`);
    }
    if (step.done) break;
    total += step.value.length;
    if (total > cap) {
      reader.cancel().catch(() => {});
      throw new Error(`qmd search: ${what} holds more than the ${cap} bytes its kind may (a damaged or hostile bundle)`);
    }
    chunks.push(step.value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Bytes of a gzip-compressed file (every bundle file but entry.json),
 * inflated no further than `cap`; damage is named, not "Failed to fetch". */
function inflate(response, cap, name) {
  return readCapped(response.body.pipeThrough(new DecompressionStream('gzip')), cap, name);
}

/**
 * A JSON value from a bundle with every object rebuilt without a
 * prototype: keys such as `__proto__` and `constructor` are data.
 */
function dataObject(value) {
  if (Array.isArray(value)) return value.map(dataObject);
  if (value === null || typeof value !== 'object') return value;
  const out = Object.create(null);
  for (const [key, inner] of Object.entries(value)) out[key] = dataObject(inner);
  return out;
}

/**
 * Filter keys and values cross to the engine with what would split a line
 * or a pair escaped (web/site/src/wire.rs `escape_field`, the same five).
 */
const ESCAPES = { '%': '%25', '=': '%3D', '\t': '%09', '\n': '%0A', '\r': '%0D' };
const escapeField = (text) => String(text).replace(/[%=\t\n\r]/g, (c) => ESCAPES[c]);
const unescapeField = (text) =>
  text.replace(/%(25|3[dD]|09|0[aA]|0[dD])/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));

/**
 * `url` if a click on it can only navigate: http(s), or relative (which
 * resolves to the page's own scheme). `javascript:`, `data:` and the like
 * give null, and the result is shown without a link.
 */
function safeHref(url) {
  if (typeof url !== 'string') return null;
  try {
    const { protocol } = new URL(url, 'https://relative.invalid/');
    return protocol === 'https:' || protocol === 'http:' ? url : null;
  } catch {
    return null;
  }
}

/** Excerpt text with its marked runs: [{ text, mark }]. */
function parseMarks(text) {
  const parts = [];
  for (const piece of text.split(MARK_START)) {
    const end = piece.indexOf(MARK_END);
    if (end >= 0) {
      parts.push({ text: piece.slice(0, end), mark: true });
      if (end + 1 < piece.length) parts.push({ text: piece.slice(end + 1), mark: false });
    } else if (piece) {
      parts.push({ text: piece, mark: false });
    }
  }
  return parts;
}

/** The wasm engine's calling convention (see web/site/src/lib.rs). */
class Engine {
  constructor(instance) {
    this.x = instance.exports;
  }

  put(bytes) {
    const ptr = this.x.qmd_alloc(bytes.length);
    new Uint8Array(this.x.memory.buffer, ptr, bytes.length).set(bytes);
    return [ptr, bytes.length];
  }

  text(value) {
    return this.put(encoder.encode(value));
  }

  /** Numbers as the engine reads a list of them: little-endian u32s. */
  u32s(numbers) {
    return this.put(new Uint8Array(new Uint32Array(numbers).buffer));
  }

  /** Calls an export; returns its output bytes (a copy). */
  bytes(name, ...args) {
    const code = this.x[name](...args);
    const out = new Uint8Array(this.x.memory.buffer, this.x.qmd_out_ptr(), this.x.qmd_out_len()).slice();
    if (code !== 0) throw new Error(decoder.decode(out));
    return out;
  }

  /** Calls an export; returns its output text. */
  call(name, ...args) {
    return decoder.decode(this.bytes(name, ...args));
  }
}

const lines = (text) => (text ? text.split('\n') : []);

export class QmdSearch {
  /**
   * @param {object} [options]
   * @param {string|URL} [options.bundle] the bundle folder (`…/qmd/`);
   *   default: where this module was loaded from
   * @param {typeof fetch} [options.fetch]
   */
  constructor({ bundle = HERE, fetch = globalThis.fetch.bind(globalThis) } = {}) {
    this.base = new URL(bundle, HERE);
    if (!this.base.pathname.endsWith('/')) this.base.pathname += '/';
    this.fetch = fetch;
    this.files = new Map(); // name → Promise of the file's bytes, fetched once
    this.ready = null;
  }

  /** A bundle file's bytes, inflated within its kind's limit. */
  async get(name) {
    const response = await this.respond(name);
    const limit = this.limits?.get(kindOf(name));
    return inflate(response, Math.min(limit ?? CEILING, CEILING), name);
  }

  async respond(name) {
    const response = await this.fetch(bundleUrl(this.base, name));
    if (!response.ok) throw new Error(`qmd search: ${name}: HTTP ${response.status}`);
    return response;
  }

  /** entry.json: what the bundle holds, checked before any name in it is used. */
  async readEntry() {
    const bytes = await readCapped((await this.respond('entry.json')).body, ENTRY_BYTES, 'entry.json');
    let entry;
    try {
      entry = JSON.parse(decoder.decode(bytes));
    } catch (err) {
      throw new Error(`qmd search: entry.json is not JSON (${err.message})`);
    }
    if (entry?.format !== 'qmd-site/1') throw new Error(`qmd search: unknown bundle format ${String(entry?.format).slice(0, 40)}`);
    const named = (key) => typeof entry[key] === 'string';
    if (!named('engine') || !named('meta') || !(entry.docs >= 0 && Number.isSafeInteger(entry.docs))) {
      throw new Error('qmd search: entry.json lacks its engine, meta or page count');
    }
    // Each kind's largest file; a limit that is not a size is no limit
    // (the ceiling stands).
    this.limits = new Map(
      Object.entries(entry.limits ?? {}).filter(([, n]) => Number.isSafeInteger(n) && n >= 0),
    );
    return entry;
  }

  /** Loads the entry, the engine and the meta (once; later calls wait for it). */
  init() {
    this.ready ??= (async () => {
      const entry = await this.readEntry();
      const [wasm, meta, semantic] = await Promise.all([
        this.get(entry.engine),
        this.get(entry.meta),
        entry.semantic ? this.get(entry.semantic) : null,
      ]);
      const { instance } = await WebAssembly.instantiate(wasm, {});
      const engine = new Engine(instance);
      engine.call('qmd_open', ...engine.put(meta));
      if (semantic) engine.call('qmd_semantic_open', ...engine.put(semantic));
      this.semantic = Boolean(semantic);
      this.entry = entry;
      this.engine = engine;
      this.docs = entry.docs;
    })();
    this.ready.catch(() => {
      this.ready = null; // a failed start is tried again on the next search
    });
    return this.ready;
  }

  /** Fetches and hands over a shard file once, however many searches need it. */
  load(name) {
    if (!this.files.has(name)) {
      const loading = this.get(name).then((bytes) => {
        this.engine.call('qmd_add_file', ...this.engine.text(name), ...this.engine.put(bytes));
      });
      loading.catch(() => this.files.delete(name));
      this.files.set(name, loading);
    }
    return this.files.get(name);
  }

  /**
   * The pages a metadata filter passes, as the keyword engine takes them
   * (little-endian u32s). The filter module and the metadata file are
   * fetched the first time: searches without a filter never load them.
   */
  async passing(filter) {
    this.filtering ??= (async () => {
      const metadata = this.engine.call('qmd_metadata_file');
      const [wasm, bytes] = await Promise.all([
        this.get(this.entry.filter),
        metadata ? this.get(metadata) : new Uint8Array(),
      ]);
      const { instance } = await WebAssembly.instantiate(wasm, {});
      const module = new Engine(instance);
      module.call('qmd_metadata_open', ...module.text(metadata), ...module.put(bytes), this.docs);
      return module;
    })();
    this.filtering.catch(() => {
      this.filtering = null; // tried again on the next filtered search
    });
    const module = await this.filtering;
    return module.bytes('qmd_metadata_passing', ...module.text(JSON.stringify(filter)));
  }

  /**
   * Searches (qmd's keyword syntax: words, "phrases", -negation).
   * @param {string} query
   * With a semantic tier in the bundle, keyword and semantic results are
   * fused (by score) unless `semantic: false`.
   * `filter` is a qmd.metadata filter tree, as the CLI's `--filter` takes
   * it (`{key, operator, value}` leaves under `and`/`or`/`not`): only
   * pages whose frontmatter passes are kept, before the limit.
   * @param {{limit?: number, filters?: Record<string, string|string[]>, filter?: object, semantic?: boolean}} [options]
   * @returns {Promise<{results: Array<{doc: number, score: number, data: () => Promise<object>}>}>}
   */
  async search(query, { limit = 10, filters = {}, filter = null, semantic = true } = {}) {
    await this.init();
    const e = this.engine;
    const allowed = filter ? await this.passing(filter) : null;
    await Promise.all(lines(e.call('qmd_needs', ...e.text(query))).map((name) => this.load(name)));
    const hybrid = semantic && this.semantic;
    // The vocabulary, then the query's token rows, then its clusters.
    for (let round = 0; hybrid && round < 4; round++) {
      const needs = lines(e.call('qmd_semantic_needs', ...e.text(query)));
      if (!needs.length) break;
      await Promise.all(needs.map((name) => this.load(name)));
    }
    const filterLines = (filters instanceof Map ? [...filters] : Object.entries(filters ?? {}))
      .flatMap(([key, values]) => [...[values].flat()].map((value) => `${escapeField(key)}=${escapeField(value)}`))
      .join('\n');
    const restricted = allowed ? 1 : 0;
    const out = e.call('qmd_search', ...e.text(query), limit, ...e.text(filterLines), ...e.put(allowed ?? new Uint8Array()), restricted, hybrid ? 1 : 0);
    const results = lines(out).map((line) => {
      const [fragment, score, doc] = line.split('\t');
      let data;
      return { doc: Number(doc), score: Number(score), data: () => (data ??= this.fragment(fragment, query)) };
    });
    return { results };
  }

  /** A result's page: url, title, highlighted excerpt and sub-results. */
  async fragment(name, query) {
    let page;
    try {
      page = dataObject(JSON.parse(decoder.decode(await this.get(name))));
    } catch (err) {
      throw err.message.startsWith('qmd search:') ? err : new Error(`qmd search: ${name} is not JSON (${err.message})`);
    }
    if (typeof page?.text !== 'string' || !Array.isArray(page.anchors)) throw new Error(`qmd search: ${name} is not a page`);
    page.anchors = page.anchors.filter((a) => a && Number.isSafeInteger(a.at) && a.at >= 0);
    const e = this.engine;
    const out = e.call('qmd_excerpts', ...e.text(query), ...e.text(page.text), ...e.u32s(page.anchors.map((a) => a.at)), 30, 3);
    const [main, ...sections] = lines(out).map((line) => {
      const tab = line.indexOf('\t');
      return { anchor: line.slice(0, tab), excerpt: parseMarks(line.slice(tab + 1)) };
    });
    return {
      url: page.url,
      title: String(page.title ?? ''),
      excerpt: main?.excerpt ?? [],
      filters: page.filters ?? Object.create(null),
      metadata: page.metadata ?? Object.create(null),
      sub_results: sections.flatMap(({ anchor, excerpt }) => {
        const a = page.anchors[Number(anchor)];
        if (!a) return [];
        return [{ url: `${page.url}#${encodeURIComponent(String(a.id))}`, title: String(a.text ?? ''), excerpt }];
      }),
    };
  }

  /**
   * Filter keys → values → page counts: of the whole site, or of `docs`
   * (the `doc` numbers of a search's results: facet counts). Objects
   * without a prototype: a key is data, whatever its name.
   * @param {number[]} [docs]
   */
  async filters(docs = null) {
    await this.init();
    const e = this.engine;
    const out = Object.create(null);
    for (const line of lines(e.call('qmd_filters', ...e.u32s(docs ?? []), docs ? 1 : 0))) {
      const [key, value, count] = line.split('\t').map((field, i) => (i < 2 ? unescapeField(field) : field));
      (out[key] ??= Object.create(null))[value] = Number(count);
    }
    return out;
  }
}

// ---------------------------------------------------------------------------
// <qmd-search>: a search box with results. Attributes: `bundle` (the qmd/
// folder, default this module's), `placeholder`, `page-size` (5), `filters`
// ("key:value, key:value"), `filter` (a qmd.metadata filter tree, JSON),
// `facets` (the filter keys offered as checkboxes with counts, "key, key";
// empty: every key), `modal` (a button, and Ctrl/Cmd-K, open the search in
// a dialog). Themed with CSS custom properties: --qmd-font, --qmd-text,
// --qmd-muted, --qmd-bg, --qmd-border, --qmd-accent, --qmd-mark,
// --qmd-radius, --qmd-width; the defaults follow the page's color-scheme
// (light and dark). Parts: trigger, dialog, input, facets, results, result.

const STYLE = `
:host { display: block; font: var(--qmd-font, inherit); color: var(--qmd-text, inherit); max-width: var(--qmd-width, 40rem); }
:host([modal]) { display: inline-block; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
input[type="search"] { box-sizing: border-box; width: 100%; font: inherit; color: inherit; padding: .5em .75em;
  background: var(--qmd-bg, Canvas); border: 1px solid var(--qmd-border, #8888); border-radius: var(--qmd-radius, .4em); }
input[type="search"]:focus { outline: 2px solid var(--qmd-accent, Highlight); outline-offset: 1px; }
.status { color: var(--qmd-muted, GrayText); font-size: .85em; margin: .4em 0; min-height: 1.2em; }
ul { list-style: none; margin: 0; padding: 0; }
li.result { padding: .5em .6em; border-radius: var(--qmd-radius, .4em); }
li.result[aria-selected="true"] { outline: 2px solid var(--qmd-accent, Highlight); }
a { color: var(--qmd-accent, LinkText); }
.title { font-weight: 600; }
.excerpt { margin: .2em 0 0; font-size: .9em; }
mark { background: var(--qmd-mark, light-dark(#ffe46b, #6b5800)); color: inherit; }
.sub { margin: .3em 0 0 1em; font-size: .85em; }
button { font: inherit; color: inherit; margin-top: .4em; background: var(--qmd-bg, Canvas);
  border: 1px solid var(--qmd-border, #8888); border-radius: var(--qmd-radius, .4em); padding: .3em .7em; cursor: pointer; }
.facets { display: flex; flex-wrap: wrap; gap: .3em 1.2em; margin: 0 0 .4em; font-size: .85em; }
.facets fieldset { border: 0; margin: 0; padding: 0; }
.facets legend { padding: 0; font-weight: 600; text-transform: capitalize; }
.facets label { margin-right: .7em; white-space: nowrap; }
.facets input { margin: 0 .3em 0 0; vertical-align: -.1em; accent-color: var(--qmd-accent, auto); }
.trigger { margin: 0; min-width: 12em; text-align: start; color: var(--qmd-muted, GrayText); }
kbd { float: right; margin-left: 1em; font: inherit; font-size: .85em; }
dialog { box-sizing: border-box; width: min(var(--qmd-width, 40rem), 100vw - 2rem); max-height: calc(100vh - 4rem);
  margin: 2rem auto auto; padding: 1rem; color: var(--qmd-text, CanvasText); background: var(--qmd-bg, Canvas);
  border: 1px solid var(--qmd-border, #8888); border-radius: var(--qmd-radius, .4em); }
dialog::backdrop { background: #0007; }
`;

/** How many values of a key the facets list (the most frequent). */
const FACET_VALUES = 12;

/** The engine's query limit in characters (core's `MAX_QUERY_CHARS`);
 * `maxlength` counts UTF-16 units, never fewer than characters. */
const MAX_QUERY_CHARS = 10000;

let instances = 0;

export class QmdSearchElement extends (globalThis.HTMLElement ?? class {}) {
  constructor() {
    super();
    const id = `qmd-${++instances}`;
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = `<style>${STYLE}</style>
      <button class="trigger" part="trigger" type="button" aria-haspopup="dialog" hidden>Search<kbd></kbd></button>
      <dialog part="dialog" aria-label="Search this site"></dialog>
      <div class="panel">
        <label class="sr" for="${id}-input">Search this site</label>
        <input id="${id}-input" part="input" type="search" autocomplete="off" spellcheck="false"
          role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="${id}-results"
          maxlength="${MAX_QUERY_CHARS}">
        <div class="status" role="status" aria-live="polite"></div>
        <div class="facets" part="facets" hidden></div>
        <ul id="${id}-results" part="results" role="listbox" aria-label="Search results"></ul>
        <button class="more" type="button" hidden>More results</button>
      </div>`;
    this.panel = root.querySelector('.panel');
    this.trigger = root.querySelector('.trigger');
    this.dialog = root.querySelector('dialog');
    this.input = root.querySelector('input');
    this.status = root.querySelector('.status');
    this.facetBox = root.querySelector('.facets');
    this.list = root.querySelector('ul');
    this.more = root.querySelector('.more');
    this.seq = 0;
    this.active = -1;
    this.selected = new Map(); // facet key → Set of checked values
    this.input.addEventListener('focus', () => this.api().init().catch((err) => this.fail(err)), { once: true });
    this.input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(this.input.value), 120);
    });
    this.input.addEventListener('keydown', (event) => this.key(event));
    this.more.addEventListener('click', () => this.showMore());
    this.trigger.addEventListener('click', () => this.open());
    // A click on the backdrop (outside the dialog's box) or on a result's
    // link closes the dialog.
    this.dialog.addEventListener('click', (event) => {
      const box = this.dialog.getBoundingClientRect();
      const outside = event.clientX < box.left || event.clientX > box.right || event.clientY < box.top || event.clientY > box.bottom;
      const link = event.composedPath().some((node) => node.localName === 'a');
      if ((event.target === this.dialog && outside) || link) this.dialog.close();
    });
    this.shortcut = (event) => {
      if (event.key?.toLowerCase() === 'k' && (event.ctrlKey || event.metaKey) && !event.defaultPrevented) {
        event.preventDefault(); // the first modal box on the page takes it
        this.open();
      }
    };
  }

  connectedCallback() {
    this.input.placeholder = this.getAttribute('placeholder') ?? 'Search';
    const modal = this.hasAttribute('modal');
    this.trigger.hidden = !modal;
    (modal ? this.dialog : this.shadowRoot).append(this.panel);
    if (modal) {
      const apple = /Mac|iPhone|iPad/.test(globalThis.navigator?.platform ?? '');
      this.trigger.querySelector('kbd').textContent = apple ? '⌘K' : 'Ctrl K';
      this.trigger.setAttribute('aria-keyshortcuts', apple ? 'Meta+K' : 'Control+K');
      document.addEventListener('keydown', this.shortcut);
    }
  }

  disconnectedCallback() {
    document.removeEventListener('keydown', this.shortcut);
  }

  /** Opens the modal search with the box focused. */
  open() {
    if (!this.dialog.open) this.dialog.showModal();
    this.input.focus();
  }

  api() {
    this.search ??= new QmdSearch({ bundle: this.getAttribute('bundle') ?? HERE });
    return this.search;
  }

  /** The `filters` attribute's key → values (the first `:` splits), and
   * the checked facets' unless `facets` is false: a Map, keyed by the
   * page's strings. */
  filters(facets = true) {
    const out = new Map();
    for (const pair of (this.getAttribute('filters') ?? '').split(',')) {
      const colon = pair.indexOf(':');
      const [key, value] = colon < 0 ? [] : [pair.slice(0, colon).trim(), pair.slice(colon + 1).trim()];
      if (key && value) out.set(key, [...(out.get(key) ?? []), value]);
    }
    for (const [key, values] of facets ? this.selected : []) {
      if (values.size) out.set(key, [...values]);
    }
    return out;
  }

  fail(err) {
    this.status.textContent = `Search is unavailable: ${err.message}`;
  }

  async run(query) {
    const seq = ++this.seq;
    if (!query.trim()) return this.clear();
    this.status.textContent = 'Searching…';
    try {
      const filter = this.hasAttribute('filter') ? JSON.parse(this.getAttribute('filter')) : null;
      const api = this.api();
      const search = (filters) => api.search(query, { limit: 100, filters, filter });
      let { results } = await search(this.filters());
      if (this.hasAttribute('facets')) {
        // Counts among the query's results before the checked facets narrow them.
        const checked = [...this.selected.values()].some((values) => values.size);
        const all = checked ? (await search(this.filters(false))).results : results;
        const counts = await api.filters(all.map((r) => r.doc));
        if (seq !== this.seq) return;
        this.showFacets(counts);
      }
      if (seq !== this.seq) return; // a newer query is on its way
      this.results = results;
      this.shown = 0;
      this.list.replaceChildren();
      this.active = -1;
      this.input.setAttribute('aria-expanded', String(results.length > 0));
      this.input.removeAttribute('aria-activedescendant');
      const count = results.length === 100 ? '100+' : String(results.length);
      this.status.textContent = results.length ? `${count} result${results.length === 1 ? '' : 's'}` : 'No results';
      await this.showMore(seq);
    } catch (err) {
      if (seq === this.seq) this.fail(err);
    }
  }

  /** The facet checkboxes: each offered key's values with their counts
   * among this query's results (checked ones always shown). */
  showFacets(counts) {
    const wanted = (this.getAttribute('facets') ?? '').split(',').map((k) => k.trim()).filter(Boolean);
    // A key the `filters` attribute fixes is not offered: checking another
    // of its values would widen what the site owner narrowed.
    const fixed = this.filters(false);
    const keys = (wanted.length ? wanted : Object.keys(counts).sort()).filter((k) => Object.hasOwn(counts, k) && !fixed.has(k));
    this.facetBox.replaceChildren();
    for (const key of keys) {
      const checked = this.selected.get(key) ?? new Set();
      const values = Object.entries(counts[key])
        .filter(([value, n]) => n > 0 || checked.has(value))
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, FACET_VALUES);
      if (!values.length) continue;
      const set = document.createElement('fieldset');
      const legend = document.createElement('legend');
      legend.textContent = key;
      set.append(legend);
      for (const [value, n] of values) {
        const label = document.createElement('label');
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.checked = checked.has(value);
        box.addEventListener('change', () => {
          if (!this.selected.has(key)) this.selected.set(key, new Set());
          this.selected.get(key)[box.checked ? 'add' : 'delete'](value);
          this.run(this.input.value);
        });
        label.append(box, ` ${value} (${n})`);
        set.append(label);
      }
      this.facetBox.append(set);
    }
    this.facetBox.hidden = !this.facetBox.children.length;
  }

  clear() {
    this.results = [];
    this.list.replaceChildren();
    this.status.textContent = '';
    this.more.hidden = true;
    this.facetBox.hidden = true;
    this.input.setAttribute('aria-expanded', 'false');
  }

  async showMore(seq = this.seq) {
    const size = Number(this.getAttribute('page-size') ?? 5) || 5;
    const page = this.results.slice(this.shown, this.shown + size);
    this.shown += page.length;
    const items = await Promise.all(page.map((r) => r.data()));
    if (seq !== this.seq) return;
    for (const data of items) this.list.append(this.item(data));
    this.more.hidden = this.shown >= this.results.length;
  }

  item(data) {
    const li = document.createElement('li');
    li.className = 'result';
    li.id = `${this.input.id}-r${this.list.children.length}`;
    li.setAttribute('role', 'option');
    li.setAttribute('part', 'result');
    li.setAttribute('aria-selected', 'false');
    const link = linkNode(data.url, data.title);
    link.classList.add('title');
    li.append(link, excerptNode('p', data.excerpt));
    // The page's own heading is the result's title already.
    const same = (a, b) => a.trim().toLowerCase() === b.trim().toLowerCase();
    for (const sub of data.sub_results.filter((sub) => !same(sub.title, data.title))) {
      const div = document.createElement('div');
      div.className = 'sub';
      div.append(linkNode(sub.url, sub.title), excerptNode('p', sub.excerpt));
      li.append(div);
    }
    return li;
  }

  key(event) {
    const items = [...this.list.children];
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      if (!items.length) return;
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      this.select(items, Math.max(0, Math.min(items.length - 1, this.active + step)));
    } else if (event.key === 'Enter' && this.active >= 0) {
      event.preventDefault();
      items[this.active]?.querySelector('a')?.click();
    } else if (event.key === 'Escape') {
      // Clears the query; in the dialog, Escape also closes it.
      this.input.value = '';
      this.seq++;
      this.clear();
    }
  }

  select(items, index) {
    items[this.active]?.setAttribute('aria-selected', 'false');
    this.active = index;
    items[index].setAttribute('aria-selected', 'true');
    this.input.setAttribute('aria-activedescendant', items[index].id);
    items[index].scrollIntoView?.({ block: 'nearest' });
  }
}

/** A result's title: a link when its URL can only navigate ([`safeHref`]),
 * else plain text. */
function linkNode(url, title) {
  const href = safeHref(url);
  const node = document.createElement(href === null ? 'span' : 'a');
  if (href !== null) node.href = href;
  node.textContent = title;
  return node;
}

/** An excerpt as DOM nodes: text and <mark>, never HTML strings. */
function excerptNode(tag, parts) {
  const node = document.createElement(tag);
  node.className = 'excerpt';
  for (const part of parts) {
    if (part.mark) {
      const mark = document.createElement('mark');
      mark.textContent = part.text;
      node.append(mark);
    } else {
      node.append(part.text);
    }
  }
  return node;
}

if (globalThis.customElements && !customElements.get('qmd-search')) {
  customElements.define('qmd-search', QmdSearchElement);
}
