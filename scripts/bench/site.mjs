// The static-site benchmark: this project's `qmd site build` bundle next to
// Pagefind's on the same HTML sites, measured in one run. Both sides run
// their own shipped JS (qmd-search.js, pagefind.js) in Node with a fetch
// that reads the files a static server would send and counts their bytes.
//
//   node scripts/bench/site.mjs <work dir> <data dir> <tldr dir> <qmd binary> <pagefind binary> <model dir>
//
// Sites (rendered here, one HTML page per document): BEIR SciFact and
// NFCorpus (every corpus document; nDCG@10 on the test queries), and the
// English tldr pages; and an MDN-sized site (14,000 pages: the tldr pages,
// then SciFact's, then NFCorpus's, in one site; Pagefind's maintainers set
// their bar for semantic search at MDN, about 14,000 pages). Reported per
// site: build time, bundle size, bytes of the first search (every file:
// JS, wasm, index, fragments of the 5 shown results) and of the next one
// (median and max over 20 queries), nDCG@10. BENCH_SITES=tldr,mdn-sized
// runs some of them.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [work, data, tldr, qmd, pagefindBin, model] = process.argv.slice(2);
const SHOWN = 5;

const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const page = (title, body) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>` +
  `<body><nav>Home</nav><main>${body}</main><footer>bench site</footer></body></html>\n`;

function writeFresh(dir, pages) {
  fs.rmSync(dir, { recursive: true, force: true });
  for (const [rel, html] of pages) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), html);
  }
}

const jsonl = (file) => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

function beirSite(name) {
  const dir = path.join(work, name);
  const corpus = jsonl(path.join(data, 'eval', name, 'corpus.jsonl'));
  const rendered = corpus.map((d) => [`d/${d._id}.html`, page(d.title || d._id, `<h1>${escape(d.title || '')}</h1><p>${escape(d.text)}</p>`)]);
  writeFresh(dir, rendered);
  const queries = new Map(jsonl(path.join(data, 'eval', name, 'queries.jsonl')).map((q) => [q._id, q.text]));
  const qrels = new Map();
  for (const line of fs.readFileSync(path.join(data, 'eval', name, 'qrels/test.tsv'), 'utf8').split('\n').slice(1)) {
    const [q, doc, score] = line.split('\t');
    if (!q || !(Number(score) > 0)) continue;
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q).set(doc, Number(score));
  }
  const tests = [...qrels.keys()].filter((q) => queries.has(q)).map((q) => ({ id: q, text: queries.get(q) }));
  return { name, dir, pages: corpus.length, rendered, tests, qrels, sample: tests.slice(0, 21).map((t) => t.text) };
}

/** tldr markdown → HTML: title, description, one heading per example. */
function tldrHtml(md) {
  const out = [];
  for (const line of md.split('\n')) {
    if (line.startsWith('# ')) out.push(`<h1>${escape(line.slice(2))}</h1>`);
    else if (line.startsWith('> ')) out.push(`<p>${escape(line.slice(2))}</p>`);
    else if (line.startsWith('- ')) out.push(`<h2 id="e${out.length}">${escape(line.slice(2))}</h2>`);
    else if (line.startsWith('`')) out.push(`<pre><code>${escape(line.replace(/^`|`$/g, ''))}</code></pre>`);
  }
  return out.join('\n');
}

function tldrSite() {
  const dir = path.join(work, 'tldr');
  const root = path.join(tldr, fs.readdirSync(tldr).find((d) => fs.existsSync(path.join(tldr, d, 'pages'))) ?? '');
  const pages = [];
  for (const platform of fs.readdirSync(path.join(root, 'pages'))) {
    for (const file of fs.readdirSync(path.join(root, 'pages', platform))) {
      if (!file.endsWith('.md')) continue;
      const md = fs.readFileSync(path.join(root, 'pages', platform, file), 'utf8');
      pages.push([`${platform}/${file.replace(/\.md$/, '.html')}`, page(file.replace(/\.md$/, ''), tldrHtml(md))]);
    }
  }
  writeFresh(dir, pages);
  const sample = [
    'extract archive', 'list files', 'git commit', 'docker container', 'compress', 'network interface', 'ssh key',
    'disk usage', 'kill process', 'search text in files', 'python package', 'download file', 'change permissions',
    'create user', 'convert image', 'show calendar', 'http request', 'mount drive', 'video', 'environment variable',
    'rename files',
  ];
  return { name: 'tldr', dir, pages: pages.length, rendered: pages, tests: [], sample };
}

/** One site of `size` pages from `parts` (each in its own folder), and
 * their sample queries in turn. */
function mixedSite(name, size, parts) {
  const dir = path.join(work, name);
  const pages = parts.flatMap((part) => part.rendered.map(([rel, html]) => [`${part.name}/${rel}`, html])).slice(0, size);
  writeFresh(dir, pages);
  const sample = parts[0].sample.flatMap((q, i) => parts.map((part) => part.sample[i])).filter(Boolean).slice(0, 21);
  return { name, dir, pages: pages.length, rendered: pages, tests: [], sample };
}

function du(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    const stat = fs.statSync(path.join(dir, entry));
    if (stat.isFile()) total += stat.size;
  }
  return total;
}

function timed(cmd, args) {
  const start = process.hrtime.bigint();
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** fetch over local files, counting every body byte it serves. */
function meter() {
  const m = { bytes: 0, files: [] };
  m.fetch = async (url) => {
    const file = fileURLToPath(new URL(url));
    if (!fs.existsSync(file)) return new Response('', { status: 404 });
    const body = fs.readFileSync(file);
    m.bytes += body.length;
    m.files.push(path.basename(file));
    return new Response(body);
  };
  return m;
}

/** This project's widget API, fresh per first search. */
async function qmdSide(site, bundle = path.join(site.dir, 'qmd')) {
  const moduleBytes = fs.statSync(path.join(bundle, 'qmd-search.js')).size;
  const { QmdSearch } = await import(pathToFileURL(path.join(bundle, 'qmd-search.js')));
  return {
    moduleBytes,
    open() {
      const m = meter();
      const api = new QmdSearch({ bundle: pathToFileURL(`${bundle}/`), fetch: m.fetch });
      return {
        m,
        async search(q, shown = SHOWN, limit = 10) {
          const { results } = await api.search(q, { limit });
          const urls = [];
          for (const [i, r] of results.entries()) {
            if (i < shown) urls.push((await r.data()).url);
            else urls.push(null);
          }
          return { results, urls };
        },
        async ids(q) {
          const { results } = await api.search(q, { limit: 10 });
          return Promise.all(results.map(async (r) => (await r.data()).url));
        },
      };
    },
  };
}

/** Pagefind's own pagefind.js, a fresh module instance per first search. */
async function pagefindSide(site) {
  const bundle = path.join(site.dir, 'pagefind');
  const js = path.join(bundle, 'pagefind.js');
  const moduleBytes = fs.statSync(js).size;
  let n = 0;
  return {
    moduleBytes,
    workerBytes: fs.existsSync(path.join(bundle, 'pagefind-worker.js')) ? fs.statSync(path.join(bundle, 'pagefind-worker.js')).size : 0,
    open() {
      const m = meter();
      let pf;
      const load = async () => {
        if (pf) return pf;
        globalThis.fetch = m.fetch; // pagefind.js fetches through the global
        pf = await import(`${pathToFileURL(js)}?instance=${++n}`);
        await pf.options({ basePath: `${pathToFileURL(bundle)}/` });
        await pf.init();
        return pf;
      };
      return {
        m,
        async search(q, shown = SHOWN) {
          const p = await load();
          globalThis.fetch = m.fetch;
          const { results } = await p.search(q);
          const urls = [];
          for (const r of results.slice(0, shown)) urls.push((await r.data()).url);
          return { results, urls };
        },
        async ids(q) {
          const p = await load();
          globalThis.fetch = m.fetch;
          const { results } = await p.search(q);
          return Promise.all(results.slice(0, 10).map(async (r) => (await r.data()).url));
        },
      };
    },
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

/** Bytes of a first search (fresh page) and of the search after it. */
async function bytes(side, queries) {
  const first = [];
  const next = [];
  for (let i = 0; i + 1 < queries.length; i++) {
    const session = side.open();
    await session.search(queries[i]);
    first.push(session.m.bytes + side.moduleBytes);
    const before = session.m.bytes;
    await session.search(queries[i + 1]);
    next.push(session.m.bytes - before);
  }
  return { first, next };
}

/** nDCG@10 (linear gains, as trec_eval and BEIR) over the test queries. */
async function ndcg(side, site) {
  const session = side.open();
  let total = 0;
  let empty = 0;
  for (const { id, text } of site.tests) {
    const urls = await session.ids(text);
    if (!urls.length) empty++;
    const rels = site.qrels.get(id);
    const docOf = (u) => decodeURIComponent(u.split('/').pop().replace(/\.html$/, ''));
    const dcg = urls.slice(0, 10).reduce((s, u, i) => s + (rels.get(docOf(u)) ?? 0) / Math.log2(i + 2), 0);
    const ideal = [...rels.values()].sort((a, b) => b - a).slice(0, 10).reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
    total += ideal ? dcg / ideal : 0;
  }
  return { ndcg: total / site.tests.length, empty };
}

const kb = (b) => `${(b / 1024).toFixed(0)} KB`;
const row = (cells) => `| ${cells.join(' | ')} |`;

const base = [beirSite('scifact'), beirSite('nfcorpus'), tldrSite()];
const mdnSized = mixedSite('mdn-sized', 14000, [base[2], base[0], base[1]]);
const wanted = process.env.BENCH_SITES?.split(',');
const sites = [...base, mdnSized].filter((site) => !wanted || wanted.includes(site.name));
const lines = [
  '# Static-site search: qmd site vs Pagefind 1.6.0',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} by \`scripts/bench-site.sh\`, both sides in one run on this machine.`,
  `Bytes are file bodies as a static server sends them (both bundles store their index gzip-compressed);`,
  `a first search counts every file a fresh page fetches (JS module, wasm, entry/meta, index shards, and the`,
  `fragments of the ${SHOWN} shown results); the next search counts what the same page fetches for the following query.`,
  '',
  row(['site', 'pages', 'side', 'build', 'bundle', 'first search median / max', 'next search median / max', 'nDCG@10 (test)', 'queries with no result']),
  row(Array(9).fill('---')),
];
for (const site of sites) {
  const qmdTime = timed(qmd, ['site', 'build', site.dir, '--out', site.dir]);
  const pfTime = timed(pagefindBin, ['--site', site.dir, '--output-subdir', 'pagefind', '--silent']);
  // The semantic tier's bundle beside it (keyword + semantic, fused).
  const semOut = path.join(site.dir, 'semantic');
  const semTime = timed(qmd, ['site', 'build', site.dir, '--out', semOut, '--semantic', '--model', model]);
  const sides = [
    ['qmd site, keyword', await qmdSide(site), qmdTime, du(path.join(site.dir, 'qmd'))],
    ['qmd site, keyword + semantic', await qmdSide(site, path.join(semOut, 'qmd')), semTime, du(path.join(semOut, 'qmd'))],
    ['Pagefind', await pagefindSide(site), pfTime, du(path.join(site.dir, 'pagefind'))],
  ];
  for (const [label, side, time, size] of sides) {
    const { first, next } = await bytes(side, site.sample);
    const quality = site.tests.length ? await ndcg(side, site) : null;
    const worker = side.workerBytes ? ` (+${kb(side.workerBytes)} worker)` : '';
    lines.push(
      row([
        site.name, String(site.pages), label, `${time.toFixed(1)} s`, kb(size),
        `${kb(median(first))} / ${kb(Math.max(...first))}${worker}`, `${kb(median(next))} / ${kb(Math.max(...next))}`,
        quality ? quality.ndcg.toFixed(3) : '–', quality ? `${quality.empty} of ${site.tests.length}` : '–',
      ]),
    );
    console.error(lines.at(-1));
  }
}
console.log(lines.join('\n'));
