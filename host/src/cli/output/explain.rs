//! `query --explain`: the lists, the RRF contributions and the notes,
//! printed to stderr.

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
        out += &format!("Strong BM25 signal ({score:.2}) — skipping expansion\n");
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
