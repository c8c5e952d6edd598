// The helper Workers of CPU embedding (model-worker.js): one per core
// beyond the engine's own, at most 7 more. Each loads the model once;
// a step's texts are cut into one contiguous share per Worker.

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
  /** Starts helpers for `cores` and loads the model in each; helpers that
   * fail to load are dropped (the step then has fewer shares). */
  static async start(id, files, cores = navigator.hardwareConcurrency || 1) {
    const count = Math.max(0, Math.min(cores, MAX_WORKERS) - 1);
    const helpers = Array.from({ length: count }, () => new Helper());
    const loaded = await Promise.allSettled(helpers.map((h) => h.call('load', { id, files })));
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

  /** {vectors, tokens} of `texts`: the first share embedded by `own`
   * (the engine's Worker), the others by the helpers, side by side. */
  async embed(texts, own) {
    const size = Math.ceil(texts.length / this.workers);
    const shares = Array.from({ length: this.workers }, (_, i) => texts.slice(i * size, (i + 1) * size));
    const parts = await Promise.all(
      shares.map((share, i) => {
        if (share.length === 0) return { vectors: [], tokens: new Uint32Array() };
        return i === 0 ? own(share) : this.helpers[i - 1].call('embed', { texts: share });
      }),
    );
    return {
      vectors: parts.flatMap((p) => Array.from(p.vectors)),
      tokens: Uint32Array.from(parts.flatMap((p) => Array.from(p.tokens))),
    };
  }

  stop() {
    for (const h of this.helpers) h.worker.terminate();
    this.helpers = [];
  }
}
