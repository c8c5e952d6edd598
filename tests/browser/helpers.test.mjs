// How the app cuts a step's texts between its embedding Workers
// (www/helpers.js) and picks its engine build (www/engine.js), checked in
// Node: both are plain JavaScript.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { balancedShares } from '../../www/helpers.js';
import { engineBuild, loadEngine, probe } from '../../www/engine.js';

test('shares cover every text once, each in ascending order', () => {
  const texts = Array.from({ length: 37 }, (_, i) => 'x'.repeat(1 + ((i * 53) % 400)));
  for (const workers of [1, 2, 3, 8]) {
    const shares = balancedShares(texts, workers);
    assert.equal(shares.length, workers);
    assert.deepEqual(shares.flat().sort((a, b) => a - b), texts.map((_, i) => i));
    for (const share of shares) assert.deepEqual(share, [...share].sort((a, b) => a - b));
  }
});

test('long and short texts are spread so no Worker gets much more work', () => {
  // Contiguous halves of this step would give one Worker every long page.
  const texts = [...Array(16).fill('s'.repeat(100)), ...Array(16).fill('l'.repeat(900))];
  const load = (share) => share.reduce((sum, i) => sum + texts[i].length, 0);
  const [a, b] = balancedShares(texts, 2).map(load);
  assert.equal(a, b);
  const uneven = ['a'.repeat(1000), 'b'.repeat(10), 'c'.repeat(10)];
  assert.deepEqual(balancedShares(uneven, 2), [[0], [1, 2]]);
});

test('more Workers than texts leaves the extra shares empty', () => {
  const shares = balancedShares(['one', 'two'], 4);
  assert.equal(shares.filter((s) => s.length === 0).length, 2);
  assert.deepEqual(balancedShares([], 2), [[], []]);
});

test('an engine without relaxed SIMD gets the simd128 build; ?simd= picks one', () => {
  assert.equal(engineBuild('', false), 'simd128');
  assert.equal(engineBuild('', true), 'relaxed');
  assert.equal(engineBuild('?device=cpu&simd=simd128', true), 'simd128');
  assert.equal(engineBuild('?simd=relaxed', false), 'relaxed');
  assert.equal(engineBuild('?simd=avx512', false), 'simd128', 'an unknown build name is the probe\'s choice');
  assert.equal(engineBuild('?simd=avx512', true), 'relaxed');
});

test('a cross-origin isolated page with cores to spare gets the threaded build, where relaxed SIMD runs', () => {
  assert.equal(engineBuild('', true, true), 'threads');
  assert.equal(engineBuild('', true, false), 'relaxed', 'no shared memory, no threads');
  assert.equal(engineBuild('', false, true), 'simd128', 'the threaded build needs relaxed SIMD as well');
  assert.equal(engineBuild('?simd=relaxed', true, true), 'relaxed');
  assert.equal(engineBuild('?simd=threads', false, false), 'threads', 'asked for by name (loadEngine then says why it cannot)');
  // Node is not a cross-origin isolated page: the default there is no threads.
  assert.equal(engineBuild('', true), 'relaxed');
});

test('loadEngine refuses the threaded build outside a cross-origin isolated page, naming the headers', async () => {
  await assert.rejects(loadEngine('threads'), /cross-origin isolated.*Cross-Origin-Opener-Policy: same-origin.*Cross-Origin-Embedder-Policy: require-corp/);
});

test('the probe validates exactly where relaxed SIMD does', () => {
  // V8 shipped relaxed SIMD in 11.4 (Chrome 114); Node 20's 11.3 has it
  // behind a flag. Without it the probe is refused, with it accepted; one
  // byte off (an opcode no engine has) it is refused either way.
  const [major, minor] = process.versions.v8.split('.').map(Number);
  const shipped = major > 11 || (major === 11 && minor >= 4);
  const bytes = JSON.stringify([...probe()]);
  const validates = (flags, change = '') =>
    execFileSync(process.execPath, [...flags, '--input-type=module', '-e', `
      const b = new Uint8Array(${bytes}); ${change}
      process.stdout.write(String(WebAssembly.validate(b)));`], { encoding: 'utf8' }) === 'true';
  const enabled = shipped ? [] : ['--experimental-wasm-relaxed-simd'];
  assert.equal(validates(enabled), true);
  if (!shipped) assert.equal(validates([]), false);
  assert.equal(validates(enabled, 'b[b.length - 2] = 0x7f;'), false);
});
