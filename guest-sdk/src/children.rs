//! The children a parent owns, looked up by Rust type and name.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;

/// A set of child objects, kept as JSON text and decoded only on lookup.
///
/// In `reconcile` and `finalize` these are the children the host observed
/// (status included); in [`testing`](crate::testing) results they are the
/// children the plugin asked for. Two sets are equal when they hold the same
/// JSON texts in the same order.
///
/// In `reconcile` and `finalize` the set also carries the related objects the
/// plugin selected ([`Children::related`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Children(Vec<Entry>, Vec<Entry>);

/// The related objects a plugin selected (`Reconciler::select`) that exist,
/// looked up by Rust type and name like children. Secrets come without their data.
#[derive(Debug, Clone, Copy)]
pub struct Related<'a>(&'a [Entry]);

/// One child: what lookups match on, and the text a typed lookup decodes.
///
/// Only this head is parsed up front: building a `Value` tree of every
/// observed child cost more than the whole rest of a Blog reconcile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    head: Head,
    json: String,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: HeadMeta,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
struct HeadMeta {
    #[serde(default)]
    name: String,
}

impl Children {
    /// Reads children from the JSON texts the contract carries.
    pub(crate) fn from_json(texts: Vec<String>) -> Result<Self, serde_json::Error> {
        texts
            .into_iter()
            .map(|json| {
                Ok(Entry {
                    head: serde_json::from_str(&json)?,
                    json,
                })
            })
            .collect::<Result<_, _>>()
            .map(|entries| Children(entries, Vec::new()))
    }

    /// The same children, with the related objects from their JSON texts.
    pub(crate) fn with_related(mut self, texts: Vec<String>) -> Result<Self, serde_json::Error> {
        self.1 = Self::from_json(texts)?.0;
        Ok(self)
    }

    /// The related objects the plugin selected that exist (empty for a plugin without related kinds).
    pub fn related(&self) -> Related<'_> {
        Related(&self.1)
    }

    /// The child of type `K` called `name`, if there is one.
    ///
    /// Fails (permanently) only when the object does not decode as a `K`.
    pub fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        get::<K, K>(&self.0, name)
    }

    /// The child of type `K` called `name`, decoded as `T`: a struct of only the fields the
    /// plugin reads (a Deployment's `status.readyReplicas`, say).
    ///
    /// A component carries the decoder of every type it decodes, and the host keeps each
    /// plugin's compiled code in memory. Decoding a whole Deployment links a decoder for every
    /// field a Pod can have: about 300 KB of the Blog's component, 0.9 MB of compiled code.
    pub fn get_as<K, T>(&self, name: &str) -> Result<Option<T>, Error>
    where
        K: k8s_openapi::Resource,
        T: DeserializeOwned,
    {
        get::<K, T>(&self.0, name)
    }

    /// Every child of type `K`.
    pub fn list<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        list(&self.0)
    }

    /// Every child as JSON, in the order given (each parsed on the way out).
    pub fn iter(&self) -> impl Iterator<Item = Value> + '_ {
        self.0.iter().map(|entry| parse(&entry.json))
    }

    /// How many children there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no children.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The JSON texts, as the contract carries them.
    pub(crate) fn into_json(self) -> Vec<String> {
        self.0.into_iter().map(|entry| entry.json).collect()
    }
}

impl Related<'_> {
    /// The selected object of type `K` called `name`, if it exists.
    ///
    /// Fails (permanently) only when the object does not decode as a `K`.
    pub fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        get::<K, K>(self.0, name)
    }

    /// Every selected object of type `K`, sorted by name.
    pub fn list<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        let mut entries: Vec<&Entry> = of_kind::<K>(self.0).collect();
        entries.sort_by(|a, b| a.head.metadata.name.cmp(&b.head.metadata.name));
        entries
            .into_iter()
            .map(|entry| decode(entry, K::KIND))
            .collect()
    }

    /// How many selected objects exist.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no selected object exists.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn of_kind<K: k8s_openapi::Resource>(entries: &[Entry]) -> impl Iterator<Item = &Entry> {
    entries
        .iter()
        .filter(|entry| entry.head.api_version == K::API_VERSION && entry.head.kind == K::KIND)
}

/// The entry of kind `K` called `name`, decoded as `T` (`K` itself, or a part of it).
fn get<K, T>(entries: &[Entry], name: &str) -> Result<Option<T>, Error>
where
    K: k8s_openapi::Resource,
    T: DeserializeOwned,
{
    of_kind::<K>(entries)
        .find(|entry| entry.head.metadata.name == name)
        .map(|entry| decode(entry, K::KIND))
        .transpose()
}

fn list<K>(entries: &[Entry]) -> Result<Vec<K>, Error>
where
    K: k8s_openapi::Resource + DeserializeOwned,
{
    of_kind::<K>(entries)
        .map(|entry| decode(entry, K::KIND))
        .collect()
}

fn decode<T: DeserializeOwned>(entry: &Entry, kind: &str) -> Result<T, Error> {
    // No field path here: a second, path-tracking decoder per kind would add
    // ~200 KB to the component, for objects the API server has validated.
    serde_json::from_str(&entry.json).map_err(|e| {
        let name = &entry.head.metadata.name;
        Error::permanent(format!("observed {kind} {name} does not decode: {e}"))
    })
}

/// Entries were checked to be JSON objects when they were made.
fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or(Value::Null)
}

impl From<Vec<Value>> for Children {
    fn from(objects: Vec<Value>) -> Self {
        objects.into_iter().collect()
    }
}

impl FromIterator<Value> for Children {
    fn from_iter<I: IntoIterator<Item = Value>>(objects: I) -> Self {
        Children(
            objects
                .into_iter()
                .map(|object| Entry {
                    head: Head::deserialize(&object).unwrap_or_default(),
                    json: object.to_string(),
                })
                .collect(),
            Vec::new(),
        )
    }
}

impl IntoIterator for Children {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.0
            .iter()
            .map(|entry| parse(&entry.json))
            .collect::<Vec<_>>()
            .into_iter()
    }
}
