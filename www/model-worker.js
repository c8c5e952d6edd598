// A helper Worker for bulk embedding on the CPU backend: the wasm CPU
// backend runs on one thread, so the engine's Worker hands each step's
// texts out to one helper per further core. It holds only the model.
// Requests: {id, method: 'load', args: {id, files, build}} (build: the
// engine build, engine.js) and
// {id, method: 'embed', args: {texts}}; replies {id, result} or {id, error}.

import { loadEngine } from './engine.js';

let model = null;

onmessage = async ({ data: { id, method, args } }) => {
  try {
    if (method === 'load') {
      const { ModelWorker } = await loadEngine(args.build);
      model = await ModelWorker.load(args.id, args.files, 'cpu');
      postMessage({ id, result: true });
    } else if (method === 'embed') {
      if (!model) throw new Error('no model loaded in this helper');
      postMessage({ id, result: await model.embed(args.texts) });
    } else {
      throw new Error(`unknown method ${method}`);
    }
  } catch (e) {
    postMessage({ id, error: String(e?.message ?? e) });
  }
};
