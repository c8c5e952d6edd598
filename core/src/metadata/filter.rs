//! The metadata filter: one JSON tree for every search surface, with qmd's
//! grammar, limits and messages (PR #910). A condition is `{"key",
//! "operator", "value"}`; groups are `{"operator": "and"|"or", "operands":
//! […]}` and `{"operator": "not", "operand": …}`, also written
//! `{"and": […]}`, `{"or": […]}`, `{"not": …}`. Matching is typed: a
//! condition looks only at the key's values of its value's type, and on a
//! list any element may satisfy it (`ne` and `nin`: no element may match,
//! and at least one of that type must be there).

use std::fmt;

use serde_json::{Map, Value as Json};

use super::frontmatter::{MAX_KEY_BYTES, MAX_STRING_CHARS};
use super::{Metadata, Scalar};

pub const MAX_DEPTH: usize = 16;
pub const MAX_NODES: usize = 256;
pub const MAX_GROUP_OPERANDS: usize = 32;
pub const MAX_MEMBERSHIP_VALUES: usize = 64;

const OPERATORS: &str = "and, or, not, eq, ne, gt, gte, lt, lte, in, nin, all, exists";

#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    Condition { key: String, operator: Operator, operand: Operand },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    Nin,
    All,
    Exists,
}

impl Operator {
    fn named(name: &str) -> Option<Operator> {
        Some(match name {
            "eq" => Operator::Eq,
            "ne" => Operator::Ne,
            "gt" => Operator::Gt,
            "gte" => Operator::Gte,
            "lt" => Operator::Lt,
            "lte" => Operator::Lte,
            "in" => Operator::In,
            "nin" => Operator::Nin,
            "all" => Operator::All,
            "exists" => Operator::Exists,
            _ => return None,
        })
    }
}

/// A condition's value, checked against its operator.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    One(Scalar),
    Set(Vec<Scalar>),
    Exists(bool),
}

/// Why a filter was refused, and where in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Invalid metadata filter at {}: {}", self.path, self.message)
    }
}

impl From<FilterError> for crate::Error {
    fn from(e: FilterError) -> crate::Error {
        crate::Error::invalid(e.to_string())
    }
}

impl Filter {
    /// A filter from its JSON text (the CLI's `--filter`).
    pub fn parse_json(text: &str) -> crate::Result<Filter> {
        let json: Json = serde_json::from_str(text).map_err(|e| {
            crate::Error::invalid(format!(
                "Invalid --filter JSON: {e}\nExample: --filter '{{\"key\":\"status\",\"operator\":\"eq\",\"value\":\"published\"}}'"
            ))
        })?;
        Ok(Filter::parse(&json)?)
    }

    /// A filter from a JSON value (MCP, REST, the browser).
    pub fn parse(json: &Json) -> Result<Filter, FilterError> {
        Parser { nodes: 0 }.node(json, "$", 1)
    }

    /// Whether a document with `metadata` passes.
    pub fn matches(&self, metadata: &Metadata) -> bool {
        match self {
            Filter::And(all) => all.iter().all(|f| f.matches(metadata)),
            Filter::Or(any) => any.iter().any(|f| f.matches(metadata)),
            Filter::Not(f) => !f.matches(metadata),
            Filter::Condition { key, operator, operand } => condition(metadata, key, *operator, operand),
        }
    }
}

fn condition(metadata: &Metadata, key: &str, operator: Operator, operand: &Operand) -> bool {
    let value = metadata.get(key);
    if let Operand::Exists(present) = operand {
        return value.is_some() == *present;
    }
    let Some(value) = value else { return false };
    let sample = match operand {
        Operand::One(s) => s,
        Operand::Set(set) => &set[0],
        Operand::Exists(_) => unreachable!("handled above"),
    };
    // Only the values of the operand's type take part.
    let typed: Vec<&Scalar> = value.scalars().iter().filter(|s| s.same_type(sample)).collect();
    let one = || match operand {
        Operand::One(s) => s,
        _ => unreachable!("a single-value operator"),
    };
    let set = || match operand {
        Operand::Set(set) => set.as_slice(),
        _ => unreachable!("a membership operator"),
    };
    let ordered = |keep: fn(std::cmp::Ordering) -> bool| typed.iter().any(|s| s.compare(one()).is_some_and(keep));
    match operator {
        Operator::Eq => typed.iter().any(|s| *s == one()),
        Operator::Ne => !typed.is_empty() && typed.iter().all(|s| *s != one()),
        Operator::Gt => ordered(|o| o.is_gt()),
        Operator::Gte => ordered(|o| o.is_ge()),
        Operator::Lt => ordered(|o| o.is_lt()),
        Operator::Lte => ordered(|o| o.is_le()),
        Operator::In => typed.iter().any(|s| set().contains(s)),
        Operator::Nin => !typed.is_empty() && typed.iter().all(|s| !set().contains(s)),
        Operator::All => set().iter().all(|wanted| typed.contains(&wanted)),
        Operator::Exists => unreachable!("handled above"),
    }
}

struct Parser {
    nodes: usize,
}

impl Parser {
    fn node(&mut self, json: &Json, path: &str, depth: usize) -> Result<Filter, FilterError> {
        let fail = |message: String| Err(FilterError { path: path.to_string(), message });
        if depth > MAX_DEPTH {
            return fail(format!("exceeds maximum nesting depth of {MAX_DEPTH}"));
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return fail(format!("exceeds maximum of {MAX_NODES} nodes"));
        }
        let Json::Object(node) = json else { return fail("each filter node must be an object".into()) };
        // The shorthand `{"and": […]}`, `{"or": […]}`, `{"not": …}`.
        if !node.contains_key("operator") && node.len() == 1 {
            let (name, inner) = node.iter().next().expect("one entry");
            let at = format!("{path}.{name}");
            match name.as_str() {
                "and" | "or" => return self.group(name, inner, &at, &at, depth),
                "not" => return Ok(Filter::Not(Box::new(self.node(inner, &at, depth + 1)?))),
                _ => {}
            }
        }
        let Some(operator) = node.get("operator") else { return fail("missing 'operator' property".into()) };
        let name = operator.as_str().unwrap_or_default();
        match name {
            "and" | "or" => {
                allowed(node, &["operator", "operands"], path)?;
                let Some(operands) = node.get("operands") else {
                    return fail(format!("'{name}' requires an 'operands' array"));
                };
                self.group(name, operands, path, &format!("{path}.operands"), depth)
            }
            "not" => {
                allowed(node, &["operator", "operand"], path)?;
                let Some(operand) = node.get("operand").filter(|o| o.is_object()) else {
                    return fail("'not' requires exactly one 'operand'".into());
                };
                Ok(Filter::Not(Box::new(self.node(operand, &format!("{path}.operand"), depth + 1)?)))
            }
            _ => match Operator::named(name) {
                Some(operator) => condition_node(node, name, operator, path),
                None => fail(format!(
                    "unknown operator '{}' — expected one of: {OPERATORS}",
                    operator.as_str().map_or_else(|| operator.to_string(), str::to_string)
                )),
            },
        }
    }

    /// The operands of an `and`/`or` (the group's own faults reported at
    /// `path`, each operand at `items[i]`).
    fn group(
        &mut self,
        name: &str,
        operands: &Json,
        path: &str,
        items: &str,
        depth: usize,
    ) -> Result<Filter, FilterError> {
        let fail = |message: String| Err(FilterError { path: path.to_string(), message });
        let Json::Array(list) = operands else { return fail(format!("'{name}' requires an 'operands' array")) };
        if list.is_empty() {
            return fail(format!("'{name}' requires a non-empty 'operands' array"));
        }
        if list.len() > MAX_GROUP_OPERANDS {
            return fail(format!("'{name}' exceeds maximum of {MAX_GROUP_OPERANDS} operands"));
        }
        let filters = list
            .iter()
            .enumerate()
            .map(|(i, item)| self.node(item, &format!("{items}[{i}]"), depth + 1))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if name == "and" { Filter::And(filters) } else { Filter::Or(filters) })
    }
}

fn allowed(node: &Map<String, Json>, names: &[&str], path: &str) -> Result<(), FilterError> {
    match node.keys().find(|k| !names.contains(&k.as_str())) {
        Some(unknown) => Err(FilterError {
            path: path.to_string(),
            message: format!("unknown property '{unknown}' — allowed: {}", names.join(", ")),
        }),
        None => Ok(()),
    }
}

fn condition_node(node: &Map<String, Json>, name: &str, operator: Operator, path: &str) -> Result<Filter, FilterError> {
    allowed(node, &["key", "operator", "value"], path)?;
    let at = |p: &str, message: String| FilterError { path: p.to_string(), message };
    let key = match node.get("key") {
        Some(Json::String(k)) if !k.is_empty() => k,
        _ => return Err(at(path, format!("'{name}' requires a non-empty string 'key'"))),
    };
    if key.len() > MAX_KEY_BYTES {
        return Err(at(path, format!("'key' exceeds {MAX_KEY_BYTES} bytes")));
    }
    let Some(value) = node.get("value") else { return Err(at(path, format!("'{name}' requires a 'value'"))) };
    let value_path = format!("{path}.value");
    let operand = match operator {
        Operator::Exists => match value {
            Json::Bool(b) => Operand::Exists(*b),
            _ => return Err(at(&value_path, "'exists' requires a boolean value".into())),
        },
        Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => match scalar(value, &value_path)? {
            Scalar::Bool(_) => return Err(at(&value_path, format!("'{name}' requires a string or number value"))),
            s => Operand::One(s),
        },
        Operator::Eq | Operator::Ne => Operand::One(scalar(value, &value_path)?),
        Operator::In | Operator::Nin | Operator::All => {
            let Json::Array(items) = value else {
                return Err(at(&value_path, format!("'{name}' requires an array value")));
            };
            if items.is_empty() {
                return Err(at(&value_path, format!("'{name}' requires a non-empty array value")));
            }
            if items.len() > MAX_MEMBERSHIP_VALUES {
                return Err(at(&value_path, format!("'{name}' exceeds maximum of {MAX_MEMBERSHIP_VALUES} values")));
            }
            let set = items
                .iter()
                .enumerate()
                .map(|(i, item)| scalar(item, &format!("{value_path}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            if set.iter().any(|s| !s.same_type(&set[0])) {
                return Err(at(&value_path, format!("'{name}' requires a homogeneous array of one scalar type")));
            }
            Operand::Set(set)
        }
    };
    Ok(Filter::Condition { key: key.clone(), operator, operand })
}

fn scalar(json: &Json, path: &str) -> Result<Scalar, FilterError> {
    let fail = |message: &str| Err(FilterError { path: path.to_string(), message: message.to_string() });
    match json {
        Json::String(s) if s.chars().count() > MAX_STRING_CHARS => {
            fail(&format!("string exceeds {MAX_STRING_CHARS} characters"))
        }
        Json::String(s) => Ok(Scalar::String(s.clone())),
        Json::Bool(b) => Ok(Scalar::Bool(*b)),
        Json::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(Scalar::Number(f)),
            _ => fail("numbers must be finite"),
        },
        _ => fail("expected a string, number, or boolean"),
    }
}

#[cfg(test)]
mod tests;
