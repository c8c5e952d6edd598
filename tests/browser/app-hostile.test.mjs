// The browser app over files and configs it must not trust (robustness
// class 13): frontmatter keys named like an object's machinery arrive as
// plain own keys, the worker runs only its own methods, and an index's name
// is one plain OPFS name.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { addStagedFolder, isolatedEnv, launch, openApp, serveApp, stageFolder } from './harness.mjs';

let server;
let browser;

const NOTES = {
  'proto.md': '---\nqmd:\n  metadata:\n    __proto__: [admin, published]\n    constructor: builder\n    kind: walrus\n---\n# Proto\n\nA walrus note with hostile metadata keys.\n',
  'plain.md': '# Plain\n\nAn ordinary note.\n',
};

before(async () => {
  const { env } = isolatedEnv();
  server = await serveApp(env);
  browser = await launch();
  await openApp(browser.page, server.url);
  await stageFolder(browser.page, 'hostile', NOTES);
  await addStagedFolder(browser.page, 'hostile', 'hostile');
});

after(async () => {
  await browser?.close();
  server?.stop();
});

test('metadata keys from a file are own keys of a plain object, never its prototype', async () => {
  const seen = await browser.page.evaluate(async () => {
    const [hit] = await window.qmd.search('walrus hostile');
    const metadata = hit.metadata;
    return {
      path: hit.path,
      ownKeys: Object.keys(metadata).sort(),
      prototypeIsObjects: Object.getPrototypeOf(metadata) === Object.prototype,
      proto: Object.getOwnPropertyDescriptor(metadata, '__proto__')?.value,
      lengthLeaked: metadata.length,
      polluted: {}.admin !== undefined || Object.prototype.kind !== undefined,
    };
  });
  assert.equal(seen.path, 'proto.md');
  assert.deepEqual(seen.ownKeys, ['__proto__', 'constructor', 'kind']);
  assert.ok(seen.prototypeIsObjects, 'the prototype is Object.prototype');
  assert.deepEqual(seen.proto, ['admin', 'published']);
  assert.equal(seen.lengthLeaked, undefined);
  assert.equal(seen.polluted, false);
});

test('the worker runs only its own methods', async () => {
  for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const error = await browser.page.evaluate((m) => window.qmd.call(m, {}).then(() => null, (e) => String(e?.message ?? e)), method);
    assert.match(error ?? 'ran', /unknown method/, method);
  }
});

test('an index name is one plain OPFS name, refused with the reason otherwise', async () => {
  for (const name of ['..', '.', 'a/b', 'tab\there']) {
    const error = await browser.page.evaluate((n) => window.qmd.call('open', { name: n }).then(() => null, (e) => String(e?.message ?? e)), name);
    assert.match(error ?? 'opened', /^Invalid index name/, JSON.stringify(name));
  }
  // The index open before is still the one in use.
  const status = await browser.page.evaluate(() => window.qmd.status());
  assert.equal(status.total_documents, 2);
});
