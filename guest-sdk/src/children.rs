//! The children a parent owns, looked up by Rust type and name.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;

/// A set of child objects as JSON, typed on lookup.
///
/// In `reconcile` and `finalize` these are the children the host observed
/// (status included); in [`testing`](crate::testing) results they are the
/// children the plugin asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Children(Vec<Value>);

impl Children {
    /// The child of type `K` called `name`, if there is one.
    ///
    /// Fails (permanently) only when the object does not decode as a `K`.
    pub fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.find::<K>(|object| {
            object.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
        .into_iter()
        .next()
        .transpose()
    }

    /// Every child of type `K`.
    pub fn list<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.find::<K>(|_| true).into_iter().collect()
    }

    /// Every child as JSON, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &Value> {
        self.0.iter()
    }

    /// How many children there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no children.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find<K>(&self, matches: impl Fn(&Value) -> bool) -> Vec<Result<K, Error>>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.0
            .iter()
            .filter(|object| is_kind::<K>(object) && matches(object))
            .map(|object| {
                // No field path here: a second, path-tracking decoder per kind would
                // add ~200 KB to the component for objects the API server validated.
                K::deserialize(object).map_err(|e| {
                    let name = object
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    Error::permanent(format!("observed {} {name} does not decode: {e}", K::KIND))
                })
            })
            .collect()
    }
}

fn is_kind<K: k8s_openapi::Resource>(object: &Value) -> bool {
    object.get("apiVersion").and_then(Value::as_str) == Some(K::API_VERSION)
        && object.get("kind").and_then(Value::as_str) == Some(K::KIND)
}

impl From<Vec<Value>> for Children {
    fn from(objects: Vec<Value>) -> Self {
        Children(objects)
    }
}

impl FromIterator<Value> for Children {
    fn from_iter<I: IntoIterator<Item = Value>>(objects: I) -> Self {
        Children(objects.into_iter().collect())
    }
}

impl IntoIterator for Children {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
