//! A child naming a cluster the host has not engaged is refused, whole, with the child's key, the cluster and the plugin.

use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::answer::{Inputs, LiveObjects, Refusal, ValidationPolicy, judge, refusal_message};
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

fn judged(live: &dyn LiveObjects, clusters: &[Option<&str>]) -> Result<usize, Refusal> {
    let info = info();
    let inputs = Inputs {
        info: &info,
        parent: &parent(&info),
        live,
        policy: &ValidationPolicy::default(),
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
fn the_same_name_in_two_clusters_is_two_children_and_twice_in_one_is_a_duplicate() {
    let fleet = Fleet(&["hub", "member-a", "member-b"]);
    let twice = |clusters: [Option<&str>; 2]| {
        let info = info();
        let inputs = Inputs {
            info: &info,
            parent: &parent(&info),
            live: &fleet,
            policy: &ValidationPolicy::default(),
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

/// The live host with member clusters engaged: it writes to its own cluster only.
struct Engaged(&'static [&'static str]);

impl LiveObjects for Engaged {
    fn get(&self, _: &str, _: &str, _: &ObjectKey) -> Option<Arc<DynamicObject>> {
        None
    }

    fn engaged(&self, cluster: &str) -> bool {
        cluster == LOCAL_CLUSTER || self.0.contains(&cluster)
    }

    fn writes_to(&self, cluster: &str) -> bool {
        cluster == LOCAL_CLUSTER
    }
}

#[test]
fn a_child_placed_in_an_engaged_member_the_host_does_not_write_to_is_refused_saying_so() {
    let live = Engaged(&["member-a"]);
    assert_eq!(judged(&live, &[None, Some(LOCAL_CLUSTER)]), Ok(2));
    let refusal = judged(&live, &[None, Some("member-a")]).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::UnwrittenCluster {
            plugin: "spread@0.1.0".into(),
            kind: "ConfigMap".into(),
            key: "shop/c1".into(),
            cluster: "member-a".into(),
        }
    );
    let text = refusal.to_string();
    assert!(text.contains("engaged but does not write to yet"), "{text}");
    assert!(
        matches!(
            judged(&live, &[Some("member-z")]),
            Err(Refusal::UnknownCluster { .. })
        ),
        "a cluster not engaged at all is still unknown"
    );
}
