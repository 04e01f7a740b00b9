//! Re-writes an object as compact JSON while it is read, leaving out what the cache does not keep.
//!
//! A watch event's object is read once, by any serde deserializer (serde_json directly for a list
//! or a watch line that names its `type` first, serde's buffered content for one that names its
//! `object` first): it is written back out value by value, in the order it came, without building
//! a tree. `metadata.managedFields` and the `kubectl.kubernetes.io/last-applied-configuration`
//! annotation are skipped: neither the host nor a plugin reads them, and they are often most of
//! an object. The object's own fields are kept as spans (`apiVersion`, `kind` and `metadata` by
//! name), so the object can be put together with those three first, as kube's `DynamicObject`
//! wrote it, and the few fields the host reads decoded from their spans alone.

use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The annotation `kubectl apply` (client-side) keeps a full copy of the object in: the cache
/// drops it (a Secret's copy holds its data).
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The fields of an object the cache puts first and reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `apiVersion`.
    ApiVersion,
    /// `kind`.
    Kind,
    /// `metadata`.
    Metadata,
}

/// One object's fields written out compactly, each a span of `json` (see the module
/// documentation).
#[derive(Clone, Debug, Default)]
pub struct Trimmed {
    /// The object's fields (`"key":value`) one after the other, without commas or braces; inside
    /// them compact JSON without managedFields and the last-applied annotation.
    pub json: Vec<u8>,
    /// Each field's `"key":value` span, in the order they came, and which it is.
    pub fields: Vec<(Range<usize>, Option<Field>)>,
    /// The span of each named field's value.
    values: [Option<Range<usize>>; 3],
}

impl Trimmed {
    /// Reads one object (a JSON object at the top) from `deserializer`.
    pub fn read<'de, D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut out = Trimmed::default();
        Value {
            out: &mut out,
            level: Level::Root,
        }
        .deserialize(deserializer)?;
        Ok(out)
    }

    /// The JSON of the value of `field`, if the object has it.
    pub fn value(&self, field: Field) -> Option<&[u8]> {
        let span = self.values[field as usize].clone()?;
        Some(&self.json[span])
    }

    /// The `"key":value` text of `field`, if the object has it.
    pub fn field(&self, field: Field) -> Option<&[u8]> {
        let (span, _) = self.fields.iter().find(|(_, f)| *f == Some(field))?;
        Some(&self.json[span.clone()])
    }

    /// The `"key":value` texts of the other fields, in the order they came.
    pub fn others(&self) -> impl Iterator<Item = &[u8]> {
        self.fields
            .iter()
            .filter(|(_, f)| f.is_none())
            .map(|(span, _)| &self.json[span.clone()])
    }
}

/// Where in the object a value is: what may be skipped or noted depends on it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The object itself.
    Root,
    /// Its `metadata`.
    Metadata,
    /// Its `metadata.annotations`.
    Annotations,
    /// Anywhere else: written as it is.
    Other,
}

/// What to do with the value under one key.
enum Action {
    /// Leave it out (the key was not written).
    Skip,
    /// Write it at this level; at the root, it is this named field or another.
    Write(Level, Option<Field>),
}

fn action(level: Level, key: &str) -> Action {
    match (level, key) {
        (Level::Root, "metadata") => Action::Write(Level::Metadata, Some(Field::Metadata)),
        (Level::Root, "apiVersion") => Action::Write(Level::Other, Some(Field::ApiVersion)),
        (Level::Root, "kind") => Action::Write(Level::Other, Some(Field::Kind)),
        (Level::Metadata, "managedFields") | (Level::Annotations, LAST_APPLIED) => Action::Skip,
        (Level::Metadata, "annotations") => Action::Write(Level::Annotations, None),
        _ => Action::Write(Level::Other, None),
    }
}

/// Writes one value into `out.json`.
struct Value<'a> {
    out: &'a mut Trimmed,
    level: Level,
}

impl Value<'_> {
    fn scalar<E: de::Error>(self, value: impl serde::Serialize) -> Result<(), E> {
        if self.level == Level::Root || self.level == Level::Metadata {
            return Err(E::custom(
                "an object must be a JSON object, as must its metadata",
            ));
        }
        serde_json::to_writer(&mut self.out.json, &value).map_err(E::custom)
    }
}

impl<'de> DeserializeSeed<'de> for Value<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.scalar(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar(())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.level != Level::Other {
            return Err(de::Error::custom(
                "an object, its metadata and its annotations must be JSON objects",
            ));
        }
        self.out.json.push(b'[');
        let mut first = true;
        loop {
            let comma = self.out.json.len();
            if !first {
                self.out.json.push(b',');
            }
            let element = Value {
                out: &mut *self.out,
                level: Level::Other,
            };
            if seq.next_element_seed(element)?.is_none() {
                // The comma written for an element that did not come.
                self.out.json.truncate(comma);
                break;
            }
            first = false;
        }
        self.out.json.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // The object's own fields are kept as spans; any other map is written whole.
        let root = self.level == Level::Root;
        if !root {
            self.out.json.push(b'{');
        }
        let mut first = true;
        loop {
            let start = self.out.json.len();
            let key = Key {
                out: &mut *self.out,
                level: self.level,
                // At the root the fields are spans: no comma between them.
                comma: !root && !first,
            };
            let Some(action) = map.next_key_seed(key)? else {
                break;
            };
            match action {
                Action::Skip => {
                    map.next_value::<IgnoredAny>()?;
                }
                Action::Write(level, field) => {
                    first = false;
                    let value = self.out.json.len();
                    map.next_value_seed(Value {
                        out: &mut *self.out,
                        level,
                    })?;
                    let end = self.out.json.len();
                    if root {
                        if let Some(f) = field {
                            self.out.values[f as usize] = Some(value..end);
                        }
                        self.out.fields.push((start..end, field));
                    }
                }
            }
        }
        if !root {
            self.out.json.push(b'}');
        }
        Ok(())
    }
}

/// Reads one key of a map and writes it (after a comma when asked) unless its value is skipped.
struct Key<'a> {
    out: &'a mut Trimmed,
    level: Level,
    comma: bool,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Action;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Action, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Action;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Action, E> {
        let action = action(self.level, key);
        if let Action::Write(..) = action {
            if self.comma {
                self.out.json.push(b',');
            }
            serde_json::to_writer(&mut self.out.json, key).map_err(E::custom)?;
            self.out.json.push(b':');
        }
        Ok(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Trimmed {
        Trimmed::read(&mut serde_json::Deserializer::from_str(text))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fields put back together in the order they came.
    fn trimmed(text: &str) -> String {
        let t = read(text);
        let fields: Vec<&[u8]> = t.fields.iter().map(|(r, _)| &t.json[r.clone()]).collect();
        let joined = [b"{".as_slice(), &fields.join(b",".as_slice()), b"}"].concat();
        String::from_utf8(joined).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn compact_json_comes_back_byte_for_byte() {
        let text = r#"{"apiVersion":"v1","data":{"a":"x\"y\u0001","n":[1,-2,3.5,true,null,{}],"e":[]},"kind":"ConfigMap","metadata":{"name":"c"}}"#;
        assert_eq!(trimmed(text), text);
    }

    #[test]
    fn managed_fields_and_the_last_applied_annotation_are_left_out() {
        let text = r#"{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","keep":"1"},"managedFields":[{"manager":"kubectl"}],"name":"c"},"spec":{"managedFields":1}}"#;
        assert_eq!(
            trimmed(text),
            r#"{"metadata":{"annotations":{"keep":"1"},"name":"c"},"spec":{"managedFields":1}}"#
        );
        let first = r#"{"metadata":{"managedFields":[],"name":"c"}}"#;
        assert_eq!(trimmed(first), r#"{"metadata":{"name":"c"}}"#);
    }

    #[test]
    fn the_named_fields_are_found_wherever_they_came() {
        let t = read(
            r#"{"kind":"Blog","spec":{},"metadata":{"name":"b"},"apiVersion":"weir.dev/v1alpha1"}"#,
        );
        assert_eq!(
            t.value(Field::Metadata),
            Some(br#"{"name":"b"}"#.as_slice())
        );
        assert_eq!(t.value(Field::Kind), Some(br#""Blog""#.as_slice()));
        assert_eq!(
            t.field(Field::ApiVersion),
            Some(br#""apiVersion":"weir.dev/v1alpha1""#.as_slice())
        );
        assert_eq!(t.others().collect::<Vec<_>>(), [br#""spec":{}"#.as_slice()]);
    }

    #[test]
    fn an_object_that_is_not_a_json_object_is_refused() {
        for text in [
            "[]",
            "1",
            r#"{"metadata":[]}"#,
            r#"{"metadata":{"annotations":[1]}}"#,
        ] {
            assert!(
                Trimmed::read(&mut serde_json::Deserializer::from_str(text)).is_err(),
                "{text}"
            );
        }
    }
}
