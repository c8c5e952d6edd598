// The engine's thread: the wasm core, its OPFS index and (later) the
// models run here, off the page's main thread. Requests arrive as
// {id, method, args}; each gets one {id, result} or {id, error}, and long
// operations post {progress} messages meanwhile. Requests run one at a
// time, in order: the index allows a single writer and OPFS commits are
// asynchronous.

import init, { QmdIndex } from './pkg/qmd_web.js';

let index = null;
let queue = Promise.resolve();

const progress = (label) => (phase, done, total) =>
  postMessage({ progress: { label, phase, done, total } });

async function scanFolders(folders) {
  // folders: [{name, handle?, files?}] — a directory handle (File System
  // Access API or OPFS) or the File list of an <input webkitdirectory>.
  let files = 0;
  for (const folder of folders) {
    postMessage({ progress: { label: 'Scanning', phase: folder.name, done: 0, total: 0 } });
    files += folder.handle
      ? await index.scanFolder(folder.name, folder.handle)
      : index.setFiles(folder.name, folder.files);
  }
  return files;
}

const methods = {
  async open({ name }) {
    await init();
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
  keywordQuery: ({ query, options }) => index.keywordQuery(query, options),
  get: ({ file, options }) => index.get(file, options),
};

onmessage = ({ data: { id, method, args } }) => {
  queue = queue.then(async () => {
    try {
      if (!methods[method]) throw new Error(`unknown method ${method}`);
      if (!index && method !== 'open') throw new Error('the index is not open yet');
      postMessage({ id, result: await methods[method](args ?? {}) });
    } catch (e) {
      postMessage({ id, error: String(e?.message ?? e) });
    }
  });
};
