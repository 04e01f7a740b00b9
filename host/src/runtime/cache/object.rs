//! One cached object: its JSON as served (less managedFields and the last-applied annotation),
//! packed, and the few fields the host reads without looking inside, found once when it arrives.
//!
//! A decoded JSON tree (`DynamicObject`) takes about five times its serialized size, and every
//! plugin call serialized it again; the cache keeps the bytes instead and hands them to the
//! plugin as they are. The bytes are packed with LZ4 against a dictionary shared by the
//! objects of one kind ([`Packing`]): the first object of the kind the store receives. Objects
//! of one kind share most of their text (field names, defaults, owner references): a Blog
//! host's objects took 1,463 bytes each unpacked, 771 packed (`tests/BENCHMARKS.md`). The
//! header's strings are kept unpacked beside it ([`super::head`]). Where the host must look
//! inside an object (a parent's status, a child it compares with the desired one),
//! [`CachedObject::decode`] unpacks and parses it on demand.
//!
//! Watch events arrive as [`Incoming`], the type the watcher deserializes: the trimmed JSON, its
//! metadata (which the watcher reads: `resourceVersion`) and the header read from it.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject};
use kube::core::{DynamicResourceScope, Resource, TypeMeta};
use serde::Deserialize;

use super::head::{Head, Span};
use super::trim::{Field, Trimmed};
use crate::runtime::ObjectKey;

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

/// At most this much of the first object becomes its kind's dictionary: its beginning (types
/// and metadata) is what the others share most.
const DICTIONARY_LIMIT: usize = 16 << 10;

/// A thread's buffer for packing is kept up to this size.
const SCRATCH_KEPT: usize = 64 << 10;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How the objects of one kind are packed: their apiVersion and kind, and the dictionary their
/// JSON is packed against (see the module documentation). One per store, shared by its objects.
#[derive(Debug)]
pub struct Packing {
    types: TypeMeta,
    /// Set by the first object packed (its JSON), or empty for objects packed one by one.
    dictionary: OnceLock<Box<[u8]>>,
}

impl Packing {
    /// The packing of a kind's store: its first object's JSON becomes the dictionary.
    pub fn learning(types: TypeMeta) -> Self {
        Self {
            types,
            dictionary: OnceLock::new(),
        }
    }

    /// The packing of an object on its own (no dictionary).
    pub fn plain(types: TypeMeta) -> Self {
        Self {
            types,
            dictionary: OnceLock::from(Box::default()),
        }
    }

    /// The apiVersion and kind of its objects.
    pub fn types(&self) -> &TypeMeta {
        &self.types
    }

    /// The dictionary's heap bytes (none until the first object is packed).
    pub fn dictionary_bytes(&self) -> usize {
        self.dictionary.get().map_or(0, |d| d.len())
    }

    fn pack(&self, json: &[u8]) -> Box<[u8]> {
        let dictionary = self
            .dictionary
            .get_or_init(|| json.get(..DICTIONARY_LIMIT).unwrap_or(json).into());
        // Packed into a buffer kept per thread, then copied out at its size: one allocation
        // that stays, none shrunk in place (which would leave the heap in small pieces).
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.resize(lz4_flex::block::get_maximum_output_size(json.len()), 0);
            let packed = match lz4_flex::block::compress_into_with_dict(json, scratch, dictionary) {
                Ok(len) => scratch.get(..len).map(Box::from),
                Err(_) => None,
            };
            if scratch.capacity() > SCRATCH_KEPT {
                *scratch = Vec::new();
            }
            packed.unwrap_or_else(|| {
                lz4_flex::block::compress_with_dict(json, dictionary).into_boxed_slice()
            })
        })
    }

    fn unpack(&self, packed: &[u8], len: usize) -> Option<String> {
        let dictionary = self.dictionary.get().map_or(&[][..], |d| &d[..]);
        let bytes = lz4_flex::block::decompress_with_dict(packed, len, dictionary).ok()?;
        String::from_utf8(bytes).ok()
    }
}

/// One object of the cache: its JSON packed and its header (see the module documentation).
#[derive(Debug)]
pub struct CachedObject {
    /// The JSON, packed against `packing`'s dictionary.
    packed: Box<[u8]>,
    /// The header's strings.
    text: Box<str>,
    packing: Arc<Packing>,
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
    /// The object `incoming` describes, packed as `packing` packs its kind, whose types it
    /// takes when its JSON names none (list items often do not). Its JSON has `apiVersion`,
    /// `kind` and `metadata` first, then the other fields in the order they came.
    pub fn new(incoming: Incoming, packing: &Arc<Packing>) -> Self {
        let Incoming {
            meta: _,
            types: own,
            fields,
            head,
        } = incoming;
        let json = assemble(&fields, &packing.types);
        let packing = match own {
            Some(own) if own == packing.types => packing.clone(),
            Some(own) => Arc::new(Packing::plain(own)),
            None => packing.clone(),
        };
        // `Incoming` refuses objects whose JSON does not fit a `u32`; the few bytes added
        // around it (braces, commas, a missing apiVersion or kind) fit too, or the object is
        // kept empty rather than cut.
        let (json_len, packed) = match u32::try_from(json.len()) {
            Ok(len) => (len, packing.pack(&json)),
            Err(_) => (0, packing.pack(b"")),
        };
        Self {
            packed,
            // Its capacity is its length: boxing it does not move it.
            text: head.text.into_boxed_str(),
            packing,
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

    /// The cached form of a decoded object on its own (one the API answered a write with, or
    /// a test's).
    pub fn from_object(obj: &DynamicObject) -> Result<Self, serde_json::Error> {
        let packing = Arc::new(Packing::plain(obj.types.clone().unwrap_or_default()));
        Self::from_object_packed(obj, &packing)
    }

    /// The cached form of a decoded object for a store that packs its kind as `packing` does.
    pub fn from_object_packed(
        obj: &DynamicObject,
        packing: &Arc<Packing>,
    ) -> Result<Self, serde_json::Error> {
        let incoming: Incoming = serde_json::from_str(&serde_json::to_string(obj)?)?;
        Ok(Self::new(incoming, packing))
    }

    fn text(&self, span: Option<Span>) -> Option<&str> {
        span.map(|s| s.of(&self.text))
    }

    /// The object's JSON, as a plugin is given it.
    pub fn json(&self) -> String {
        // Packed here from valid UTF-8 against the same dictionary: unpacking cannot fail.
        self.packing
            .unpack(&self.packed, self.json_len as usize)
            .unwrap_or_else(|| {
                tracing::error!(kind = %self.types().kind, namespace = ?self.namespace(), name = self.name(), "a cached object could not be unpacked");
                String::new()
            })
    }

    /// The object parsed, for a caller that must look inside it.
    pub fn decode(&self) -> Result<DynamicObject, serde_json::Error> {
        serde_json::from_str(&self.json())
    }

    /// Its apiVersion and kind.
    pub fn types(&self) -> &TypeMeta {
        &self.packing.types
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
            .map(|(k, v)| (k.of(&self.text), v.of(&self.text)))
    }

    /// The value of its label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        let i = self
            .labels
            .binary_search_by(|(k, _)| k.of(&self.text).cmp(key))
            .ok()?;
        Some(self.labels[i].1.of(&self.text))
    }

    /// Its controller, if it has one.
    pub fn controller(&self) -> Option<ControllerRef<'_>> {
        let [api_version, kind, name, uid] = self.controller?.map(|s| s.of(&self.text));
        Some(ControllerRef {
            api_version,
            kind,
            name,
            uid,
        })
    }

    /// The UID of its controller.
    pub fn controller_uid(&self) -> Option<&str> {
        self.controller.map(|[.., uid]| uid.of(&self.text))
    }

    /// Whether it is being deleted (it has a deletionTimestamp).
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// The heap bytes it holds, with the `Arc` the store keeps it in (its kind's packing,
    /// shared, is counted by the store).
    pub fn footprint(&self) -> usize {
        ARC_COUNTS
            + std::mem::size_of::<Self>()
            + self.packed.len()
            + self.text.len()
            + self.labels.len() * std::mem::size_of::<(Span, Span)>()
    }
}

/// The object's JSON from its `fields`: `apiVersion` and `kind` (those of `types` where it names
/// none), `metadata`, then the others in the order they came.
fn assemble(fields: &Trimmed, types: &TypeMeta) -> Vec<u8> {
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
    let size = all.iter().map(|f| f.len() + 1).sum::<usize>() + 1;
    let mut out = Vec::with_capacity(size);
    out.push(b'{');
    for (i, field) in all.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(field);
    }
    out.push(b'}');
    out
}

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;
