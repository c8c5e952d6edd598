// Folder handles by collection name, kept in IndexedDB so that "Update"
// after a reload re-scans the same folders. (A FileSystemDirectoryHandle
// survives structured cloning; its read permission may need renewing.)

const DB = 'qmd-folders';
const STORE = 'handles';

function database() {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE);
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}

async function request(mode, work) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const req = work(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(req.result);
    tx.onerror = () => reject(tx.error);
  });
}

export const folderStore = {
  get: (name) => request('readonly', (s) => s.get(name)),
  put: (name, handle) => request('readwrite', (s) => s.put(handle, name)),
  delete: (name) => request('readwrite', (s) => s.delete(name)),
  names: () => request('readonly', (s) => s.getAllKeys()),
};
