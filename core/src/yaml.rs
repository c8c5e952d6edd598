//! YAML from outside (a note's frontmatter, a cloned project's
//! `index.yml`) read with its work bounded by its size. An alias repeats
//! the node it names, so ten lines of anchors can stand for 10¹⁰ nodes (a
//! "billion laughs"); serde_norway follows every one. A first pass counts
//! the nodes as they are replayed and stops once they outnumber the text's
//! own bytes, which no YAML without aliases can do; only then is the tree
//! built.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

/// `text` as a YAML tree, or why not (the parser's message, or that its
/// aliases expand past what its size allows).
pub fn parse(text: &str) -> Result<serde_norway::Value, String> {
    let limit = text.len() + 1024;
    let seen = Cell::new(0);
    let counted = Count { seen: &seen, limit }.deserialize(serde_norway::Deserializer::from_str(text));
    if let Err(e) = counted {
        return Err(if seen.get() > limit {
            format!("its aliases expand to more than {limit} nodes (a YAML of {} bytes); refused", text.len())
        } else {
            e.to_string()
        });
    }
    serde_norway::from_str(text).map_err(|e| e.to_string())
}

/// Counts the nodes it is shown, failing past `limit`.
#[derive(Clone, Copy)]
struct Count<'a> {
    seen: &'a Cell<usize>,
    limit: usize,
}

impl Count<'_> {
    fn node<E: de::Error>(self) -> Result<(), E> {
        self.seen.set(self.seen.get() + 1);
        if self.seen.get() > self.limit { Err(E::custom("too many nodes")) } else { Ok(()) }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.node()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.node()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.node()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.node()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.node()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.node()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.node()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.node()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.node()
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.node()?;
        self.deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.node()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.node()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    /// A tagged node (`!tag value`).
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        self.node()?;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_yaml_parses_as_before() {
        let text = "a: &x [1, two, {c: 3.5}]\nb: *x\nc: !tag {d: null}\nd: ~\n";
        assert_eq!(parse(text).unwrap(), serde_norway::from_str::<serde_norway::Value>(text).unwrap());
        assert!(parse("a: [unclosed").unwrap_err().contains("did not find expected"));
    }

    /// Ten levels of ten aliases each: 10¹⁰ nodes from 300 bytes, refused
    /// at once (serde_norway alone builds them until memory runs out).
    #[test]
    fn aliases_that_outgrow_the_text_are_refused_quickly() {
        let mut text = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let prior = format!("*l{}", level - 1);
            text += &format!("l{level}: &l{level} [{}]\n", vec![prior; 10].join(", "));
        }
        let started = std::time::Instant::now();
        let error = parse(&text).unwrap_err();
        assert!(error.contains("aliases expand to more than"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }
}
