// Which build of the engine this browser runs. Two are built
// (scripts/build-web.sh): pkg-relaxed/ uses relaxed SIMD's 8-bit dot
// product for the quantized models' products (Chrome and Edge 114+,
// Firefox 146+), pkg/ only simd128 (every browser since 2021, Safari
// included). A module with an instruction the engine lacks does not
// compile at all, so the choice is made before loading, by validating a
// probe: one function using i32x4.relaxed_dot_i8x16_i7x16_add_s.
// `?simd=simd128` (or `relaxed`) on the page's URL forces one (tests and
// benchmarks compare the two). The page decides (app.js) and passes the
// build to the engine Worker, which passes it to its helpers: a Worker's
// own URL is no place for it (served from the service worker's cache, a
// Worker's location is the cached response's, without the query).

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

/** The build to load: `relaxed` or `simd128`, from `?simd=` in `search`,
 * else by whether the engine runs relaxed SIMD. */
export function engineBuild(search, relaxed = relaxedSimd) {
  const asked = new URLSearchParams(search).get('simd');
  if (asked === 'simd128' || asked === 'relaxed') return asked;
  return relaxed ? 'relaxed' : 'simd128';
}

/** The engine's bindings for `build` (engine.js's choice when not given),
 * initialised; each Worker loads its own. */
export async function loadEngine(build = engineBuild('')) {
  const pkg = await import(build === 'relaxed' ? './pkg-relaxed/qmd_web.js' : './pkg/qmd_web.js');
  await pkg.default();
  return pkg;
}
