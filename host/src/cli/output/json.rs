//! `json`: hand-written so numbers and key order are JavaScript's
//! (`JSON.stringify` of qmd's objects), byte for byte.

use super::*;

pub(super) fn search_json(hits: &[SearchHit], view: &SearchView) -> String {
    let objects: Vec<Vec<(&str, String)>> = hits.iter().map(|hit| search_json_object(hit, view)).collect();
    json_array(&objects) + "\n"
}

pub(super) fn search_json_object(hit: &SearchHit, view: &SearchView) -> Vec<(&'static str, String)> {
    let (ident, show_docid) = search_ident(hit, view);
    let mut fields = Vec::new();
    if show_docid && !hit.docid.is_empty() {
        fields.push(("docid", json_str(&format!("#{}", hit.docid))));
    }
    fields.push(("score", js_number(js_round(hit.score * 100.0) / 100.0)));
    fields.push(("file", json_str(&ident)));
    fields.push(("line", hit.line.to_string()));
    fields.push(("title", json_str(&hit.title)));
    if let Some(ctx) = nonempty(&hit.context) {
        fields.push(("context", json_str(ctx)));
    }
    // JSON numbers from 1 and leaves out empty texts (JS truthiness).
    let content = search_content(hit, view);
    if !content.is_empty() {
        let key = if view.full { "body" } else { "snippet" };
        fields.push((key, json_str(&numbered(content, view, 1))));
    }
    if let Some(metadata) = hit.metadata.as_deref().and_then(|m| serde_json::from_str(m).ok()) {
        fields.push(("metadata", nested_json(&metadata)));
    }
    fields
}

/// A nested JSON value as a field of [`json_array`]'s objects writes it:
/// indented as `JSON.stringify(…, null, 2)` would, strings made safe for a
/// terminal as [`json_str`] makes them.
fn nested_json(value: &serde_json::Value) -> String {
    let pretty = serde_json::to_string_pretty(value).expect("JSON values serialize");
    terminal_safe(pretty.replace('\n', "\n    "))
}

pub(super) fn multi_json(rows: &[MultiRow]) -> String {
    let objects: Vec<Vec<(&str, String)>> = rows.iter().map(multi_json_object).collect();
    json_array(&objects) + "\n"
}

pub(super) fn multi_json_object(row: &MultiRow) -> Vec<(&'static str, String)> {
    let mut fields = vec![("file", json_str(&row.ident))];
    if let Some(docid) = row.docid {
        fields.push(("docid", json_str(&format!("#{docid}"))));
    }
    fields.push(("title", json_str(&row.title)));
    if let Some(ctx) = row.context {
        fields.push(("context", json_str(ctx)));
    }
    match &row.skipped {
        Some(reason) => {
            fields.push(("skipped", "true".to_string()));
            fields.push(("reason", json_str(reason)));
        }
        None => fields.push(("body", json_str(row.body))),
    }
    fields
}

pub(super) fn json_str(value: &str) -> String {
    // serde_json escapes exactly as JSON.stringify does for valid UTF-8.
    terminal_safe(serde_json::Value::from(value).to_string())
}

/// JSON text with what JSON may carry raw but a terminal would obey (DEL,
/// C1 controls, bidirectional overrides) as `\uXXXX`: the same value to
/// any parser. A raw newline is layout (serde_json escapes those inside
/// strings) and stays.
fn terminal_safe(json: String) -> String {
    let unsafe_char = |c: char| c != '\n' && qmd_core::display::is_unsafe_char(c);
    if !json.contains(unsafe_char) {
        return json;
    }
    json.chars().map(|c| if unsafe_char(c) { format!("\\u{:04x}", c as u32) } else { c.to_string() }).collect()
}

/// `JSON.stringify(objects, null, 2)` for flat objects whose values are
/// already JSON text; hand-written because serde_json's map sorts keys.
pub(super) fn json_array(objects: &[Vec<(&str, String)>]) -> String {
    if objects.is_empty() {
        return "[]".to_string();
    }
    let items: Vec<String> = objects
        .iter()
        .map(|fields| {
            let lines: Vec<String> = fields.iter().map(|(k, v)| format!("    {}: {v}", json_str(k))).collect();
            format!("  {{\n{}\n  }}", lines.join(",\n"))
        })
        .collect();
    format!("[\n{}\n]", items.join(",\n"))
}

/// `Math.round`: halves go up, also for negative numbers.
pub(super) fn js_round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 { floor + 1.0 } else { floor }
}

/// A number as JavaScript prints it, for the small values used here
/// (Rust's `Display` also drops `.0` and picks the shortest round trip).
pub(super) fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_string();
    }
    if x == 0.0 {
        // JS prints -0 as 0.
        return "0".to_string();
    }
    x.to_string()
}

/// `Number.prototype.toFixed`: Rust rounds exact decimal ties to even, JS
/// away from zero, so a tie is nudged up before formatting.
pub(super) fn to_fixed(x: f64, digits: usize) -> String {
    let magnitude = x.abs();
    let magnitude = if is_decimal_tie(magnitude, digits) { magnitude.next_up() } else { magnitude };
    let sign = if x < 0.0 { "-" } else { "" };
    format!("{sign}{magnitude:.digits$}")
}

/// Whether `x` lies exactly halfway between two `digits`-place decimals.
/// 80 places hold the exact expansion of every double above 2^-27, and a
/// tie at four places or fewer is far above that.
pub(super) fn is_decimal_tie(x: f64, digits: usize) -> bool {
    let exact = format!("{x:.80}");
    let Some((_, frac)) = exact.split_once('.') else {
        return false;
    };
    let rest = &frac[digits..];
    rest.starts_with('5') && rest[1..].bytes().all(|b| b == b'0')
}
