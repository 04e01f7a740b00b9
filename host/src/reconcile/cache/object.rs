//! One cached object: its JSON as served (less managedFields and the last-applied annotation)
//! and the few fields the host reads without looking inside, found once when it arrives.
//!
//! A decoded JSON tree (`DynamicObject`) takes about five times its serialized size, and every
//! plugin call serialized it again; the cache keeps the bytes instead and hands them to the
//! plugin as they are. The header's strings are places in those bytes ([`super::head`]), not
//! copies. Where the host must look inside an object (a parent's status, a child it compares
//! with the desired one), [`CachedObject::decode`] parses it on demand.
//!
//! Watch events arrive as [`Incoming`], the type the watcher deserializes: the trimmed JSON, its
//! metadata (which the watcher reads: `resourceVersion`) and the header read from it.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject};
use kube::core::{DynamicResourceScope, Resource, TypeMeta};
use serde::Deserialize;

use super::head::{Head, Span};
use super::trim::{Field, Trimmed};
use crate::reconcile::queue::ObjectKey;

/// An object as a watch or list delivers it: its trimmed fields, its metadata and its header
/// (see the module documentation). Lives only until the store turns it into a [`CachedObject`].
#[derive(Clone, Debug)]
pub struct Incoming {
    meta: ObjectMeta,
    types: Option<TypeMeta>,
    fields: Trimmed,
    head: Head,
}

impl<'de> Deserialize<'de> for Incoming {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let fields = Trimmed::read(deserializer)?;
        if u32::try_from(fields.json.len()).is_err() {
            return Err(D::Error::custom("an object over 4 GiB"));
        }
        let (meta, head) = match fields.value(Field::Metadata) {
            Some(bytes) => (
                serde_json::from_slice(bytes).map_err(D::Error::custom)?,
                Head::read(bytes).map_err(D::Error::custom)?,
            ),
            None => (ObjectMeta::default(), Head::default()),
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
            head,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerRef<'a> {
    /// The owner's apiVersion.
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name (in the object's namespace).
    pub name: &'a str,
    /// The owner's UID.
    pub uid: &'a str,
}

/// One object of the cache: its JSON and its header (see the module documentation).
#[derive(Debug)]
pub struct CachedObject {
    /// The JSON (up to `json_len`), then the header strings the JSON holds escaped.
    buf: Box<str>,
    types: Arc<TypeMeta>,
    generation: Option<i64>,
    json_len: u32,
    name: Option<Span>,
    namespace: Option<Span>,
    uid: Option<Span>,
    resource_version: Option<Span>,
    /// apiVersion, kind, name and UID of the controller's reference.
    controller: Option<[Span; 4]>,
    /// Sorted by key.
    labels: Box<[(Span, Span)]>,
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
            meta: _,
            types: own,
            fields,
            head,
        } = incoming;
        let (buf, json_len, metadata) = assemble(&fields, types, &head.tail);
        let types = match own {
            Some(own) if own == **types => types.clone(),
            Some(own) => Arc::new(own),
            None => types.clone(),
        };
        // `Incoming` refuses objects whose JSON does not fit a `u32`; the few bytes added
        // around it (braces, commas, a missing apiVersion or kind) and the tail fit too, or
        // the header is left empty rather than wrong.
        let (json_len, head) = match (u32::try_from(json_len), u32::try_from(metadata)) {
            (Ok(len), Ok(metadata)) if u32::try_from(buf.len()).is_ok() => {
                (len, head.place(metadata, len))
            }
            _ => (0, Head::default().place(0, 0)),
        };
        Self {
            buf,
            types,
            generation: head.generation,
            json_len,
            name: head.name,
            namespace: head.namespace,
            uid: head.uid,
            resource_version: head.resource_version,
            controller: head.controller,
            labels: head.labels,
            deleting: head.deleting,
        }
    }

    /// The cached form of a decoded object (one the API answered a write with, or a test's).
    pub fn from_object(obj: &DynamicObject) -> Result<Self, serde_json::Error> {
        let incoming: Incoming = serde_json::from_str(&serde_json::to_string(obj)?)?;
        let types = Arc::new(obj.types.clone().unwrap_or_default());
        Ok(Self::new(incoming, &types))
    }

    fn text(&self, span: Option<Span>) -> Option<&str> {
        span.map(|s| s.of(&self.buf))
    }

    /// The object's JSON, as a plugin is given it.
    pub fn json(&self) -> &str {
        self.buf.get(..self.json_len as usize).unwrap_or_default()
    }

    /// The object parsed, for a caller that must look inside it.
    pub fn decode(&self) -> Result<DynamicObject, serde_json::Error> {
        serde_json::from_str(self.json())
    }

    /// Its apiVersion and kind.
    pub fn types(&self) -> &TypeMeta {
        &self.types
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.text(self.name).unwrap_or_default()
    }

    /// Its namespace (`None` for a cluster-scoped object).
    pub fn namespace(&self) -> Option<&str> {
        self.text(self.namespace)
    }

    /// Its namespace and name.
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            namespace: self.namespace().map(str::to_owned),
            name: self.name().to_owned(),
        }
    }

    /// Its UID.
    pub fn uid(&self) -> Option<&str> {
        self.text(self.uid)
    }

    /// Its resourceVersion.
    pub fn resource_version(&self) -> Option<&str> {
        self.text(self.resource_version)
    }

    /// Its generation.
    pub fn generation(&self) -> Option<i64> {
        self.generation
    }

    /// Its labels, sorted by key.
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.labels
            .iter()
            .map(|(k, v)| (k.of(&self.buf), v.of(&self.buf)))
    }

    /// The value of its label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        let i = self
            .labels
            .binary_search_by(|(k, _)| k.of(&self.buf).cmp(key))
            .ok()?;
        Some(self.labels[i].1.of(&self.buf))
    }

    /// Its controller, if it has one.
    pub fn controller(&self) -> Option<ControllerRef<'_>> {
        let [api_version, kind, name, uid] = self.controller?.map(|s| s.of(&self.buf));
        Some(ControllerRef {
            api_version,
            kind,
            name,
            uid,
        })
    }

    /// The UID of its controller.
    pub fn controller_uid(&self) -> Option<&str> {
        self.controller.map(|[.., uid]| uid.of(&self.buf))
    }

    /// Whether it is being deleted (it has a deletionTimestamp).
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// The heap bytes it holds, with the `Arc` the store keeps it in (the shared type,
    /// one per kind, is not counted).
    pub fn footprint(&self) -> usize {
        ARC_COUNTS
            + std::mem::size_of::<Self>()
            + self.buf.len()
            + self.labels.len() * std::mem::size_of::<(Span, Span)>()
    }
}

/// The object's buffer from its `fields` and the header's `tail`: its JSON (`apiVersion` and
/// `kind`, those of `types` where it names none, `metadata`, then the others in the order they
/// came), then the tail. Returns the buffer, the JSON's length and where the metadata's value
/// starts.
fn assemble(fields: &Trimmed, types: &TypeMeta, tail: &str) -> (Box<str>, usize, usize) {
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
    let metadata = fields.field(Field::Metadata);
    let all: Vec<&[u8]> = head
        .into_iter()
        .chain(metadata)
        .chain(fields.others())
        .collect();
    let size = all.iter().map(|f| f.len() + 1).sum::<usize>() + 1 + tail.len();
    let mut out = Vec::with_capacity(size);
    let mut metadata_at = 0;
    out.push(b'{');
    for (i, field) in all.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if i == 2 && metadata.is_some() {
            metadata_at = out.len() + fields.value_offset(Field::Metadata).unwrap_or_default();
        }
        out.extend_from_slice(field);
    }
    out.push(b'}');
    let json_len = out.len();
    out.extend_from_slice(tail.as_bytes());
    // Every piece is serde_json's output: UTF-8.
    let buf = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        .into_boxed_str();
    (buf, json_len, metadata_at)
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
        assert_eq!(obj.key(), ObjectKey::new("ns", "c"));
        assert_eq!(obj.uid(), Some("u2"));
        assert_eq!(obj.resource_version(), Some("7"));
        assert_eq!(obj.generation(), Some(3));
        assert_eq!(obj.label("a"), Some("1"));
        assert_eq!(obj.label("b"), Some("2"));
        assert_eq!(obj.label("c"), None);
        let controller = obj.controller().unwrap_or_else(|| panic!("a controller"));
        assert_eq!((controller.name, controller.uid), ("b", "u1"));
        assert_eq!(obj.controller_uid(), Some("u1"));
        assert!(obj.is_deleting());
    }

    #[test]
    fn a_header_string_the_json_holds_escaped_is_read_unescaped_and_the_json_kept_as_it_came() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"a\"q":"x\\y","b":"é"},"name":"c","namespace":"ns","ownerReferences":[{"apiVersion":"v1","controller":true,"kind":"K\"","name":"o","uid":"u\n1"}]}}"#;
        let obj = cached(text);
        assert_eq!(obj.json(), text);
        assert_eq!(obj.label("a\"q"), Some("x\\y"));
        assert_eq!(obj.label("b"), Some("\u{e9}"));
        assert_eq!(
            obj.labels().collect::<Vec<_>>(),
            [("a\"q", "x\\y"), ("b", "\u{e9}")]
        );
        let controller = obj.controller().unwrap_or_else(|| panic!("a controller"));
        assert_eq!(
            (controller.kind, controller.name, controller.uid),
            ("K\"", "o", "u\n1")
        );
        assert_eq!(obj.name(), "c");
        assert_eq!(obj.namespace(), Some("ns"));
    }

    #[test]
    fn the_header_of_an_object_without_metadata_is_empty() {
        let obj = cached(r#"{"data":{}}"#);
        assert_eq!(
            obj.key(),
            ObjectKey {
                namespace: None,
                name: String::new()
            }
        );
        assert_eq!(obj.uid(), None);
        assert_eq!(obj.labels().len(), 0);
        assert!(obj.controller().is_none());
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
