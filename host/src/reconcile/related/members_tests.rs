//! A selection naming a member cluster (contract 0.4.0): read there when the policy grants the
//! plugin that cluster and the host has engaged it, refused otherwise, and indexed by cluster.

use std::collections::BTreeSet;

use super::tests::{kind, reader};
use super::*;
use crate::answer::Grant;

fn info() -> PluginInfo {
    reader(vec![kind("ConfigMap", true)], vec![kind("ConfigMap", true)])
}

/// A fleet as the check sees it: the policy's entry for the plugin, and the members engaged
/// and listed now.
struct Fleet {
    grant: Grant,
    engaged: BTreeSet<&'static str>,
}

impl Fleet {
    fn granting(clusters: &[&str], engaged: &[&'static str]) -> Self {
        Fleet {
            grant: Grant {
                clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
                ..Grant::default()
            },
            engaged: engaged.iter().copied().collect(),
        }
    }
}

impl MemberReach for Fleet {
    fn granted(&self, cluster: &str) -> bool {
        self.grant.allows_cluster(cluster, None)
    }

    fn grants(&self) -> String {
        self.grant.clusters_said()
    }

    fn reads(&self, cluster: &str, kind: &ResourceKind) -> bool {
        kind.kind == "ConfigMap" && self.engaged.contains(cluster)
    }
}

fn theme_in(cluster: Option<&str>) -> Selection {
    Selection {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: None,
        cluster: cluster.map(str::to_owned),
        selector: Selector::Name("theme".into()),
    }
}

fn checked(fleet: &Fleet, selection: Selection) -> Result<Vec<Checked>, Refusal> {
    check(&info(), Some("ns"), &[selection], None, Some(fleet))
}

#[test]
fn a_member_the_policy_grants_and_the_host_has_engaged_is_read_there() {
    let fleet = Fleet::granting(&["member-a"], &["member-a", "member-b"]);
    let picks = checked(&fleet, theme_in(Some("member-a"))).unwrap();
    assert_eq!(picks.len(), 1);
    assert_eq!(picks[0].pick.cluster.as_deref(), Some("member-a"));
    assert_eq!(picks[0].pick.namespace.as_deref(), Some("ns"));
    let every = Fleet::granting(&[crate::answer::ANY_CLUSTER], &["member-b"]);
    let picks = checked(&every, theme_in(Some("member-b"))).unwrap();
    assert_eq!(picks[0].pick.cluster.as_deref(), Some("member-b"));
}

#[test]
fn the_parents_cluster_named_or_not_is_read_at_home() {
    let fleet = Fleet::granting(&[], &[]);
    for cluster in [None, Some(crate::plugin::LOCAL_CLUSTER)] {
        let picks = checked(&fleet, theme_in(cluster)).unwrap();
        assert_eq!(picks[0].pick.cluster, None, "{cluster:?}");
    }
}

#[test]
fn a_member_the_policy_does_not_grant_is_refused_naming_what_is_granted() {
    let fleet = Fleet::granting(&["member-a"], &["member-a", "member-b"]);
    let e = checked(&fleet, theme_in(Some("member-b"))).unwrap_err();
    assert_eq!(
        e,
        Refusal::RelatedClusterNotGranted {
            index: 0,
            kind: "ConfigMap".into(),
            cluster: "member-b".into(),
            granted: "member-a".into(),
        }
    );
    let message = e.to_string();
    assert!(message.contains("\"member-b\""), "{message}");
    assert!(message.contains("granted: member-a"), "{message}");
    let none = Fleet::granting(&[], &["member-b"]);
    assert!(matches!(
        checked(&none, theme_in(Some("member-b"))),
        Err(Refusal::RelatedClusterNotGranted { granted, .. }) if granted == "none"
    ));
}

#[test]
fn a_granted_member_not_engaged_is_refused_for_this_pass() {
    let fleet = Fleet::granting(&["member-a", "member-c"], &["member-a"]);
    let e = checked(&fleet, theme_in(Some("member-c"))).unwrap_err();
    assert_eq!(
        e,
        Refusal::RelatedCluster {
            index: 0,
            kind: "ConfigMap".into(),
            cluster: "member-c".into(),
        }
    );
}

#[test]
fn without_members_a_named_member_is_not_engaged() {
    let e = check(
        &info(),
        Some("ns"),
        &[theme_in(Some("member-a"))],
        None,
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Refusal::RelatedCluster { cluster, .. } if cluster == "member-a"),
        "{e:?}"
    );
}

#[test]
fn a_change_in_a_member_enqueues_only_the_parents_that_selected_it_there() {
    let fleet = Fleet::granting(&["*"], &["member-a", "member-b"]);
    let related = Related::new(vec![RelatedKind {
        kind: kind("ConfigMap", true),
        index: Arc::new(KindIndex::default()),
        store: Arc::new(Store::new(kind("ConfigMap", true))),
        members: None,
    }]);
    let (in_a, at_home) = (ObjectKey::new("ns", "in-a"), ObjectKey::new("ns", "home"));
    let a = checked(&fleet, theme_in(Some("member-a"))).unwrap();
    related.record(&in_a, &a);
    related.record(&at_home, &checked(&fleet, theme_in(None)).unwrap());
    let theme = DynamicObject::new("theme", &kind("ConfigMap", true).api_resource()).within("ns");
    let theme = CachedObject::from_object(&theme).unwrap();
    let index = &related.kinds[0].index;
    assert_eq!(
        index.parents_in(Some("member-a"), None, &theme),
        vec![in_a.clone()]
    );
    assert_eq!(index.parents_in(None, None, &theme), vec![at_home.clone()]);
    assert_eq!(index.parents_of(None, &theme), vec![at_home]);
    assert!(index.parents_in(Some("member-b"), None, &theme).is_empty());
    related.forget(&in_a);
    assert!(index.parents_in(Some("member-a"), None, &theme).is_empty());
}

#[tokio::test]
async fn a_grant_by_labels_is_judged_by_the_engaged_members_labels() {
    use crate::clusters::engaged::tests::unreachable;
    use crate::clusters::{Engaged, Labels, RouteIn};
    use crate::plugin::LabelSelector;
    use crate::runtime::{Queue, QueueConfig, Route};

    let prod = Labels::from([("env".to_owned(), "prod".to_owned())]);
    let engaged = Engaged::default();
    engaged.engage("member-a", unreachable(), prod.clone(), &[], None);
    engaged.engage("member-b", unreachable(), Labels::new(), &[], None);
    let grant = Grant {
        cluster_selector: Some(LabelSelector {
            match_labels: prod.clone(),
            match_expressions: vec![],
        }),
        ..Grant::default()
    };
    let config_maps = kind("ConfigMap", true);
    let heard = grant.clone();
    let route: RouteIn = Arc::new(move |cluster: &str, labels: &Labels| {
        heard
            .allows_cluster(cluster, Some(labels))
            .then_some(Route::Parent)
    });
    let queue = Arc::new(Queue::new(QueueConfig::default()));
    let parents = Arc::new(Store::new(info().parent));
    let listening = engaged.listen_in(std::slice::from_ref(&config_maps), (route, queue), parents);
    let related = Related::new(vec![RelatedKind {
        kind: config_maps.clone(),
        index: Arc::new(KindIndex::default()),
        store: Arc::new(Store::new(config_maps)),
        members: Some(listening),
    }])
    .reaching(Reach {
        grant: Some(grant),
        namespaces: None,
    });
    let parent = ObjectKey::new("ns", "m");
    let refusal = |cluster: &str| {
        let found = related.select(&info(), &parent, &[theme_in(Some(cluster))]);
        found.err().unwrap_or_else(|| panic!("{cluster} read"))
    };
    assert!(
        matches!(refusal("member-a"), Refusal::RelatedCluster { .. }),
        "granted by its labels, not listed yet"
    );
    assert!(
        matches!(
            refusal("member-b"),
            Refusal::RelatedClusterNotGranted { granted, .. } if granted.contains("env=prod")
        ),
        "its labels do not match"
    );
    assert!(
        matches!(refusal("member-z"), Refusal::RelatedCluster { .. }),
        "not engaged: no labels to judge by"
    );
}
