// Query terms marked in snippets and document lines, built as DOM nodes
// (text nodes and <mark>), never as HTML strings.

/** Terms of a query worth marking: words of 2+ characters, without
 * qmd's query syntax (quotes, -negation, lex:/vec: prefixes). */
export function queryTerms(query) {
  return [
    ...new Set(
      query
        .replace(/^(lex|vec|hyde|intent):/gim, ' ')
        .split(/[\s"]+/)
        .filter((t) => t && !t.startsWith('-'))
        .map((t) => t.replace(/[^\p{L}\p{N}_'-]/gu, '').toLowerCase())
        .filter((t) => t.length >= 2),
    ),
  ];
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `text` as nodes, with each word that starts with a term wrapped in
 * <mark> (up to the term's length: keyword search matches prefixes). */
export function highlight(text, terms) {
  if (!terms.length) return [document.createTextNode(text)];
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(${terms.map(escape).join('|')})`, 'giu');
  return text.split(pattern).map((part, i) => {
    if (i % 2 === 0) return document.createTextNode(part);
    const mark = document.createElement('mark');
    mark.textContent = part;
    return mark;
  });
}
