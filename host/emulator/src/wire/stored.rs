//! One stored object kept as its JSON text, written once per write and parsed again only by a reader that looks inside.
//!
//! A parsed `serde_json::Value` takes about fifteen times its text (every JSON object is a
//! B-tree of its own), so the store keeps text: a list or a watch that serves an object as it
//! is stored copies the text onto the wire, a label selector reads only `metadata.labels`, and
//! a write parses the one object it changes.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::wire::selector::{FieldSelector, LabelSelector};
use crate::wire::shard_selector::ShardSelector;

/// Nesting deeper than this is kept parsed: serde_json reads back at most 128 levels, and a
/// stored object may be a few levels deeper than the body it came from (its `managedFields`).
const TEXT_DEPTH: usize = 100;

/// One object as the store holds it.
#[derive(Debug)]
pub struct Stored(Form);

#[derive(Debug)]
enum Form {
    /// The object's compact JSON text.
    Text(Bytes),
    /// An object nested too deeply to be read back from text (rare).
    Tree(Value),
}

/// What a reader of the wire form needs without parsing the whole object.
#[derive(Debug, Default, Deserialize)]
pub struct Head {
    /// `apiVersion` as stored.
    #[serde(default, rename = "apiVersion")]
    pub api_version: Option<String>,
    /// `kind` as stored.
    #[serde(default)]
    pub kind: Option<String>,
}

/// What a reader of an object's place among others needs: its labels and its owners, read
/// without parsing the rest (the workload simulation reads this much of every change it hears).
#[derive(Debug, Default, Deserialize)]
pub struct Meta {
    /// `metadata.labels` as stored.
    #[serde(default)]
    pub labels: Option<Value>,
    /// `metadata.ownerReferences`.
    #[serde(default, rename = "ownerReferences")]
    pub owner_references: Vec<OwnerRef>,
}

/// One owner reference, as far as [`Meta`] reads it.
#[derive(Debug, Default, Deserialize)]
pub struct OwnerRef {
    /// The owner's kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// The owner's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Whether the owner is the object's controller.
    #[serde(default)]
    pub controller: Option<bool>,
}

impl Meta {
    /// The labels, when they are a map.
    pub fn labels_map(&self) -> Option<&Map<String, Value>> {
        self.labels.as_ref().and_then(Value::as_object)
    }

    /// The kind and name of the object's controller, if any.
    pub fn controller(&self) -> Option<(&str, &str)> {
        self.owner_references
            .iter()
            .find(|r| r.controller == Some(true))
            .map(|r| {
                (
                    r.kind.as_deref().unwrap_or(""),
                    r.name.as_deref().unwrap_or(""),
                )
            })
    }
}

#[derive(Default, Deserialize)]
struct MetaOf {
    #[serde(default)]
    metadata: Option<Meta>,
}

#[derive(Default, Deserialize)]
struct Labels {
    #[serde(default)]
    metadata: Option<LabelsMeta>,
}

#[derive(Default, Deserialize)]
struct LabelsMeta {
    #[serde(default)]
    labels: Option<Value>,
    #[serde(default, rename = "deletionTimestamp")]
    deletion_timestamp: Option<Value>,
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

impl Stored {
    /// The stored form of `obj`.
    pub fn new(obj: &Value) -> Stored {
        if depth(obj) > TEXT_DEPTH {
            return Stored(Form::Tree(obj.clone()));
        }
        match serde_json::to_vec(obj) {
            Ok(text) => Stored(Form::Text(Bytes::from(text.into_boxed_slice()))),
            // Serializing a `Value` cannot fail (its keys are strings); keep it parsed if it does.
            Err(_) => Stored(Form::Tree(obj.clone())),
        }
    }

    /// The object, parsed.
    pub fn value(&self) -> Value {
        match &self.0 {
            // The text was written by `serde_json` from a `Value` no deeper than it reads back.
            Form::Text(text) => serde_json::from_slice(text).unwrap_or_else(|e| {
                tracing::error!(error = %e, "a stored object did not parse back");
                Value::Null
            }),
            Form::Tree(v) => v.clone(),
        }
    }

    /// The object's compact JSON text (shared, not copied, for an object kept as text).
    pub fn text(&self) -> Bytes {
        match &self.0 {
            Form::Text(text) => text.clone(),
            Form::Tree(v) => Bytes::from(v.to_string()),
        }
    }

    /// The length of the object's JSON text.
    pub fn text_len(&self) -> usize {
        match &self.0 {
            Form::Text(text) => text.len(),
            Form::Tree(v) => v.to_string().len(),
        }
    }

    /// `apiVersion` and `kind`, read without parsing the rest.
    pub fn head(&self) -> Head {
        match &self.0 {
            Form::Text(text) => serde_json::from_slice(text).unwrap_or_default(),
            Form::Tree(v) => Head {
                api_version: v
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .map(String::from),
                kind: v.get("kind").and_then(Value::as_str).map(String::from),
            },
        }
    }

    /// `metadata.labels`, read without parsing the rest.
    pub fn labels(&self) -> Option<Map<String, Value>> {
        let labels = match &self.0 {
            Form::Text(text) => {
                serde_json::from_slice::<Labels>(text)
                    .ok()?
                    .metadata?
                    .labels?
            }
            Form::Tree(v) => v.pointer("/metadata/labels")?.clone(),
        };
        match labels {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The labels and owners in `metadata`, read without parsing the rest.
    pub fn meta(&self) -> Meta {
        let read = match &self.0 {
            Form::Text(text) => serde_json::from_slice::<MetaOf>(text),
            Form::Tree(v) => MetaOf::deserialize(v),
        };
        read.ok().and_then(|o| o.metadata).unwrap_or_default()
    }

    /// Whether `metadata.deletionTimestamp` is set, read without parsing the rest.
    pub fn is_deleting(&self) -> bool {
        match &self.0 {
            Form::Text(text) => serde_json::from_slice::<Labels>(text)
                .ok()
                .and_then(|o| o.metadata?.deletion_timestamp)
                .is_some_and(|t| !t.is_null()),
            Form::Tree(v) => crate::wire::object::is_deleting(v),
        }
    }

    /// The part of the object a reader's type `T` names, read without building the rest (a
    /// field `T` does not name is skipped over, not parsed into a value); `None` when the
    /// object does not have `T`'s shape.
    pub fn read<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        match &self.0 {
            Form::Text(text) => serde_json::from_slice(text).ok(),
            Form::Tree(v) => T::deserialize(v).ok(),
        }
    }

    /// Whether a list's or watch's selectors select this object; only what they read is parsed.
    pub fn selected_by(
        &self,
        labels: &LabelSelector,
        fields: &FieldSelector,
        shard: &ShardSelector,
    ) -> bool {
        if fields.is_empty() && shard.is_empty() {
            return labels.is_empty() || labels.matches_labels(self.labels().as_ref());
        }
        let obj = self.value();
        labels.matches(&obj) && fields.matches(&obj) && shard.matches(&obj)
    }
}

#[cfg(test)]
#[path = "stored_tests.rs"]
mod tests;
