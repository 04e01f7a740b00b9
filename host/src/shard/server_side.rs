//! Server-side sharding (KEP-5866, alpha in Kubernetes 1.36): whether the API server filters
//! lists and watches by `shardSelector`, and the selector of one member's share of a ring.
//!
//! A server with the `ShardedListAndWatch` feature gate on accepts
//! `shardSelector=shardRange(object.metadata.uid, '0x…', '0x…') || …` on list and watch and
//! returns only the objects whose uid's 64-bit FNV-1a hash falls in one of the ranges. A client
//! learns that it is served from the OpenAPI v3 document, which then lists the parameter on
//! each collection's `GET` ([`offered`]); a server without it ignores the parameter and sends
//! everything (so a client must check before relying on it). Each list answer also echoes the
//! selector it applied in `metadata.shardInfo`.
//!
//! Placing the ring's keys by that same hash ([`super::ring::Ring::owner_of_hash`] of
//! [`fnv1a`] of the uid), a member's share is exactly [`selector`] of its ranges, which lets a
//! replica watch its share without the owner label: a `--shard` replica that finds the
//! parameter offered ([`offered`], when it joins) shards this way ([`super::share`]).

use kube::Client;
use serde_json::Value;

use super::ring::Ring;

/// The list and watch query parameter.
pub const PARAM: &str = "shardSelector";

/// The 64-bit FNV-1a hash of `text`: the hash the API server shards by.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The `shardSelector` of `member`'s share of `ring`, keyed by uid; `None` when it owns nothing.
pub fn selector(ring: &Ring, member: &str) -> Option<String> {
    let ranges = ring.ranges(member);
    (!ranges.is_empty()).then(|| selector_of(&ranges))
}

/// The `shardSelector` of the uid hashes in `ranges` (half-open, `end` up to 2^64); with no
/// range, one that selects nothing (an empty range).
pub fn selector_of(ranges: &[(u128, u128)]) -> String {
    if ranges.is_empty() {
        return "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000000')"
            .into();
    }
    let terms: Vec<String> = ranges
        .iter()
        .map(|(start, end)| {
            format!("shardRange(object.metadata.uid, '0x{start:016x}', '0x{end:016x}')")
        })
        .collect();
    terms.join(" || ")
}

/// Whether the API server filters by `shardSelector`: its OpenAPI v3 document of the core group
/// lists the parameter on a collection's `GET`.
pub async fn offered(client: &Client) -> Result<bool, kube::Error> {
    let request = http::Request::get("/openapi/v3/api/v1")
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    let document: Value = client.request(request).await?;
    Ok(lists_the_parameter(&document))
}

/// Whether some operation of `document` takes [`PARAM`].
fn lists_the_parameter(document: &Value) -> bool {
    let Some(paths) = document["paths"].as_object() else {
        return false;
    };
    let takes = |op: &Value| {
        op["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["name"] == PARAM))
    };
    paths
        .values()
        .any(|path| takes(path) || takes(&path["get"]))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams, PostParams};
    use serde_json::json;
    use weir_emulator::{Emulator, EmulatorConfig};

    use super::*;
    use crate::shard::ring::VNODES;

    async fn emulator(sharded: bool) -> Emulator {
        Emulator::start(EmulatorConfig {
            sharded_list_watch: sharded,
            ..EmulatorConfig::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The names `GET` with `member`'s selector lists.
    async fn listed(client: &Client, selector: &str) -> BTreeSet<String> {
        let encoded: String = selector
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => char::from(b).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let path = format!("/api/v1/namespaces/default/configmaps?{PARAM}={encoded}");
        let request = http::Request::get(path)
            .body(Vec::new())
            .unwrap_or_else(|e| panic!("{e}"));
        let list: Value = client
            .request(request)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list["metadata"]["shardInfo"]["selector"], selector);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn fnv1a_is_the_reference_64_bit_hash() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[tokio::test]
    async fn each_members_selector_lists_exactly_the_objects_the_ring_gives_it() {
        let emulator = emulator(true).await;
        let client = emulator.client();
        assert!(offered(&client).await.unwrap_or_else(|e| panic!("{e}")));
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let ring = Ring::new(["weir-0", "weir-1", "weir-2"], VNODES);
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for i in 0..60 {
            let cm: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}}))
                    .unwrap_or_else(|e| panic!("{e}"));
            let created = api
                .create(&PostParams::default(), &cm)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let uid = created.metadata.uid.unwrap_or_default();
            let owner = ring.owner_of_hash(fnv1a(&uid)).unwrap_or_default();
            expected
                .entry(owner.to_owned())
                .or_default()
                .insert(format!("cm-{i}"));
        }
        assert_eq!(expected.len(), 3, "every member owns some: {expected:?}");
        for member in ring.members() {
            let selector = selector(&ring, member).unwrap_or_default();
            assert_eq!(
                listed(&client, &selector).await,
                expected.get(member).cloned().unwrap_or_default(),
                "{member}"
            );
        }
        let all = api
            .list(&ListParams::default())
            .await
            .map(|l| l.items.len());
        assert_eq!(all.ok(), Some(60));
    }

    #[tokio::test]
    async fn a_server_without_the_feature_does_not_offer_it() {
        let emulator = emulator(false).await;
        assert!(
            !offered(&emulator.client())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        );
    }

    #[test]
    fn a_member_without_points_has_no_selector() {
        let ring = Ring::new(["a"], 4);
        assert_eq!(selector(&ring, "b"), None);
        assert_eq!(
            selector(&ring, "a").as_deref(),
            Some("shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')")
        );
    }
}
