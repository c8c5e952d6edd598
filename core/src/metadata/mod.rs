//! Typed document metadata, as qmd (PR #910, after 2.8.3) reads it: a
//! markdown file opts in with `qmd: metadata: {…}` in its frontmatter
//! ([`frontmatter`]), and searches narrow on it with one JSON filter tree
//! ([`filter`]). Values are strings, finite numbers, booleans, or flat
//! lists of one of those; matching is typed (`"1"` is not `1`).

pub mod filter;
pub mod frontmatter;
pub mod stored;

use std::collections::BTreeMap;

pub use filter::{Filter, FilterError};
pub use frontmatter::{Extraction, extract};

/// One scalar of a metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    String(String),
    Number(f64),
    Bool(bool),
}

impl Scalar {
    /// Whether the two are the same type (matching never converts).
    fn same_type(&self, other: &Scalar) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// The order of two scalars of one type (strings bytewise, as SQLite
    /// compares them); `None` across types and for booleans.
    fn compare(&self, other: &Scalar) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Scalar::String(a), Scalar::String(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            (Scalar::Number(a), Scalar::Number(b)) => a.partial_cmp(b),
            _ => None,
        }
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            Scalar::String(s) => serde_json::Value::from(s.as_str()),
            // Whole numbers print as integers, as JavaScript prints them.
            Scalar::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => serde_json::Value::from(*n as i64),
            Scalar::Number(n) => {
                serde_json::Number::from_f64(*n).map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
            Scalar::Bool(b) => serde_json::Value::Bool(*b),
        }
    }
}

/// A key's value: one scalar, or a flat list of scalars of one type
/// (duplicates dropped, first seen kept).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    One(Scalar),
    List(Vec<Scalar>),
}

impl Value {
    /// Every scalar of the value (a single one, or each element).
    pub fn scalars(&self) -> &[Scalar] {
        match self {
            Value::One(s) => std::slice::from_ref(s),
            Value::List(list) => list,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::One(s) => s.to_json(),
            Value::List(list) => serde_json::Value::Array(list.iter().map(Scalar::to_json).collect()),
        }
    }
}

/// A document's metadata, by key.
pub type Metadata = BTreeMap<String, Value>;

/// Metadata back from the JSON object [`to_json`] writes; `None` for JSON
/// that no extraction gives (an empty object included).
pub fn from_json(json: serde_json::Value) -> Option<Metadata> {
    fn scalar(json: serde_json::Value) -> Option<Scalar> {
        match json {
            serde_json::Value::String(s) => Some(Scalar::String(s)),
            serde_json::Value::Number(n) => n.as_f64().map(Scalar::Number),
            serde_json::Value::Bool(b) => Some(Scalar::Bool(b)),
            _ => None,
        }
    }
    fn value(json: serde_json::Value) -> Option<Value> {
        match json {
            serde_json::Value::Array(items) if !items.is_empty() => {
                let list: Vec<Scalar> = items.into_iter().map(scalar).collect::<Option<_>>()?;
                list.iter().all(|s| s.same_type(&list[0])).then_some(Value::List(list))
            }
            other => scalar(other).map(Value::One),
        }
    }
    match json {
        serde_json::Value::Object(map) if !map.is_empty() => {
            map.into_iter().map(|(k, v)| Some((k, value(v)?))).collect()
        }
        _ => None,
    }
}

/// `metadata` as a JSON object, as results carry it.
pub fn to_json(metadata: &Metadata) -> serde_json::Value {
    serde_json::Value::Object(metadata.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
}
