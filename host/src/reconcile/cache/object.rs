//! One cached object: its JSON as served (less managedFields and the last-applied annotation)
//! and the few fields the host reads without looking inside, decoded once when it arrives.
//!
//! A decoded JSON tree (`DynamicObject`) takes about five times its serialized size, and every
//! plugin call serialized it again; the cache keeps the bytes instead and hands them to the
//! plugin as they are. Where the host must look inside an object (a parent's status, a child it
//! compares with the desired one), [`CachedObject::decode`] parses it on demand.
//!
//! Watch events arrive as [`Incoming`], the type the watcher deserializes: the trimmed JSON and
//! its metadata, which the watcher reads (`resourceVersion`) and the header is taken from.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject};
use kube::core::{DynamicResourceScope, Resource, TypeMeta};
use serde::Deserialize;

use super::trim::{Field, Trimmed};
use crate::reconcile::queue::ObjectKey;

/// An object as a watch or list delivers it: its trimmed fields and its metadata (see the
/// module documentation). Lives only until the store turns it into a [`CachedObject`].
#[derive(Clone, Debug)]
pub struct Incoming {
    meta: ObjectMeta,
    types: Option<TypeMeta>,
    fields: Trimmed,
}

impl<'de> Deserialize<'de> for Incoming {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let fields = Trimmed::read(deserializer)?;
        let meta = match fields.value(Field::Metadata) {
            Some(bytes) => serde_json::from_slice(bytes).map_err(D::Error::custom)?,
            None => ObjectMeta::default(),
        };
        let types = match (fields.value(Field::ApiVersion), fields.value(Field::Kind)) {
            (Some(api_version), Some(kind)) => Some(TypeMeta {
                api_version: serde_json::from_slice(api_version).map_err(D::Error::custom)?,
                kind: serde_json::from_slice(kind).map_err(D::Error::custom)?,
            }),
            _ => None,
        };
        Ok(Self {
            meta,
            types,
            fields,
        })
    }
}

impl Resource for Incoming {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

/// The controller of an object: its owner reference with `controller: true`.
#[derive(Debug)]
pub struct Controller {
    /// The owner's apiVersion.
    pub api_version: Box<str>,
    /// The owner's kind.
    pub kind: Box<str>,
    /// The owner's name (in the object's namespace).
    pub name: Box<str>,
    /// The owner's UID, shared with the owner index.
    pub uid: Arc<str>,
}

/// One object of the cache: its JSON and its header (see the module documentation).
#[derive(Debug)]
pub struct CachedObject {
    json: Box<str>,
    types: Arc<TypeMeta>,
    key: ObjectKey,
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    generation: Option<i64>,
    /// Sorted by key; the strings are shared with the store's label index.
    labels: Box<[(Arc<str>, Arc<str>)]>,
    controller: Option<Box<Controller>>,
    deleting: bool,
}

/// Heap bytes of an `Arc` beside its value (the two counts).
const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();

impl CachedObject {
    /// The object `incoming` describes, of kind `types` when its JSON names none (list items
    /// often do not). Its JSON has `apiVersion`, `kind` and `metadata` first, then the other
    /// fields in the order they came.
    pub fn new(incoming: Incoming, types: &Arc<TypeMeta>) -> Self {
        let Incoming {
            meta,
            types: own,
            fields,
        } = incoming;
        let json = assemble(&fields, types);
        let types = match own {
            Some(own) if own == **types => types.clone(),
            Some(own) => Arc::new(own),
            None => types.clone(),
        };
        let controller = meta
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .find(|r| r.controller == Some(true))
            .map(|r| {
                Box::new(Controller {
                    api_version: r.api_version.into(),
                    kind: r.kind.into(),
                    name: r.name.into(),
                    uid: r.uid.into(),
                })
            });
        Self {
            json,
            types,
            key: ObjectKey {
                namespace: meta.namespace,
                name: meta.name.unwrap_or_default(),
            },
            uid: meta.uid.map(String::into_boxed_str),
            resource_version: meta.resource_version.map(String::into_boxed_str),
            generation: meta.generation,
            labels: meta
                .labels
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (Arc::from(k), Arc::from(v)))
                .collect(),
            controller,
            deleting: meta.deletion_timestamp.is_some(),
        }
    }

    /// The cached form of a decoded object (one the API answered a write with, or a test's).
    pub fn from_object(obj: &DynamicObject) -> Result<Self, serde_json::Error> {
        let incoming: Incoming = serde_json::from_str(&serde_json::to_string(obj)?)?;
        let types = Arc::new(obj.types.clone().unwrap_or_default());
        Ok(Self::new(incoming, &types))
    }

    /// The object's JSON, as a plugin is given it.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The object parsed, for a caller that must look inside it.
    pub fn decode(&self) -> Result<DynamicObject, serde_json::Error> {
        serde_json::from_str(&self.json)
    }

    /// Its apiVersion and kind.
    pub fn types(&self) -> &TypeMeta {
        &self.types
    }

    /// Its namespace and name.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// Its UID.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// Its resourceVersion.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Its generation.
    pub fn generation(&self) -> Option<i64> {
        self.generation
    }

    /// Its labels, sorted by key.
    pub fn labels(&self) -> &[(Arc<str>, Arc<str>)] {
        &self.labels
    }

    /// The value of its label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        let i = self.labels.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(&self.labels[i].1)
    }

    /// Its controller, if it has one.
    pub fn controller(&self) -> Option<&Controller> {
        self.controller.as_deref()
    }

    /// The UID of its controller.
    pub fn controller_uid(&self) -> Option<&Arc<str>> {
        self.controller.as_ref().map(|c| &c.uid)
    }

    /// Whether it is being deleted (it has a deletionTimestamp).
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// The heap bytes it holds, with the `Arc` the store keeps it in (the shared type and the
    /// label strings the label index shares are counted here, once).
    pub fn footprint(&self) -> usize {
        let text = |s: &Option<Box<str>>| s.as_deref().map_or(0, str::len);
        let labels = self.labels.len() * std::mem::size_of::<(Arc<str>, Arc<str>)>()
            + self
                .labels
                .iter()
                .map(|(k, v)| 2 * ARC_COUNTS + k.len() + v.len())
                .sum::<usize>();
        let controller = self.controller.as_ref().map_or(0, |c| {
            std::mem::size_of::<Controller>()
                + c.api_version.len()
                + c.kind.len()
                + c.name.len()
                + ARC_COUNTS
                + c.uid.len()
        });
        ARC_COUNTS
            + std::mem::size_of::<Self>()
            + self.json.len()
            + self.key.name.len()
            + self.key.namespace.as_deref().map_or(0, str::len)
            + text(&self.uid)
            + text(&self.resource_version)
            + labels
            + controller
    }
}

/// The object's JSON from its `fields`: `apiVersion` and `kind` (those of `types` where it
/// names none), `metadata`, then the others in the order they came.
fn assemble(fields: &Trimmed, types: &TypeMeta) -> Box<str> {
    let named = |key: &str, value: &str| {
        let (key, value) = (serde_json::Value::from(key), serde_json::Value::from(value));
        format!("{key}:{value}").into_bytes()
    };
    let api_version = fields
        .field(Field::ApiVersion)
        .map_or_else(|| named("apiVersion", &types.api_version), <[u8]>::to_vec);
    let kind = fields
        .field(Field::Kind)
        .map_or_else(|| named("kind", &types.kind), <[u8]>::to_vec);
    let head = [api_version.as_slice(), kind.as_slice()];
    let all: Vec<&[u8]> = head
        .into_iter()
        .chain(fields.field(Field::Metadata))
        .chain(fields.others())
        .collect();
    let mut out = Vec::with_capacity(fields.json.len() + all.len() + 1);
    out.push(b'{');
    for (i, field) in all.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(field);
    }
    out.push(b'}');
    // Every piece is serde_json's output: UTF-8.
    String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        .into_boxed_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(text: &str) -> CachedObject {
        let incoming: Incoming = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let types = Arc::new(TypeMeta {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        });
        CachedObject::new(incoming, &types)
    }

    #[test]
    fn the_header_is_read_from_the_metadata() {
        let obj = cached(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"deletionTimestamp":"2024-01-01T00:00:00Z","generation":3,"labels":{"b":"2","a":"1"},"name":"c","namespace":"ns","ownerReferences":[{"apiVersion":"weir.dev/v1alpha1","kind":"Blog","name":"x","uid":"u0"},{"apiVersion":"weir.dev/v1alpha1","controller":true,"kind":"Blog","name":"b","uid":"u1"}],"resourceVersion":"7","uid":"u2"}}"#,
        );
        assert_eq!(obj.key(), &ObjectKey::new("ns", "c"));
        assert_eq!(obj.uid(), Some("u2"));
        assert_eq!(obj.resource_version(), Some("7"));
        assert_eq!(obj.generation(), Some(3));
        assert_eq!(obj.label("a"), Some("1"));
        assert_eq!(obj.label("b"), Some("2"));
        assert_eq!(obj.label("c"), None);
        let controller = obj.controller().unwrap_or_else(|| panic!("a controller"));
        assert_eq!((&*controller.name, &*controller.uid), ("b", "u1"));
        assert!(obj.is_deleting());
    }

    #[test]
    fn a_list_item_without_types_gets_its_kinds_types_in_front() {
        let obj = cached(r#"{"data":{"k":"v"},"metadata":{"name":"c"}}"#);
        assert_eq!(
            obj.json(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}"#
        );
        assert_eq!(obj.types().kind, "ConfigMap");
        let decoded = obj.decode().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decoded.metadata.name.as_deref(), Some("c"));
    }

    #[test]
    fn a_metadata_field_of_the_wrong_type_is_refused_as_it_was_by_the_decoded_form() {
        let text = r#"{"metadata":{"name":"c","labels":{"a":1}}}"#;
        assert!(serde_json::from_str::<Incoming>(text).is_err());
        assert!(serde_json::from_str::<DynamicObject>(text).is_err());
    }
}
