//! Reciprocal rank fusion as qmd does it: `Σ w / (k + rank0 + 1)` over the
//! lists a document is in, plus a bonus for its best rank anywhere.

use std::collections::HashMap;
use std::hash::Hash;

/// qmd's RRF constant.
pub const RRF_K: f64 = 60.0;

/// One ranked list: keys best first, each with the backend's score.
#[derive(Clone, Debug)]
pub struct RankedList<K> {
    pub weight: f64,
    pub items: Vec<(K, f64)>,
}

/// What one list gave one document.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Contribution {
    /// Index of the list.
    pub list: usize,
    /// 1-based rank in that list.
    pub rank: usize,
    pub weight: f64,
    pub backend_score: f64,
    pub rrf: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Fused<K> {
    pub key: K,
    /// Sum of contributions plus the top-rank bonus.
    pub score: f64,
    pub top_rank_bonus: f64,
    pub contributions: Vec<Contribution>,
}

/// The RRF constant and whether the best rank anywhere earns qmd's bonus.
#[derive(Clone, Copy, Debug)]
pub struct RrfParams {
    pub k: f64,
    pub top_rank_bonus: bool,
}

/// qmd's fusion: k = 60, with the top-rank bonus.
pub const QMD_RRF: RrfParams = RrfParams { k: RRF_K, top_rank_bonus: true };

/// Fuses `lists` as qmd does ([`QMD_RRF`]).
pub fn reciprocal_rank_fusion<K: Clone + Eq + Hash>(lists: &[RankedList<K>]) -> Vec<Fused<K>> {
    reciprocal_rank_fusion_with(lists, QMD_RRF)
}

/// Fuses `lists`, best first. A list contributes each key once (its first
/// occurrence); ties keep the order in which keys were first met.
pub fn reciprocal_rank_fusion_with<K: Clone + Eq + Hash>(lists: &[RankedList<K>], params: RrfParams) -> Vec<Fused<K>> {
    let mut fused: Vec<Fused<K>> = Vec::new();
    let mut slot: HashMap<K, usize> = HashMap::new();
    let mut top_rank: Vec<usize> = Vec::new();
    for (list, ranked) in lists.iter().enumerate() {
        for (rank0, (key, backend_score)) in ranked.items.iter().enumerate() {
            let rrf = ranked.weight / (params.k + rank0 as f64 + 1.0);
            let i = *slot.entry(key.clone()).or_insert_with(|| {
                fused.push(Fused { key: key.clone(), score: 0.0, top_rank_bonus: 0.0, contributions: Vec::new() });
                top_rank.push(usize::MAX);
                fused.len() - 1
            });
            if fused[i].contributions.iter().any(|c| c.list == list) {
                continue;
            }
            fused[i].score += rrf;
            top_rank[i] = top_rank[i].min(rank0);
            fused[i].contributions.push(Contribution {
                list,
                rank: rank0 + 1,
                weight: ranked.weight,
                backend_score: *backend_score,
                rrf,
            });
        }
    }
    for (entry, &best) in fused.iter_mut().zip(&top_rank) {
        entry.top_rank_bonus = match best {
            _ if !params.top_rank_bonus => 0.0,
            0 => 0.05,
            1..=2 => 0.02,
            _ => 0.0,
        };
        entry.score += entry.top_rank_bonus;
    }
    // Stable: equal scores keep first-seen order, as JavaScript's sort does.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(weight: f64, keys: &[&'static str]) -> RankedList<&'static str> {
        RankedList { weight, items: keys.iter().map(|&k| (k, 0.5)).collect() }
    }

    #[test]
    fn weights_ranks_and_bonus() {
        let fused = reciprocal_rank_fusion(&[list(2.0, &["a", "b", "c", "d"]), list(1.0, &["d", "b"])]);
        let score = |k: &str| fused.iter().find(|f| f.key == k).unwrap().score;
        assert!((score("a") - (2.0 / 61.0 + 0.05)).abs() < 1e-12);
        assert!((score("b") - (2.0 / 62.0 + 1.0 / 62.0 + 0.02)).abs() < 1e-12);
        assert!((score("d") - (2.0 / 64.0 + 1.0 / 61.0 + 0.05)).abs() < 1e-12, "best rank anywhere gets the bonus");
        assert!((score("c") - (2.0 / 63.0 + 0.02)).abs() < 1e-12);
        let order: Vec<_> = fused.iter().map(|f| f.key).collect();
        assert_eq!(order, vec!["d", "a", "b", "c"]);
        assert_eq!(fused[0].contributions.len(), 2);
    }

    #[test]
    fn a_list_counts_a_key_once() {
        let fused = reciprocal_rank_fusion(&[list(1.0, &["a", "a"])]);
        assert_eq!(fused.len(), 1);
        assert!((fused[0].score - (1.0 / 61.0 + 0.05)).abs() < 1e-12);
    }
}
