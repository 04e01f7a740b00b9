//! The children a parent owns, looked up by Rust type, name and cluster.

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
///
/// Every object lives in a cluster (contract 0.4.0): [`Children::cluster`] is the
/// parent's, and the lookups on the set itself read there; [`Children::in_cluster`]
/// reads another.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Children {
    children: Vec<Entry>,
    related: Vec<Entry>,
    cluster: String,
}

/// The related objects a plugin selected (`Reconciler::select`) that exist,
/// looked up by Rust type and name like children, in the parent's cluster unless
/// [`Related::in_cluster`] says another. Secrets come without their data.
#[derive(Debug, Clone, Copy)]
pub struct Related<'a> {
    entries: &'a [Entry],
    cluster: &'a str,
    parent_cluster: &'a str,
}

/// The children in one cluster ([`Children::in_cluster`]), looked up by Rust type and name.
#[derive(Debug, Clone, Copy)]
pub struct InCluster<'a> {
    entries: &'a [Entry],
    cluster: &'a str,
    parent_cluster: &'a str,
}

/// One child: what lookups match on, and the text a typed lookup decodes.
///
/// Only this head is parsed up front: building a `Value` tree of every
/// observed child cost more than the whole rest of a Blog reconcile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    head: Head,
    json: String,
    /// The cluster the object lives in; empty: the parent's.
    cluster: String,
}

impl Entry {
    /// Whether the object lives in `cluster`, the parent's being `parent_cluster`.
    fn in_cluster(&self, cluster: &str, parent_cluster: &str) -> bool {
        let own = if self.cluster.is_empty() {
            parent_cluster
        } else {
            &self.cluster
        };
        own == cluster
    }
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

/// Objects from the JSON texts the contract carries, each with its cluster (empty: the parent's).
fn entries(texts: Vec<(String, String)>) -> Result<Vec<Entry>, serde_json::Error> {
    texts
        .into_iter()
        .map(|(cluster, json)| {
            Ok(Entry {
                head: serde_json::from_str(&json)?,
                json,
                cluster,
            })
        })
        .collect()
}

impl Children {
    /// Reads children from `(cluster, JSON text)` pairs (an empty cluster: the parent's).
    pub(crate) fn placed(texts: Vec<(String, String)>) -> Result<Self, serde_json::Error> {
        Ok(Children {
            children: entries(texts)?,
            ..Children::default()
        })
    }

    /// The same children, with the related objects from `(cluster, JSON text)` pairs.
    pub(crate) fn with_related(
        mut self,
        texts: Vec<(String, String)>,
    ) -> Result<Self, serde_json::Error> {
        self.related = entries(texts)?;
        Ok(self)
    }

    /// The same children, their parent in `cluster`.
    pub(crate) fn in_parent_cluster(mut self, cluster: String) -> Self {
        self.cluster = cluster;
        self
    }

    /// The name of the parent's cluster (contract 0.4.0; empty in a test that names none).
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The related objects the plugin selected that exist (empty for a plugin without related
    /// kinds), in the parent's cluster.
    pub fn related(&self) -> Related<'_> {
        Related {
            entries: &self.related,
            cluster: &self.cluster,
            parent_cluster: &self.cluster,
        }
    }

    /// The children in `cluster`.
    pub fn in_cluster<'a>(&'a self, cluster: &'a str) -> InCluster<'a> {
        InCluster {
            entries: &self.children,
            cluster,
            parent_cluster: &self.cluster,
        }
    }

    /// The names of the clusters the children live in, sorted, each once.
    pub fn clusters(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .children
            .iter()
            .map(|e| {
                if e.cluster.is_empty() {
                    self.cluster.as_str()
                } else {
                    e.cluster.as_str()
                }
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    fn here(&self) -> InCluster<'_> {
        self.in_cluster(&self.cluster)
    }

    /// The child of type `K` called `name` in the parent's cluster, if there is one.
    ///
    /// Fails (permanently) only when the object does not decode as a `K`.
    pub fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.here().get::<K>(name)
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
        self.here().get_as::<K, T>(name)
    }

    /// Every child of type `K` in the parent's cluster.
    pub fn list<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.here().list::<K>()
    }

    /// Every child as JSON, in every cluster, in the order given (each parsed on the way out).
    pub fn iter(&self) -> impl Iterator<Item = Value> + '_ {
        self.children.iter().map(|entry| parse(&entry.json))
    }

    /// How many children there are, in every cluster.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// Whether there are no children in any cluster.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The `(cluster, JSON text)` pairs, as the contract carries them (an empty cluster: the
    /// parent's).
    pub(crate) fn into_placed(self) -> Vec<(String, String)> {
        self.children
            .into_iter()
            .map(|entry| (entry.cluster, entry.json))
            .collect()
    }
}

impl<'a> InCluster<'a> {
    /// The child of type `K` called `name` in this cluster, if there is one.
    pub fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        get::<K, K>(self.of_kind::<K>(), name)
    }

    /// The child of type `K` called `name` in this cluster, decoded as `T` ([`Children::get_as`]).
    pub fn get_as<K, T>(&self, name: &str) -> Result<Option<T>, Error>
    where
        K: k8s_openapi::Resource,
        T: DeserializeOwned,
    {
        get::<K, T>(self.of_kind::<K>(), name)
    }

    /// Every child of type `K` in this cluster.
    pub fn list<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.of_kind::<K>()
            .map(|entry| decode(entry, K::KIND))
            .collect()
    }

    fn of_kind<K: k8s_openapi::Resource>(&self) -> impl Iterator<Item = &'a Entry> + use<'a, K> {
        let (cluster, parent) = (self.cluster, self.parent_cluster);
        of_kind::<K>(self.entries).filter(move |e| e.in_cluster(cluster, parent))
    }
}

impl<'a> Related<'a> {
    /// The selected objects in `cluster` (a selection that named it, contract 0.4.0).
    pub fn in_cluster(self, cluster: &'a str) -> Related<'a> {
        Related { cluster, ..self }
    }

    /// The selected object of type `K` called `name`, if it exists.
    ///
    /// Fails (permanently) only when the object does not decode as a `K`.
    pub fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        get::<K, K>(self.of_kind::<K>(), name)
    }

    /// Every selected object of type `K`, sorted by name.
    pub fn list<K>(&self) -> Result<Vec<K>, Error>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        let mut entries: Vec<&Entry> = self.of_kind::<K>().collect();
        entries.sort_by(|a, b| a.head.metadata.name.cmp(&b.head.metadata.name));
        entries
            .into_iter()
            .map(|entry| decode(entry, K::KIND))
            .collect()
    }

    /// How many selected objects exist in this cluster.
    pub fn len(&self) -> usize {
        self.here().count()
    }

    /// Whether no selected object exists in this cluster.
    pub fn is_empty(&self) -> bool {
        self.here().next().is_none()
    }

    fn here(&self) -> impl Iterator<Item = &'a Entry> + use<'a> {
        let (cluster, parent) = (self.cluster, self.parent_cluster);
        self.entries
            .iter()
            .filter(move |e| e.in_cluster(cluster, parent))
    }

    fn of_kind<K: k8s_openapi::Resource>(&self) -> impl Iterator<Item = &'a Entry> + use<'a, K> {
        let (cluster, parent) = (self.cluster, self.parent_cluster);
        of_kind::<K>(self.entries).filter(move |e| e.in_cluster(cluster, parent))
    }
}

fn of_kind<K: k8s_openapi::Resource>(entries: &[Entry]) -> impl Iterator<Item = &Entry> {
    entries
        .iter()
        .filter(|entry| entry.head.api_version == K::API_VERSION && entry.head.kind == K::KIND)
}

/// The entry of `entries` called `name`, decoded as `T` (`K` itself, or a part of it).
fn get<'a, K, T>(
    mut entries: impl Iterator<Item = &'a Entry>,
    name: &str,
) -> Result<Option<T>, Error>
where
    K: k8s_openapi::Resource,
    T: DeserializeOwned,
{
    entries
        .find(|entry| entry.head.metadata.name == name)
        .map(|entry| decode(entry, K::KIND))
        .transpose()
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
        Children {
            children: objects
                .into_iter()
                .map(|object| Entry {
                    head: Head::deserialize(&object).unwrap_or_default(),
                    json: object.to_string(),
                    cluster: String::new(),
                })
                .collect(),
            ..Children::default()
        }
    }
}

impl IntoIterator for Children {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.children
            .iter()
            .map(|entry| parse(&entry.json))
            .collect::<Vec<_>>()
            .into_iter()
    }
}
