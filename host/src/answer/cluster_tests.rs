//! A child naming a cluster the policy does not grant its plugin, or the host has not engaged, is refused, whole, with the child's key, the cluster and the plugin.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::answer::{
    Grant, Inputs, LiveObjects, Refusal, ValidationPolicy, judge, refusal_message,
};
use crate::plugin::test_info::{namespaced, owning_config_maps};
use crate::plugin::{LOCAL_CLUSTER, PluginInfo, ReconcileResponse, Requeue};
use crate::runtime::ObjectKey;

/// The controller's view: no objects, and (the trait's default) the host's own cluster alone.
struct HostCache;

impl LiveObjects for HostCache {
    fn get(&self, _: &str, _: &str, _: &ObjectKey) -> Option<Arc<DynamicObject>> {
        None
    }
}

/// A fleet of engaged clusters, as a fixture names them.
struct Fleet(&'static [&'static str]);

impl LiveObjects for Fleet {
    fn get(&self, _: &str, _: &str, _: &ObjectKey) -> Option<Arc<DynamicObject>> {
        None
    }

    fn engaged(&self, cluster: &str) -> bool {
        self.0.contains(&cluster)
    }
}

fn info() -> PluginInfo {
    owning_config_maps("spread", namespaced("test.weir.dev", "Spread", "spreads"))
}

fn parent(info: &PluginInfo) -> DynamicObject {
    let mut p = DynamicObject::new("web", &info.parent.api_resource());
    p.metadata.namespace = Some("shop".into());
    p.metadata.uid = Some("uid-web".into());
    p
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

fn answer(clusters: &[Option<&str>]) -> ReconcileResponse {
    ReconcileResponse {
        children: (0..clusters.len()).map(|i| cm(&format!("c{i}"))).collect(),
        clusters: clusters.iter().map(|c| c.map(str::to_owned)).collect(),
        status: None,
        requeue: Requeue::Done,
    }
}

/// A policy granting the plugin `spread` children in `clusters`.
fn granting(clusters: &[&str]) -> ValidationPolicy {
    let grant = Grant {
        clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
        ..Grant::default()
    };
    ValidationPolicy {
        grants: Arc::new(BTreeMap::from([("spread".to_owned(), grant)])),
        ..ValidationPolicy::default()
    }
}

fn judged(live: &dyn LiveObjects, clusters: &[Option<&str>]) -> Result<usize, Refusal> {
    judged_under(&granting(&["*"]), live, clusters)
}

fn judged_under(
    policy: &ValidationPolicy,
    live: &dyn LiveObjects,
    clusters: &[Option<&str>],
) -> Result<usize, Refusal> {
    let info = info();
    let inputs = Inputs {
        info: &info,
        parent: &parent(&info),
        live,
        policy,
        now: "T",
    };
    judge(inputs, answer(clusters))
        .map(|j| j.children.len())
        .map_err(|refused| refused.refusal)
}

#[test]
fn a_child_naming_a_cluster_the_host_has_not_engaged_is_refused_with_its_key_the_cluster_and_the_plugin()
 {
    let refusal = judged(&HostCache, &[None, Some("member-a")]).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::UnknownCluster {
            plugin: "spread@0.1.0".into(),
            kind: "ConfigMap".into(),
            key: "shop/c1".into(),
            cluster: "member-a".into(),
        }
    );
    let message = refusal_message(&info(), &refusal);
    for part in [
        "plugin spread",
        "spread@0.1.0",
        "ConfigMap shop/c1",
        "\"member-a\"",
        "not engaged",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
}

#[test]
fn children_in_the_parents_cluster_or_naming_the_hosts_own_are_accepted() {
    assert_eq!(judged(&HostCache, &[None, Some(LOCAL_CLUSTER)]), Ok(2));
    assert_eq!(judged(&HostCache, &[]), Ok(0));
}

#[test]
fn a_cluster_the_live_objects_span_is_accepted_and_any_other_refused() {
    let fleet = Fleet(&["hub", "member-a"]);
    assert_eq!(judged(&fleet, &[Some("member-a"), Some("hub")]), Ok(2));
    assert!(matches!(
        judged(&fleet, &[Some("member-a"), Some("member-z")]),
        Err(Refusal::UnknownCluster { cluster, .. }) if cluster == "member-z"
    ));
}

#[test]
fn a_member_the_policy_does_not_grant_the_plugin_is_refused_though_engaged() {
    let fleet = Fleet(&["member-a", "member-b"]);
    let only_a = granting(&["member-a"]);
    assert_eq!(judged_under(&only_a, &fleet, &[Some("member-a")]), Ok(1));
    let refusal = judged_under(&only_a, &fleet, &[Some("member-a"), Some("member-b")]).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::ClusterNotGranted {
            plugin: "spread@0.1.0".into(),
            kind: "ConfigMap".into(),
            key: "shop/c1".into(),
            cluster: "member-b".into(),
            granted: "member-a".into(),
        }
    );
    let message = refusal_message(&info(), &refusal);
    assert!(message.contains("does not grant"), "{message}");
    let nothing = ValidationPolicy::default();
    assert!(
        matches!(
            judged_under(&nothing, &fleet, &[Some("member-a")]),
            Err(Refusal::ClusterNotGranted { granted, .. }) if granted == "none"
        ),
        "without an entry a plugin places nothing in a member"
    );
    assert_eq!(
        judged_under(&nothing, &HostCache, &[None, Some(LOCAL_CLUSTER)]),
        Ok(2),
        "its parent's own cluster needs no grant"
    );
    let another = ValidationPolicy {
        grants: Arc::new(BTreeMap::from([(
            "other".to_owned(),
            Grant {
                clusters: vec!["*".into()],
                ..Grant::default()
            },
        )])),
        ..ValidationPolicy::default()
    };
    assert!(
        matches!(
            judged_under(&another, &fleet, &[Some("member-a")]),
            Err(Refusal::ClusterNotGranted { .. })
        ),
        "another plugin's grant is not this one's"
    );
}

#[test]
fn the_same_name_in_two_clusters_is_two_children_and_twice_in_one_is_a_duplicate() {
    let fleet = Fleet(&["hub", "member-a", "member-b"]);
    let twice = |clusters: [Option<&str>; 2]| {
        let info = info();
        let policy = granting(&["*"]);
        let inputs = Inputs {
            info: &info,
            parent: &parent(&info),
            live: &fleet,
            policy: &policy,
            now: "T",
        };
        let mut answer = answer(&clusters);
        answer.children = vec![cm("same"), cm("same")];
        judge(inputs, answer)
            .map(|j| j.children.len())
            .map_err(|r| r.refusal)
    };
    assert_eq!(twice([Some("member-a"), Some("member-b")]), Ok(2));
    assert!(matches!(
        twice([Some("member-a"), Some("member-a")]),
        Err(Refusal::Duplicate { .. })
    ));
}

/// The live host with member clusters engaged, holding `held` in member-a.
struct Engaged(Option<Arc<DynamicObject>>);

impl LiveObjects for Engaged {
    fn get(&self, _: &str, _: &str, _: &ObjectKey) -> Option<Arc<DynamicObject>> {
        None
    }

    fn engaged(&self, cluster: &str) -> bool {
        cluster == LOCAL_CLUSTER || cluster == "member-a"
    }

    fn get_elsewhere(
        &self,
        cluster: &str,
        _: &str,
        _: &str,
        _: &ObjectKey,
    ) -> Option<Arc<DynamicObject>> {
        (cluster == "member-a").then(|| self.0.clone()).flatten()
    }
}

/// The children the judge accepts for one ConfigMap `c0` placed in member-a.
fn placed(live: &Engaged) -> Result<Vec<crate::answer::DesiredChild>, Refusal> {
    let info = info();
    let parent = parent(&info);
    let policy = granting(&["member-a"]);
    let inputs = Inputs {
        info: &info,
        parent: &parent,
        live,
        policy: &policy,
        now: "T",
    };
    judge(inputs, answer(&[Some("member-a")]))
        .map(|j| j.children)
        .map_err(|r| r.refusal)
}

fn member_object(labels: Value) -> Option<Arc<DynamicObject>> {
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "c0", "namespace": "shop", "labels": labels}});
    Some(Arc::new(
        serde_json::from_value(obj).unwrap_or_else(|e| panic!("{e}")),
    ))
}

#[test]
fn a_child_placed_in_an_engaged_member_is_marked_with_its_parent_not_owned() {
    let children = placed(&Engaged(None)).unwrap_or_else(|r| panic!("{r}"));
    let [child] = children.as_slice() else {
        panic!("one child: {children:?}")
    };
    assert_eq!(child.cluster.as_deref(), Some("member-a"));
    let meta = &child.manifest["metadata"];
    assert!(meta.get("ownerReferences").is_none(), "{meta}");
    assert_eq!(meta["labels"][crate::answer::PARENT_UID_LABEL], "uid-web");
    let annotations = &meta["annotations"];
    assert_eq!(
        annotations[crate::answer::PARENT_CLUSTER_ANNOTATION],
        LOCAL_CLUSTER
    );
    assert_eq!(
        annotations[crate::answer::PARENT_NAME_ANNOTATION],
        "shop/web"
    );
    assert_eq!(annotations[crate::answer::PARENT_KIND_ANNOTATION], "Spread");
    assert!(
        annotations
            .get(crate::answer::MANIFEST_HASH_ANNOTATION)
            .is_some()
    );
    // The same child in the parent's own cluster is owned, as ever.
    let local = judged(&Engaged(None), &[Some(LOCAL_CLUSTER)]);
    assert_eq!(local, Ok(1));
}

#[test]
fn a_member_object_not_marked_by_this_parent_is_refused_as_foreign() {
    let foreign = placed(&Engaged(member_object(json!({"app": "x"}))));
    assert!(
        matches!(&foreign, Err(Refusal::Foreign { name, owner, .. }) if name == "c0" && owner == "not marked by any parent in member cluster \"member-a\""),
        "{foreign:?}"
    );
    let other = placed(&Engaged(member_object(
        json!({(crate::answer::PARENT_UID_LABEL): "uid-other"}),
    )));
    assert!(
        matches!(&other, Err(Refusal::Foreign { owner, .. }) if owner.contains("uid-other")),
        "{other:?}"
    );
    let own = placed(&Engaged(member_object(
        json!({(crate::answer::PARENT_UID_LABEL): "uid-web"}),
    )));
    let own = own.unwrap_or_else(|r| panic!("{r}"));
    assert!(
        own[0].live.is_some(),
        "the member's live copy is handed to the writer"
    );
}

#[test]
fn a_cluster_nobody_engaged_is_still_refused_as_unknown() {
    assert!(matches!(
        judged(&Engaged(None), &[Some("member-z")]),
        Err(Refusal::UnknownCluster { .. })
    ));
}

#[test]
fn a_member_the_parent_recorded_is_accepted_while_released_and_no_other_is() {
    let info = info();
    let mut parent = parent(&info);
    parent.metadata.annotations = Some(BTreeMap::from([(
        crate::answer::MEMBER_CLUSTERS_ANNOTATION.to_owned(),
        "member-b".to_owned(),
    )]));
    let fleet = Fleet(&["member-a"]);
    let policy = granting(&["*"]);
    let judge_placed = |clusters: &[Option<&str>]| {
        let inputs = Inputs {
            info: &info,
            parent: &parent,
            live: &fleet,
            policy: &policy,
            now: "T",
        };
        judge(inputs, answer(clusters))
            .map(|j| j.children.len())
            .map_err(|r| r.refusal)
    };
    assert_eq!(
        judge_placed(&[Some("member-a"), Some("member-b")]),
        Ok(2),
        "member-b, released for now, keeps the parent's other children converging"
    );
    assert!(matches!(
        judge_placed(&[Some("member-a"), Some("member-c")]),
        Err(Refusal::UnknownCluster { cluster, .. }) if cluster == "member-c"
    ));
}

/// Engaged members with labels, as cluster Secrets give them: member-a `env=prod`, member-b
/// `env=dev`.
struct Labelled;

impl LiveObjects for Labelled {
    fn get(&self, _: &str, _: &str, _: &ObjectKey) -> Option<Arc<DynamicObject>> {
        None
    }

    fn engaged(&self, cluster: &str) -> bool {
        ["member-a", "member-b"].contains(&cluster)
    }

    fn cluster_labels(&self, cluster: &str) -> Option<crate::clusters::Labels> {
        let env = match cluster {
            "member-a" => "prod",
            "member-b" => "dev",
            _ => return None,
        };
        Some(BTreeMap::from([("env".to_owned(), env.to_owned())]))
    }
}

#[test]
fn a_member_granted_by_its_labels_is_accepted_and_one_with_other_labels_is_refused_saying_the_selector()
 {
    let grant = Grant {
        cluster_selector: serde_json::from_value(json!({"matchLabels": {"env": "prod"}}))
            .unwrap_or_else(|e| panic!("{e}")),
        ..Grant::default()
    };
    let policy = ValidationPolicy {
        grants: Arc::new(BTreeMap::from([("spread".to_owned(), grant)])),
        ..ValidationPolicy::default()
    };
    assert_eq!(judged_under(&policy, &Labelled, &[Some("member-a")]), Ok(1));
    let refusal =
        judged_under(&policy, &Labelled, &[Some("member-a"), Some("member-b")]).unwrap_err();
    assert!(
        matches!(&refusal, Refusal::ClusterNotGranted { cluster, granted, .. }
            if cluster == "member-b" && granted == "labelled env=prod"),
        "{refusal:?}"
    );

    // A member not engaged has no labels to judge: refused as unknown, unless the parent
    // records children there (released for now), when nothing is written until it is back.
    let info = info();
    let mut recorded = parent(&info);
    let judge_with = |parent: &DynamicObject| {
        let inputs = Inputs {
            info: &info,
            parent,
            live: &Labelled,
            policy: &policy,
            now: "T",
        };
        judge(inputs, answer(&[Some("member-a"), Some("member-c")])).map_err(|r| r.refusal)
    };
    assert!(
        matches!(judge_with(&recorded), Err(Refusal::UnknownCluster { cluster, .. }) if cluster == "member-c")
    );
    recorded.metadata.annotations = Some(BTreeMap::from([(
        crate::answer::MEMBER_CLUSTERS_ANNOTATION.to_owned(),
        "member-a,member-c".to_owned(),
    )]));
    assert_eq!(judge_with(&recorded).map(|j| j.children.len()), Ok(2));
}
