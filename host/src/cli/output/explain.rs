//! `query --explain`: the lists, the RRF contributions and the notes,
//! printed to stderr; and the expansion's progress lines, which qmd's
//! `query` and `vsearch` print on stderr every time.

use std::time::Duration;

use qmd_core::query::document::type_name;
use qmd_core::{SearchType, TypedSearch};

/// Which command's progress lines an expansion prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Narration {
    /// `query`: `Expanding query... (4.2s)`, the tree, `Searching N queries...`.
    Query,
    /// `vsearch`: the tree of its vector searches, `Searching N vector queries...`.
    Vsearch,
}

/// What `query` prints before expanding.
pub const EXPANDING: &str = "Expanding query...";

/// qmd's `formatMs`: milliseconds below a second, else seconds to 0.1.
fn format_ms(elapsed: Duration) -> String {
    let ms = elapsed.as_millis();
    if ms < 1000 { format!("{ms}ms") } else { format!("{:.1}s", ms as f64 / 1000.0) }
}

/// The lines after an expansion, as qmd's CLI prints them (its
/// `logExpansionTree`): the query, then each search (newlines as spaces,
/// past 72 characters cut to 69 and `...`), the last with `└─`.
pub fn render_expansion(
    narration: Narration,
    query: &str,
    expansion: &Result<Vec<TypedSearch>, String>,
    elapsed: Duration,
) -> String {
    let mut out = String::new();
    if narration == Narration::Query {
        out += &format!(" ({})\n", format_ms(elapsed));
    }
    if let Err(e) = expansion {
        out += &format!("Query expansion failed: {}\n", super::escape_controls(e));
    }
    let searches: Vec<&TypedSearch> = match expansion {
        Ok(searches) => {
            searches.iter().filter(|s| narration == Narration::Query || s.kind != SearchType::Lex).collect()
        }
        Err(_) => Vec::new(),
    };
    let mut lines = vec![format!("├─ {}", super::escape_controls(query))];
    for s in &searches {
        let mut preview = s.query.replace('\n', " ");
        if preview.chars().count() > 72 {
            preview = preview.chars().take(69).collect::<String>() + "...";
        }
        lines.push(format!("├─ {}: {}", type_name(s.kind), super::escape_controls(&preview)));
    }
    if let Some(last) = lines.last_mut() {
        *last = last.replacen("├─", "└─", 1);
    }
    for line in lines {
        out += &line;
        out.push('\n');
    }
    out += &match narration {
        Narration::Query => format!("Searching {} queries...\n", searches.len() + 1),
        Narration::Vsearch => format!("Searching {} vector queries...\n", searches.len() + 1),
    };
    out
}

/// qmd's line for a probe that made expansion unnecessary.
pub fn strong_signal(score: f64) -> String {
    format!("Strong BM25 signal ({score:.2}) — skipping expansion")
}

/// `--explain`: what ran, then how each result was ranked.
pub fn render_explain(result: &crate::component::bindings::QueryResult) -> String {
    use crate::component::bindings::SearchType;
    let kind = |k: SearchType| match k {
        SearchType::Lex => "lex",
        SearchType::Vec => "vec",
        SearchType::Hyde => "hyde",
    };
    let mut out = String::new();
    if let Some(score) = result.strong_signal {
        out += &strong_signal(score);
        out.push('\n');
    }
    if !result.expansion.is_empty() {
        out += "Expansion:\n";
        for s in &result.expansion {
            out += &format!("  ├─ {}: {}\n", kind(s.kind), s.query);
        }
    }
    if let Some(intent) = &result.intent {
        out += &format!("Intent: {intent}\n");
    }
    out += "Ranked lists:\n";
    for (i, list) in result.lists.iter().enumerate() {
        let scope = list.collection.as_deref().map(|c| format!(" in {c}")).unwrap_or_default();
        out += &format!(
            "  [{i}] {} {} \"{}\"{scope}: {} hits, weight {}\n",
            list.source, list.query_type, list.query, list.hits, list.weight
        );
    }
    for note in &result.notes {
        out += &format!("Note: {note}\n");
    }
    for h in &result.hits {
        out += &format!(
            "qmd://{}/{}  score {:.4} = position 1/{} (weight {:.2}); rrf {:.4} (top-rank bonus {:.2})",
            h.hit.collection, h.hit.path, h.hit.score, h.rrf_rank, h.blend_weight, h.rrf_score, h.top_rank_bonus
        );
        if let Some(rerank) = h.rerank_score {
            out += &format!("; rerank {rerank:.4}");
        }
        out.push('\n');
        for c in &h.contributions {
            out += &format!(
                "    list [{}] rank {} × weight {} → {:.4} (backend score {:.4})\n",
                c.list_index, c.rank, c.weight, c.rrf, c.backend_score
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(kind: SearchType, query: &str) -> TypedSearch {
        TypedSearch { kind, query: query.into() }
    }

    #[test]
    fn the_expansion_tree_is_qmds() {
        let long = "x".repeat(80);
        let expansion = Ok(vec![
            search(SearchType::Lex, "rotate keys"),
            search(SearchType::Hyde, &long),
            search(SearchType::Vec, "a\nb"),
        ]);
        let out = render_expansion(Narration::Query, "rotate", &expansion, Duration::from_millis(4210));
        let want = format!(
            " (4.2s)\n├─ rotate\n├─ lex: rotate keys\n├─ hyde: {}...\n└─ vec: a b\nSearching 4 queries...\n",
            "x".repeat(69)
        );
        assert_eq!(out, want);
        let out = render_expansion(Narration::Vsearch, "rotate", &expansion, Duration::from_millis(5));
        assert!(
            out.starts_with("├─ rotate\n├─ hyde: ") && out.ends_with("└─ vec: a b\nSearching 3 vector queries...\n")
        );
        let failed = render_expansion(Narration::Query, "rotate", &Err("no model".into()), Duration::from_millis(12));
        assert_eq!(failed, " (12ms)\nQuery expansion failed: no model\n└─ rotate\nSearching 1 queries...\n");
    }
}
