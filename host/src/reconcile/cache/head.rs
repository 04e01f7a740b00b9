//! The header of a cached object read from its metadata as places in its JSON, not as copies.
//!
//! The few strings the host reads without parsing an object (its name, namespace, UID,
//! resourceVersion, labels and its controller's reference) are all in the object's JSON
//! already, and JSON holds such strings unescaped unless they contain a quote, a backslash or a
//! control character. Each is kept as a [`Span`] of the object's buffer: the JSON itself, or,
//! for a string the JSON holds escaped, a short tail after the JSON where it is written out.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, Visitor};
use serde::{Deserialize, Deserializer};

/// Where one header string is in its object's buffer (JSON, then tail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// The span's text in `buf` (empty if `buf` is not the buffer it was made for).
    pub(super) fn of(self, buf: &str) -> &str {
        let start = self.start as usize;
        buf.get(start..start + self.len as usize)
            .unwrap_or_default()
    }
}

/// A header string as read: in the metadata's JSON, or in the tail.
#[derive(Clone, Copy, Debug)]
enum At {
    Metadata(Span),
    Tail(Span),
}

/// The header of one object, each string a place in its metadata's JSON or in [`Head::tail`].
#[derive(Clone, Debug, Default)]
pub(super) struct Head {
    name: Option<At>,
    namespace: Option<At>,
    uid: Option<At>,
    resource_version: Option<At>,
    generation: Option<i64>,
    /// Sorted by key, each key once.
    labels: Vec<(At, At)>,
    /// Of the controller's reference: apiVersion, kind, name and UID.
    controller: Option<[At; 4]>,
    deleting: bool,
    /// The strings the JSON holds escaped, written out one after the other.
    pub(super) tail: String,
}

/// The header with every string placed in an object's buffer: the metadata's JSON starts at
/// `metadata` in it, the tail at `tail`.
#[derive(Debug)]
pub(super) struct Placed {
    pub name: Option<Span>,
    pub namespace: Option<Span>,
    pub uid: Option<Span>,
    pub resource_version: Option<Span>,
    pub generation: Option<i64>,
    pub labels: Box<[(Span, Span)]>,
    pub controller: Option<[Span; 4]>,
    pub deleting: bool,
}

impl Head {
    /// Reads the header from the JSON of an object's `metadata`.
    pub(super) fn read(metadata: &[u8]) -> Result<Self, serde_json::Error> {
        let raw: RawMeta<'_> = serde_json::from_slice(metadata)?;
        let base = metadata.as_ptr() as usize;
        let mut tail = String::new();
        let mut at = |text: Text<'_>| -> Result<At, serde_json::Error> {
            match text.0 {
                // A borrowed string lies inside `metadata`: its offset is its place there.
                Cow::Borrowed(s) => {
                    let offset = (s.as_ptr() as usize).checked_sub(base);
                    let offset =
                        offset.ok_or_else(|| de::Error::custom("a string outside its metadata"))?;
                    Ok(At::Metadata(span(offset, s.len())?))
                }
                Cow::Owned(s) => {
                    let place = span(tail.len(), s.len())?;
                    tail.push_str(&s);
                    Ok(At::Tail(place))
                }
            }
        };
        let mut place = |text: Option<Text<'_>>| text.map(&mut at).transpose();
        let name = place(raw.name)?;
        let namespace = place(raw.namespace)?;
        let uid = place(raw.uid)?;
        let resource_version = place(raw.resource_version)?;
        let labels = raw
            .labels
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| Ok((at(k)?, at(v)?)))
            .collect::<Result<Vec<_>, serde_json::Error>>()?;
        let controller = raw
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .find(|r| r.controller == Some(true))
            .map(|r| -> Result<[At; 4], serde_json::Error> {
                Ok([at(r.api_version)?, at(r.kind)?, at(r.name)?, at(r.uid)?])
            })
            .transpose()?;
        Ok(Self {
            name,
            namespace,
            uid,
            resource_version,
            generation: raw.generation,
            labels,
            controller,
            deleting: raw.deletion_timestamp.is_some(),
            tail,
        })
    }

    /// The header placed in a buffer whose metadata JSON starts at `metadata` and whose tail at
    /// `tail` (both checked by the caller to keep every span within `u32`).
    pub(super) fn place(&self, metadata: u32, tail: u32) -> Placed {
        let to = |at: At| match at {
            At::Metadata(s) => Span {
                start: s.start + metadata,
                len: s.len,
            },
            At::Tail(s) => Span {
                start: s.start + tail,
                len: s.len,
            },
        };
        Placed {
            name: self.name.map(to),
            namespace: self.namespace.map(to),
            uid: self.uid.map(to),
            resource_version: self.resource_version.map(to),
            generation: self.generation,
            labels: self.labels.iter().map(|&(k, v)| (to(k), to(v))).collect(),
            controller: self.controller.map(|c| c.map(to)),
            deleting: self.deleting,
        }
    }
}

fn span(start: usize, len: usize) -> Result<Span, serde_json::Error> {
    let too_large = || <serde_json::Error as de::Error>::custom("an object's metadata over 4 GiB");
    Ok(Span {
        start: u32::try_from(start).map_err(|_| too_large())?,
        len: u32::try_from(len).map_err(|_| too_large())?,
    })
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
