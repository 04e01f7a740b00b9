use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use weir_emulator::{Emulator, EmulatorConfig};

use super::*;

fn ring(members: &[&str]) -> Ring {
    Ring::new(members.iter().copied(), VNODES)
}

/// Sample hashes spread over the whole space.
fn samples() -> impl Iterator<Item = u64> {
    (0..4096u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

fn contains(ranges: &[(u128, u128)], h: u64) -> bool {
    let h = u128::from(h);
    ranges.iter().any(|(s, e)| *s <= h && h < *e)
}

#[test]
fn with_every_member_on_one_view_each_serves_exactly_its_part_of_the_ring() {
    let members = ["a", "b", "c"];
    let view = ring(&members);
    let claims: Vec<(String, Ring)> = members
        .iter()
        .map(|m| ((*m).to_owned(), view.clone()))
        .collect();
    for me in members {
        let others: Vec<(String, Ring)> = claims.iter().filter(|(m, _)| m != me).cloned().collect();
        assert_eq!(claimable(me, &view, &others), view.ranges(me), "{me}");
    }
}

#[test]
fn a_joining_member_takes_nothing_another_still_claims_and_no_hash_is_served_twice() {
    let (old, new) = (ring(&["a", "b", "c"]), ring(&["a", "b", "c", "d"]));
    // d published the new view; a, b and c still the old one.
    let others_of_d: Vec<(String, Ring)> = ["a", "b", "c"]
        .iter()
        .map(|m| ((*m).to_owned(), old.clone()))
        .collect();
    let d = claimable("d", &new, &others_of_d);
    assert!(d.is_empty(), "all of d's hashes are still claimed: {d:?}");
    // a moved to the new view first: it narrowed to what both give it; d takes what a gave up.
    let a = claimable(
        "a",
        &new,
        &[
            ("b".into(), old.clone()),
            ("c".into(), old.clone()),
            ("d".into(), new.clone()),
        ],
    );
    let d = claimable(
        "d",
        &new,
        &[
            ("a".into(), new.clone()),
            ("b".into(), old.clone()),
            ("c".into(), old.clone()),
        ],
    );
    let (b, c) = (
        claimable(
            "b",
            &old,
            &[
                ("a".into(), new.clone()),
                ("c".into(), old.clone()),
                ("d".into(), new.clone()),
            ],
        ),
        claimable(
            "c",
            &old,
            &[
                ("a".into(), new.clone()),
                ("b".into(), old.clone()),
                ("d".into(), new.clone()),
            ],
        ),
    );
    assert!(!d.is_empty(), "d serves what a gave up");
    for h in samples() {
        let servers = [&a, &b, &c, &d].iter().filter(|r| contains(r, h)).count();
        assert!(servers <= 1, "hash {h:#x} served {servers} times");
        if contains(&d, h) {
            assert_eq!(new.owner_of_hash(h), Some("d"));
            assert_eq!(
                old.owner_of_hash(h),
                Some("a"),
                "only a's old hashes so far"
            );
        }
    }
}

#[test]
fn intersecting_keeps_only_what_both_cover() {
    assert_eq!(
        intersect(&[(0, 10), (20, 30)], &[(5, 25)]),
        vec![(5, 10), (20, 25)]
    );
    assert!(intersect(&[(0, 10)], &[]).is_empty());
}

#[tokio::test]
async fn the_share_serves_what_it_was_given_and_its_client_lists_only_that() {
    let emulator = Emulator::start(EmulatorConfig {
        sharded_list_watch: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let client = emulator.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut uids = Vec::new();
    for i in 0..40 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}}))
                .unwrap_or_else(|e| panic!("{e}"));
        let created = api
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        uids.push((format!("cm-{i}"), created.metadata.uid.unwrap_or_default()));
    }
    let share = Share::new();
    let selected: Api<ConfigMap> = Api::namespaced(share.client(&client), "default");
    let names = |list: kube::core::ObjectList<ConfigMap>| -> BTreeSet<String> {
        list.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect()
    };
    let listed = selected.list(&ListParams::default()).await;
    assert!(
        names(listed.unwrap_or_else(|e| panic!("{e}"))).is_empty(),
        "serving nothing"
    );

    let half: Ranges = vec![(0, 1 << 63)];
    let changes = share.changes();
    share.serve(half.clone()).await;
    assert!(
        changes.has_changed().unwrap_or(false),
        "the watches are told"
    );
    let expected: BTreeSet<String> = uids
        .iter()
        .filter(|(_, uid)| Share::covers(&half, uid))
        .map(|(name, _)| name.clone())
        .collect();
    assert!(!expected.is_empty() && expected.len() < 40, "{expected:?}");
    let listed = selected.list(&ListParams::default()).await;
    assert_eq!(names(listed.unwrap_or_else(|e| panic!("{e}"))), expected);
}
