use serde_json::{Value as Json, json};

use super::*;
use crate::metadata::frontmatter::extract;

/// Documents' metadata as frontmatter would give it.
fn docs() -> Vec<(&'static str, Metadata)> {
    let meta = |yaml: &str| {
        let got = extract("d.md", &format!("---\nqmd:\n  metadata:\n{yaml}---\n"));
        assert_eq!(got.error, None, "{yaml}");
        got.metadata
    };
    vec![
        ("published", meta("    status: published\n    priority: 3\n    topics: [rust, search]\n    draft: false\n")),
        ("draft", meta("    status: draft\n    priority: 1\n    topics: [rust]\n    draft: true\n")),
        ("mixed", meta("    status: \"1\"\n    priority: [1, 20]\n    topics: search\n")),
        ("empty", Metadata::new()),
        ("late", meta("    status: published\n    priority: 10\n    date: 2024-05-01\n")),
    ]
}

fn matching(filter: &Json) -> Vec<&'static str> {
    let filter = Filter::parse(filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
    docs().into_iter().filter(|(_, m)| filter.matches(m)).map(|(name, _)| name).collect()
}

fn leaf(key: &str, operator: &str, value: Json) -> Json {
    json!({"key": key, "operator": operator, "value": value})
}

#[test]
fn each_operator_by_qmds_rules() {
    let cases = [
        (leaf("status", "eq", json!("published")), vec!["published", "late"]),
        // A list matches when any element does.
        (leaf("topics", "eq", json!("search")), vec!["published", "mixed"]),
        // Typed: the string "1" is not the number 1.
        (leaf("status", "eq", json!(1)), vec![]),
        (leaf("priority", "eq", json!(1)), vec!["draft", "mixed"]),
        // ne: the key must hold a value of that type, and none equal.
        (leaf("status", "ne", json!("published")), vec!["draft", "mixed"]),
        (leaf("topics", "ne", json!("rust")), vec!["mixed"]),
        (leaf("priority", "gt", json!(3)), vec!["mixed", "late"]),
        (leaf("priority", "gte", json!(3)), vec!["published", "mixed", "late"]),
        (leaf("priority", "lt", json!(3)), vec!["draft", "mixed"]),
        (leaf("priority", "lte", json!(1)), vec!["draft", "mixed"]),
        // Strings order bytewise; dates are strings, so ISO dates order.
        (leaf("date", "gte", json!("2024-01-01")), vec!["late"]),
        (leaf("status", "lt", json!("e")), vec!["draft", "mixed"]),
        (leaf("status", "in", json!(["draft", "1"])), vec!["draft", "mixed"]),
        (leaf("topics", "nin", json!(["rust"])), vec!["mixed"]),
        (leaf("topics", "all", json!(["rust", "search"])), vec!["published"]),
        (leaf("topics", "all", json!(["rust"])), vec!["published", "draft"]),
        (leaf("draft", "eq", json!(false)), vec!["published"]),
        (leaf("draft", "exists", json!(true)), vec!["published", "draft"]),
        (leaf("draft", "exists", json!(false)), vec!["mixed", "empty", "late"]),
        // Separate conditions on one list may be met by different elements.
        (
            json!({"operator": "and", "operands": [leaf("priority", "gte", json!(3)), leaf("priority", "lt", json!(10))]}),
            vec!["published", "mixed"],
        ),
        (json!({"not": leaf("status", "eq", json!("published"))}), vec!["draft", "mixed", "empty"]),
        (
            json!({"or": [leaf("status", "eq", json!("draft")), leaf("draft", "exists", json!(false))]}),
            vec!["draft", "mixed", "empty", "late"],
        ),
    ];
    for (filter, want) in cases {
        assert_eq!(matching(&filter), want, "{filter}");
    }
}

#[test]
fn the_shorthand_and_the_operator_form_are_one_filter() {
    let a = leaf("status", "eq", json!("draft"));
    let b = leaf("priority", "gt", json!(0));
    for (short, long) in [
        (json!({"and": [a, b]}), json!({"operator": "and", "operands": [a, b]})),
        (json!({"or": [a, b]}), json!({"operator": "or", "operands": [a, b]})),
        (json!({"not": a}), json!({"operator": "not", "operand": a})),
    ] {
        assert_eq!(Filter::parse(&short), Filter::parse(&long));
    }
}

/// A second evaluator, written over the JSON forms, for random trees.
fn reference(filter: &Json, metadata: &Json) -> bool {
    let node = filter.as_object().unwrap();
    if let Some(op) = node.get("operator").and_then(Json::as_str) {
        match op {
            "and" => return node["operands"].as_array().unwrap().iter().all(|f| reference(f, metadata)),
            "or" => return node["operands"].as_array().unwrap().iter().any(|f| reference(f, metadata)),
            "not" => return !reference(&node["operand"], metadata),
            _ => {}
        }
        let value = &node["value"];
        let Some(stored) = metadata.get(node["key"].as_str().unwrap()) else { return op == "exists" && value == false };
        if op == "exists" {
            return value == true;
        }
        let elements: Vec<&Json> = match stored {
            Json::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        let kind = |v: &Json| match v {
            Json::String(_) => 0,
            Json::Number(_) => 1,
            _ => 2,
        };
        let probe = if value.is_array() { &value[0] } else { value };
        let same: Vec<&Json> = elements.into_iter().filter(|e| kind(e) == kind(probe)).collect();
        let order = |a: &Json, b: &Json| match (a, b) {
            (Json::Number(a), Json::Number(b)) => a.as_f64().unwrap().partial_cmp(&b.as_f64().unwrap()).unwrap(),
            (Json::String(a), Json::String(b)) => a.cmp(b),
            _ => unreachable!(),
        };
        let set = || value.as_array().unwrap();
        let eq = |a: &Json, b: &Json| match (a, b) {
            (Json::Number(a), Json::Number(b)) => a.as_f64() == b.as_f64(),
            _ => a == b,
        };
        return match op {
            "eq" => same.iter().any(|e| eq(e, value)),
            "ne" => !same.is_empty() && !same.iter().any(|e| eq(e, value)),
            "gt" => same.iter().any(|e| order(e, value).is_gt()),
            "gte" => same.iter().any(|e| order(e, value).is_ge()),
            "lt" => same.iter().any(|e| order(e, value).is_lt()),
            "lte" => same.iter().any(|e| order(e, value).is_le()),
            "in" => same.iter().any(|e| set().iter().any(|s| eq(e, s))),
            "nin" => !same.is_empty() && !same.iter().any(|e| set().iter().any(|s| eq(e, s))),
            "all" => set().iter().all(|s| same.iter().any(|e| eq(e, s))),
            other => unreachable!("{other}"),
        };
    }
    let (name, inner) = node.iter().next().unwrap();
    match name.as_str() {
        "and" => inner.as_array().unwrap().iter().all(|f| reference(f, metadata)),
        "or" => inner.as_array().unwrap().iter().any(|f| reference(f, metadata)),
        _ => !reference(inner, metadata),
    }
}

/// Random trees of every operator, both group forms, on keys with
/// strings, numbers, booleans and lists: the filter agrees with the
/// reference on every document.
#[test]
fn random_trees_agree_with_a_reference_evaluator() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let scalars =
        [json!("a"), json!("b"), json!("published"), json!(1), json!(3), json!(2.5), json!(true), json!(false)];
    let keys = ["status", "priority", "topics", "draft", "tags", "missing"];
    let docs: Vec<Json> = (0..40)
        .map(|_| {
            let mut doc = serde_json::Map::new();
            for key in keys.iter().take(5) {
                match next(4) {
                    0 => {}
                    1 | 2 => {
                        doc.insert(key.to_string(), scalars[next(8) as usize].clone());
                    }
                    _ => {
                        // A list of one type, no duplicates.
                        let start = [0, 3, 6][next(3) as usize];
                        let len = if start == 6 { 2 } else { 3 };
                        let list: Vec<Json> = (0..1 + next(len)).map(|i| scalars[start + i as usize].clone()).collect();
                        doc.insert(key.to_string(), Json::Array(list));
                    }
                }
            }
            Json::Object(doc)
        })
        .collect();
    let to_metadata = |doc: &Json| -> Metadata {
        let yaml = serde_norway::to_string(&json!({"qmd": {"metadata": doc}})).unwrap();
        let got = extract("d.md", &format!("---\n{yaml}---\n"));
        assert_eq!(got.error, None, "{doc}");
        got.metadata
    };
    fn tree(next: &mut dyn FnMut(u64) -> u64, scalars: &[Json], keys: &[&str], depth: u32) -> Json {
        let ops = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "all", "exists"];
        if depth < 3 && next(3) == 0 {
            let operands: Vec<Json> = (0..1 + next(3)).map(|_| tree(next, scalars, keys, depth + 1)).collect();
            return match next(5) {
                0 => json!({"operator": "and", "operands": operands}),
                1 => json!({"or": operands}),
                2 => json!({"operator": "or", "operands": operands}),
                3 => json!({"and": operands}),
                _ => json!({"not": tree(next, scalars, keys, depth + 1)}),
            };
        }
        let key = keys[next(keys.len() as u64) as usize];
        let op = ops[next(ops.len() as u64) as usize];
        let ordered = [0, 1, 2, 3, 4, 5];
        let value = match op {
            "exists" => json!(next(2) == 0),
            "gt" | "gte" | "lt" | "lte" => scalars[ordered[next(6) as usize]].clone(),
            "in" | "nin" | "all" => {
                let start = [0, 3, 6][next(3) as usize];
                Json::Array((0..1 + next(2)).map(|i| scalars[start + i as usize].clone()).collect())
            }
            _ => scalars[next(8) as usize].clone(),
        };
        leaf(key, op, value)
    }
    let metadata: Vec<Metadata> = docs.iter().map(to_metadata).collect();
    let mut matched = 0;
    for _ in 0..400 {
        let json = tree(&mut next, &scalars, &keys, 0);
        let filter = Filter::parse(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        for (doc, meta) in docs.iter().zip(&metadata) {
            let want = reference(&json, doc);
            assert_eq!(filter.matches(meta), want, "{json} on {doc}");
            matched += usize::from(want);
        }
    }
    assert!(matched > 1000 && matched < 400 * 40 - 1000, "the trees select some documents, not all: {matched}");
}

#[test]
fn bad_filters_are_refused_with_qmds_messages() {
    let deep = (0..17).fold(leaf("a", "eq", json!(1)), |inner, _| json!({"operator": "not", "operand": inner}));
    let wide = json!({"operator": "or", "operands": (0..33).map(|_| leaf("a", "eq", json!(1))).collect::<Vec<_>>()});
    let many = json!({"operator": "and", "operands": (0..30).map(|_| json!({"or": (0..10).map(|_| leaf("a", "eq", json!(1))).collect::<Vec<_>>()})).collect::<Vec<_>>()});
    let cases = [
        (json!(3), "$", "each filter node must be an object"),
        (json!({"key": "a", "value": 1}), "$", "missing 'operator' property"),
        (
            json!({"key": "a", "operator": "like", "value": 1}),
            "$",
            "unknown operator 'like' — expected one of: and, or, not, eq, ne, gt, gte, lt, lte, in, nin, all, exists",
        ),
        (json!({"operator": "and"}), "$", "'and' requires an 'operands' array"),
        (json!({"operator": "or", "operands": []}), "$", "'or' requires a non-empty 'operands' array"),
        (wide, "$", "'or' exceeds maximum of 32 operands"),
        (json!({"operator": "not"}), "$", "'not' requires exactly one 'operand'"),
        (json!({"operator": "eq", "value": 1}), "$", "'eq' requires a non-empty string 'key'"),
        (json!({"key": "k".repeat(129), "operator": "eq", "value": 1}), "$", "'key' exceeds 128 bytes"),
        (json!({"key": "a", "operator": "eq"}), "$", "'eq' requires a 'value'"),
        (leaf("a", "exists", json!("yes")), "$.value", "'exists' requires a boolean value"),
        (leaf("a", "gt", json!(true)), "$.value", "'gt' requires a string or number value"),
        (leaf("a", "eq", json!([1])), "$.value", "expected a string, number, or boolean"),
        (leaf("a", "eq", json!(null)), "$.value", "expected a string, number, or boolean"),
        (leaf("a", "in", json!(1)), "$.value", "'in' requires an array value"),
        (leaf("a", "nin", json!([])), "$.value", "'nin' requires a non-empty array value"),
        (leaf("a", "in", json!((0..65).collect::<Vec<_>>())), "$.value", "'in' exceeds maximum of 64 values"),
        (leaf("a", "all", json!([1, "1"])), "$.value", "'all' requires a homogeneous array of one scalar type"),
        (leaf("a", "in", json!([1, {}])), "$.value[1]", "expected a string, number, or boolean"),
        (leaf("a", "eq", json!("x".repeat(1025))), "$.value", "string exceeds 1024 characters"),
        (
            json!({"key": "a", "operator": "eq", "value": 1, "extra": 2}),
            "$",
            "unknown property 'extra' — allowed: key, operator, value",
        ),
        (json!({"and": [leaf("a", "eq", json!(1)), 7]}), "$.and[1]", "each filter node must be an object"),
        (
            json!({"operator": "or", "operands": [leaf("a", "gt", json!(false))]}),
            "$.operands[0].value",
            "'gt' requires a string or number value",
        ),
        (
            deep,
            "$.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand.operand",
            "exceeds maximum nesting depth of 16",
        ),
        // 1 + 23 groups of 11 nodes = 254; the 24th group and its first leaf make 256.
        (many, "$.operands[23].or[1]", "exceeds maximum of 256 nodes"),
    ];
    for (filter, path, message) in cases {
        let e = Filter::parse(&filter).expect_err(&filter.to_string());
        assert_eq!((e.path.as_str(), e.message.as_str()), (path, message), "{filter}");
        assert_eq!(e.to_string(), format!("Invalid metadata filter at {path}: {message}"));
    }
}

#[test]
fn filter_text_that_is_not_json_names_the_flag() {
    let e = Filter::parse_json("{key: status}").unwrap_err();
    assert!(e.message.starts_with("Invalid --filter JSON: "), "{}", e.message);
    assert!(e.message.contains("--filter '{\"key\":\"status\",\"operator\":\"eq\",\"value\":\"published\"}'"));
    let e = Filter::parse_json(r#"{"key":"a","operator":"eq"}"#).unwrap_err();
    assert_eq!(e.message, "Invalid metadata filter at $: 'eq' requires a 'value'");
}
