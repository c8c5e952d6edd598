// Which build of the engine this browser runs. Three are built
// (scripts/build-web.sh): pkg-relaxed/ uses relaxed SIMD's 8-bit dot
// product for the quantized models' products (Chrome and Edge 114+,
// Firefox 146+), pkg/ only simd128 (every browser since 2021, Safari
// included), and pkg-threads/ is pkg-relaxed/ with threads: wasm atomics
// on a memory shared by a pool of Workers, so that one model pass or one
// decoded token runs on every core. A shared memory needs a cross-origin
// isolated page (COOP and COEP headers, which `qmd web` sends), and the
// threaded build has no WebGPU (wgpu's browser types cannot cross
// threads): the engine's Worker takes it only where the models will run on
// the CPU, and pkg-relaxed/ otherwise (worker.js).
// A module with an instruction the engine lacks does not
// compile at all, so the choice is made before loading, by validating a
// probe: one function using i32x4.relaxed_dot_i8x16_i7x16_add_s.
// `?simd=simd128` (or `relaxed`, or `threads`) on the page's URL forces one
// (tests and benchmarks compare them). The page decides (app.js) and passes
// the build to the engine Worker, which passes it to its helpers: a
// Worker's own URL is no place for it (served from the service worker's
// cache, a Worker's location is the cached response's, without the query).

export function probe() {
  const zeros = new Array(16).fill(0);
  const v128Const = [0xfd, 0x0c, ...zeros];
  // () -> v128 { i32x4.relaxed_dot_i8x16_i7x16_add_s(0, 0, 0) }
  const body = [0x00, ...v128Const, ...v128Const, ...v128Const, 0xfd, 0x93, 0x02, 0x0b];
  const code = [0x01, body.length, ...body];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
    0x03, 0x02, 0x01, 0x00, // one function of that type
    0x0a, code.length, ...code,
  ]);
}

/** Whether this engine runs relaxed SIMD. */
export const relaxedSimd = WebAssembly.validate(probe());

/** Whether this page may share memory between Workers, and has cores to
 * share it with. */
export const threadsPossible = () =>
  globalThis.crossOriginIsolated === true && (globalThis.navigator?.hardwareConcurrency ?? 1) > 1;

/** Each build's glue, by the name `?simd=` and the Workers use. */
const FOLDERS = { threads: './pkg-threads/qmd_web.js', relaxed: './pkg-relaxed/qmd_web.js', simd128: './pkg/qmd_web.js' };

/** The build to load: `threads`, `relaxed` or `simd128`, from `?simd=` in
 * `search`, else by whether the engine runs relaxed SIMD and the page may
 * run threads. */
export function engineBuild(search, relaxed = relaxedSimd, threads = threadsPossible()) {
  const asked = new URLSearchParams(search).get('simd');
  if (Object.hasOwn(FOLDERS, asked ?? '')) return asked;
  if (!relaxed) return 'simd128';
  return threads ? 'threads' : 'relaxed';
}

/** The engine's bindings for `build` (engine.js's choice when not given),
 * initialised; each Worker loads its own. The threaded build's pool is
 * started by its caller (`startThreads`). */
export async function loadEngine(build = engineBuild('')) {
  if (build === 'threads' && !threadsPossible()) {
    throw new Error(
      'the threaded engine needs a cross-origin isolated page (Cross-Origin-Opener-Policy: same-origin and ' +
        'Cross-Origin-Embedder-Policy: require-corp) and more than one core',
    );
  }
  const pkg = await import(Object.hasOwn(FOLDERS, build) ? FOLDERS[build] : FOLDERS.simd128);
  await pkg.default();
  return pkg;
}

/** Most Workers in the threaded build's pool: each is a whole JavaScript
 * realm, and a decoded token's steps are too small to share among more. */
export const MAX_THREADS = 8;

/** Starts the threaded build's pool: one Worker per core (up to
 * MAX_THREADS), sharing the module's memory. A no-op for the other
 * builds. Returns the pool's size. */
export async function startThreads(pkg) {
  if (!pkg.initThreadPool) return 1;
  const threads = Math.min(navigator.hardwareConcurrency || 1, MAX_THREADS);
  await pkg.initThreadPool(threads);
  return threads;
}
