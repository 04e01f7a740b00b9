//! The header of a cached object: the few strings the host reads without looking inside it.
//!
//! Its name, namespace, UID, resourceVersion, labels and its controller's reference are read
//! once from the object's metadata and written out one after the other in a short text of
//! their own (unescaped), each kept as a [`Span`] of that text. The object's JSON itself is
//! kept packed ([`super::object`]), so nothing the host reads often has to unpack it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, Visitor};
use serde::{Deserialize, Deserializer};

/// Where one header string is in its object's header text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// The span's text in `text` (empty if `text` is not the one it was made for).
    pub(super) fn of(self, text: &str) -> &str {
        let start = self.start as usize;
        text.get(start..start + self.len as usize)
            .unwrap_or_default()
    }
}

/// The header of one object, each string a place in [`Head::text`].
#[derive(Clone, Debug, Default)]
pub(super) struct Head {
    pub name: Option<Span>,
    pub namespace: Option<Span>,
    pub uid: Option<Span>,
    pub resource_version: Option<Span>,
    pub generation: Option<i64>,
    /// Sorted by key, each key once.
    pub labels: Box<[(Span, Span)]>,
    /// Of the controller's reference: apiVersion, kind, name and UID.
    pub controller: Option<[Span; 4]>,
    pub deleting: bool,
    /// The header's strings, written out one after the other.
    pub text: String,
}

impl Head {
    /// Reads the header from the JSON of an object's `metadata`.
    pub(super) fn read(metadata: &[u8]) -> Result<Self, serde_json::Error> {
        let raw: RawMeta<'_> = serde_json::from_slice(metadata)?;
        let labels = raw.labels.unwrap_or_default();
        let controller = raw
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .find(|r| r.controller == Some(true))
            .map(|r| [r.api_version, r.kind, r.name, r.uid]);
        let singles = [&raw.name, &raw.namespace, &raw.uid, &raw.resource_version];
        let size = singles
            .iter()
            .filter_map(|t| t.as_ref())
            .map(Text::len)
            .sum::<usize>()
            + labels.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
            + controller.iter().flatten().map(Text::len).sum::<usize>();
        if u32::try_from(size).is_err() {
            return Err(de::Error::custom("an object's metadata over 4 GiB"));
        }
        // Sized once, so the text is one allocation of its own size.
        let mut text = String::with_capacity(size);
        let mut at = |s: Text<'_>| {
            // Within `size`, which fits a `u32`.
            let place = Span {
                start: text.len() as u32,
                len: s.len() as u32,
            };
            text.push_str(&s.0);
            place
        };
        let name = raw.name.map(&mut at);
        let namespace = raw.namespace.map(&mut at);
        let uid = raw.uid.map(&mut at);
        let resource_version = raw.resource_version.map(&mut at);
        let mut spans = Vec::with_capacity(labels.len());
        for (k, v) in labels {
            spans.push((at(k), at(v)));
        }
        let controller = controller.map(|c| c.map(&mut at));
        Ok(Self {
            name,
            namespace,
            uid,
            resource_version,
            generation: raw.generation,
            labels: spans.into_boxed_slice(),
            controller,
            deleting: raw.deletion_timestamp.is_some(),
            text,
        })
    }
}

/// The metadata fields the header reads (the others are skipped).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMeta<'a> {
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    namespace: Option<Text<'a>>,
    #[serde(borrow, default)]
    uid: Option<Text<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<Text<'a>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<Text<'a>, Text<'a>>>,
    #[serde(borrow, default)]
    owner_references: Option<Vec<RawOwner<'a>>>,
    #[serde(default)]
    deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawOwner<'a> {
    #[serde(borrow)]
    api_version: Text<'a>,
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    uid: Text<'a>,
    #[serde(default)]
    controller: Option<bool>,
}

/// A JSON string, borrowed from the input when it holds no escape.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Text<'a>(Cow<'a, str>);

impl Text<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor(PhantomData))
    }
}

struct TextVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
    type Value = Text<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Owned(v)))
    }
}
