//! Server-side sharded list and watch (KEP-5866, alpha in Kubernetes 1.36): the `shardSelector`
//! query parameter.
//!
//! A selector is one or more `shardRange(FIELD, 'START', 'END')` joined by `||`. `FIELD` is
//! `object.metadata.uid` or `object.metadata.namespace`; the bounds are hexadecimal with a `0x`
//! prefix, `START` inclusive and `END` exclusive, and `END` may be `0x10000000000000000` (2^64)
//! to close the last range. An object matches when the 64-bit FNV-1a hash of its field's value
//! falls in one of the ranges.
//!
//! As an alpha feature it is off unless the emulator is started with
//! [`crate::EmulatorConfig::sharded_list_watch`] (kube-apiserver's `ShardedListAndWatch` feature
//! gate). Off, the parameter is ignored, as a server without the feature ignores an unknown query
//! parameter. On, a list answers with `metadata.shardInfo.selector` echoing the selector it
//! applied (so does a watch's `initial-events-end` bookmark), and the OpenAPI v3 document lists
//! `shardSelector` among each collection's `GET` parameters: a client learns that the server
//! filters either way, before relying on it.

/// The query parameter.
pub const PARAM: &str = "shardSelector";

/// A `shardSelector` that could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unable to parse shardSelector {selector:?}: {reason}")]
pub struct Error {
    selector: String,
    reason: String,
}

/// The field a range hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Uid,
    Namespace,
}

impl Field {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "object.metadata.uid" => Some(Self::Uid),
            "object.metadata.namespace" => Some(Self::Namespace),
            _ => None,
        }
    }

    fn value<'a>(self, obj: &'a serde_json::Value) -> &'a str {
        let name = match self {
            Self::Uid => "uid",
            Self::Namespace => "namespace",
        };
        obj["metadata"][name].as_str().unwrap_or("")
    }
}

/// One `shardRange(field, start, end)`: `start <= hash < end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    field: Field,
    start: u128,
    end: u128,
}

/// A parsed `shardSelector`; the empty one (no parameter) selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardSelector {
    ranges: Vec<Range>,
    text: String,
}

/// The 64-bit FNV-1a hash of `text`, the hash the API server shards by.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl ShardSelector {
    /// Parses the parameter's value (empty: select everything).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let fail = |reason: &str| Error {
            selector: text.to_owned(),
            reason: reason.to_owned(),
        };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let ranges = text
            .split("||")
            .map(|term| parse_range(term.trim()).map_err(fail))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            ranges,
            text: text.to_owned(),
        })
    }

    /// Whether no selector was given.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `obj` falls in one of the ranges.
    pub fn matches(&self, obj: &serde_json::Value) -> bool {
        self.is_empty()
            || self.ranges.iter().any(|r| {
                let hash = u128::from(fnv1a(r.field.value(obj)));
                r.start <= hash && hash < r.end
            })
    }

    /// The `shardInfo` a list or the initial events' end carries (none without a selector).
    pub fn info(&self) -> Option<serde_json::Value> {
        (!self.is_empty()).then(|| serde_json::json!({"selector": self.text}))
    }
}

/// `shardRange(field, 'start', 'end')`.
fn parse_range(term: &str) -> Result<Range, &'static str> {
    let args = term
        .strip_prefix("shardRange")
        .map(str::trim_start)
        .and_then(|t| t.strip_prefix('('))
        .and_then(|t| t.strip_suffix(')'))
        .ok_or("expected shardRange(field, 'start', 'end')")?;
    let parts: Vec<&str> = args.split(',').map(str::trim).collect();
    let [field, start, end] = parts[..] else {
        return Err("shardRange takes three arguments");
    };
    let field = Field::parse(field)
        .ok_or("the field must be object.metadata.uid or object.metadata.namespace")?;
    let (start, end) = (bound(start)?, bound(end)?);
    if start > end {
        return Err("a range's start is after its end");
    }
    Ok(Range { field, start, end })
}

/// A quoted `0x` hexadecimal bound, at most 2^64.
fn bound(arg: &str) -> Result<u128, &'static str> {
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| arg.strip_prefix(*q).and_then(|a| a.strip_suffix(*q)))
        .ok_or("a bound must be a quoted string")?;
    let hex = unquoted
        .strip_prefix("0x")
        .or_else(|| unquoted.strip_prefix("0X"))
        .filter(|h| !h.is_empty() && h.len() <= 17)
        .ok_or("a bound must be 0x followed by at most 17 hexadecimal digits")?;
    let value = u128::from_str_radix(hex, 16).map_err(|_| "a bound is not hexadecimal")?;
    if value > 1 << 64 {
        return Err("a bound exceeds 0x10000000000000000");
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(uid: &str) -> serde_json::Value {
        json!({"metadata": {"name": "x", "namespace": "ns", "uid": uid}})
    }

    #[test]
    fn fnv1a_is_the_reference_64_bit_hash() {
        // The published FNV-1a test vectors.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn two_halves_split_the_objects_between_them_and_together_select_all() {
        let (low, high) = (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
        );
        let both =
            ShardSelector::parse(&format!("{low} || {high}")).unwrap_or_else(|e| panic!("{e}"));
        let low = ShardSelector::parse(low).unwrap_or_else(|e| panic!("{e}"));
        let high = ShardSelector::parse(high).unwrap_or_else(|e| panic!("{e}"));
        let mut in_low = 0;
        for i in 0..200u64 {
            // Like a random UUID: its first characters differ (FNV-1a's high bits barely
            // depend on the last few characters alone).
            let obj = object(&format!(
                "{:016x}-4000-8000",
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ));
            assert_ne!(low.matches(&obj), high.matches(&obj), "exactly one half");
            assert!(both.matches(&obj));
            in_low += usize::from(low.matches(&obj));
        }
        assert!(
            (60..140).contains(&in_low),
            "{in_low} of 200 in the low half"
        );
    }

    #[test]
    fn a_range_is_start_inclusive_end_exclusive_on_the_hash() {
        let hash = fnv1a("u-1");
        let range = |start: u128, end: u128| {
            ShardSelector::parse(&format!(
                "shardRange(object.metadata.uid, '0x{start:x}', '0x{end:x}')"
            ))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let h = u128::from(hash);
        assert!(range(h, h + 1).matches(&object("u-1")));
        assert!(!range(h + 1, h + 2).matches(&object("u-1")));
        assert!(!range(h - 1, h).matches(&object("u-1")));
    }

    #[test]
    fn the_namespace_can_be_the_key_and_no_selector_selects_everything() {
        let ns = u128::from(fnv1a("ns"));
        let by_ns = ShardSelector::parse(&format!(
            "shardRange(object.metadata.namespace, \"0x{ns:x}\", \"0x{:x}\")",
            ns + 1
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(by_ns.matches(&object("any")));
        let none = ShardSelector::parse("").unwrap_or_else(|e| panic!("{e}"));
        assert!(none.is_empty() && none.matches(&object("any")) && none.info().is_none());
    }

    #[test]
    fn malformed_selectors_are_refused() {
        for bad in [
            "shardRange(object.metadata.name, '0x0', '0x1')",
            "shardRange(object.metadata.uid, '0x0')",
            "shardRange(object.metadata.uid, 0x0, '0x1')",
            "shardRange(object.metadata.uid, '0x2', '0x1')",
            "shardRange(object.metadata.uid, '0x0', '0x10000000000000001')",
            "shardRange(object.metadata.uid, '0xzz', '0x1')",
            "labels(app)",
        ] {
            assert!(ShardSelector::parse(bad).is_err(), "{bad}");
        }
    }
}
