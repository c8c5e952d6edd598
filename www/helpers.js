// The helper Workers of CPU embedding (model-worker.js): one per core
// beyond the engine's own, at most 7 more. Each loads the model once;
// a step's texts are cut into one share of about equal work per Worker.

const MAX_WORKERS = 8;

class Helper {
  constructor() {
    this.worker = new Worker(new URL('./model-worker.js', import.meta.url), { type: 'module' });
    this.calls = new Map();
    this.next = 0;
    this.worker.onmessage = ({ data: { id, result, error } }) => {
      const call = this.calls.get(id);
      this.calls.delete(id);
      if (error !== undefined) call.reject(new Error(error));
      else call.resolve(result);
    };
  }

  call(method, args) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.worker.postMessage({ id, method, args });
    });
  }
}

export class HelperPool {
  /** Starts helpers for `cores` and loads the model in each, on engine
   * build `build` (engine.js: the engine Worker's); helpers that fail to
   * load are dropped (the step then has fewer shares). */
  static async start(id, files, cores = navigator.hardwareConcurrency || 1, build = undefined) {
    const count = Math.max(0, Math.min(cores, MAX_WORKERS) - 1);
    const helpers = Array.from({ length: count }, () => new Helper());
    const loaded = await Promise.allSettled(helpers.map((h) => h.call('load', { id, files, build })));
    const ready = helpers.filter((h, i) => {
      if (loaded[i].status === 'fulfilled') return true;
      console.warn(`qmd: an embedding helper failed to load: ${loaded[i].reason?.message}`);
      h.worker.terminate();
      return false;
    });
    return new HelperPool(ready);
  }

  constructor(helpers) {
    this.helpers = helpers;
  }

  /** Workers embedding a step: the helpers and the engine's own. */
  get workers() {
    return this.helpers.length + 1;
  }

  /** {vectors, tokens} of `texts`, in their order: shares of about
   * equal work (see `balancedShares`), the first embedded by `own` (the
   * engine's Worker), the others by the helpers, side by side. */
  async embed(texts, own) {
    const shares = balancedShares(texts, this.workers);
    const parts = await Promise.all(
      shares.map((share, i) => {
        if (share.length === 0) return { vectors: [], tokens: new Uint32Array() };
        const mine = share.map((t) => texts[t]);
        return i === 0 ? own(mine) : this.helpers[i - 1].call('embed', { texts: mine });
      }),
    );
    const vectors = new Array(texts.length);
    const tokens = new Uint32Array(texts.length);
    shares.forEach((share, i) =>
      share.forEach((t, j) => {
        vectors[t] = parts[i].vectors[j];
        tokens[t] = parts[i].tokens[j];
      }),
    );
    return { vectors, tokens };
  }

  stop() {
    for (const h of this.helpers) h.worker.terminate();
    this.helpers = [];
  }
}

/** Text indices cut into `workers` shares of about equal work: longest
 * first, each to the share with the least so far (a text's length stands
 * for its tokens). A step waits for its slowest share, and contiguous
 * slices of a step left one Worker idle while the other finished the long
 * pages. Each share lists its indices in ascending order. */
export function balancedShares(texts, workers) {
  const shares = Array.from({ length: Math.max(1, workers) }, () => ({ load: 0, indices: [] }));
  const longestFirst = texts.map((_, i) => i).sort((a, b) => texts[b].length - texts[a].length);
  for (const i of longestFirst) {
    const least = shares.reduce((a, b) => (b.load < a.load ? b : a));
    least.indices.push(i);
    least.load += texts[i].length;
  }
  return shares.map((s) => s.indices.sort((a, b) => a - b));
}
