// Rankings of the page against the native CLI's, where arithmetic may
// decide an order: the page's wasm kernels and the CLI's native ones
// (whose summation order changes with the CPU: AVX-512, AVX2, NEON) round
// differently in the last bits, and the page's relaxed build rounds
// Q8_0 passes' activations to 7 bits where native rounds to 8.

import assert from 'node:assert/strict';

/** The page's top documents (`result`, the page's hybrid answer with its
 * lists and contributions) are the CLI's (`fromCli`, docids in order), but
 * where a document is in a near-tie: its score within `tie` of another
 * hit's in one of the page's vector lists, or in their rerank scores.
 * Such a tie may go either way on another CPU, and one swap in a list
 * moves the fused order and the blend, so a tied document may move past
 * a third that it is not tied with. Returns whether the orders are equal. */
export function assertSameTop(query, result, fromCli, tie) {
  const name = JSON.stringify(query);
  const web = result.hits.slice(0, fromCli.length).map((h) => `#${h.hit.docid}`);
  assert.equal(web.length, fromCli.length, `query ${name}: ${web.length} hits, the CLI ${fromCli.length}`);
  const placed = new Set(web.flatMap((doc, i) => (doc === fromCli[i] ? [] : [doc, fromCli[i]])));
  if (!placed.size) return true;
  const scores = new Map(result.hits.map((h) => [`#${h.hit.docid}`, scoresOf(result, h)]));
  for (const doc of placed) {
    const mine = scores.get(doc);
    assert.ok(mine, `query ${name}: the CLI's ${doc} is not among the page's ${result.hits.length} hits`);
    const gaps = [...scores]
      .filter(([other]) => other !== doc)
      .flatMap(([, theirs]) => [...mine].filter(([key]) => theirs.has(key)).map(([key, s]) => Math.abs(s - theirs.get(key))));
    const closest = Math.min(...gaps);
    assert.ok(
      closest <= tie,
      `query ${name}: the page ranks ${JSON.stringify(web)}, the CLI ${JSON.stringify(fromCli)}; ${doc} is ${closest.toFixed(4)} from its nearest rival`,
    );
  }
  console.log(`query ${name}: near-ties ordered the other way (${[...placed].join(', ')})`);
  return false;
}

/** A hit's scores that arithmetic can tie: its backend score in each
 * vector list, and its rerank score. */
function scoresOf(result, hit) {
  const scores = new Map();
  for (const c of hit.contributions ?? []) if (result.lists[c.list]?.source === 'vec') scores.set(`list ${c.list}`, c.backend_score);
  if (typeof hit.rerank_score === 'number') scores.set('rerank', hit.rerank_score);
  return scores;
}
