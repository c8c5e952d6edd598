// qmd 2.8.3's own chunker on a list of files: for each, the chunks of
// `chunkDocumentAsync` (qmd's char sizes) under `auto` and `regex`, as
// [start, length] pairs in UTF-16 code units, one JSON object a line.
//
//   node qmd-chunks.mjs NODE_MODULES LIST > chunks.jsonl
//
// LIST holds one path a line; each file is read as UTF-8.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, list] = process.argv.slice(2);
const store = await import(pathToFileURL(path.join(nodeModules, '@tobilu/qmd/dist/store.js')).href);

const spans = (chunks) => chunks.map((c) => [c.pos, c.text.length]);
for (const file of fs.readFileSync(list, 'utf8').split('\n').filter(Boolean)) {
  const content = fs.readFileSync(file, 'utf8');
  const auto = await store.chunkDocumentAsync(content, undefined, undefined, undefined, file, 'auto');
  const regex = await store.chunkDocumentAsync(content, undefined, undefined, undefined, file, 'regex');
  process.stdout.write(JSON.stringify({ file, auto: spans(auto), regex: spans(regex) }) + '\n');
}
