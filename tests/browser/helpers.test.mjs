// How the app cuts a step's texts between its embedding Workers
// (www/helpers.js), checked in Node: the split is plain JavaScript.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { balancedShares } from '../../www/helpers.js';

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
