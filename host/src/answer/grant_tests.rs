//! Children of a cluster-scoped parent in the namespaces the policy's entry allows, and only
//! there; everything else refused as under the default policy.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::answer::Grant;
use crate::answer::tests::judge_children;
use crate::plugin::LabelSelector;

/// `propagator` with a cluster-scoped (or namespaced) parent, writing ConfigMaps.
fn info(cluster_scoped: bool) -> PluginInfo {
    PluginInfo {
        name: "propagator".into(),
        version: "1".into(),
        parent: ResourceKind::of_v1(
            "test.weir.dev",
            "Propagation",
            "propagations",
            !cluster_scoped,
        ),
        children: vec![ResourceKind::of_v1("", "ConfigMap", "configmaps", true)],
        related: vec![],
        finalizer: None,
        crd: None,
    }
}

fn parent(info: &PluginInfo) -> DynamicObject {
    let mut p = DynamicObject::new("everywhere", &info.parent.api_resource());
    if info.parent.namespaced {
        p.metadata.namespace = Some("home".into());
    }
    p.metadata.uid = Some("uid-parent".into());
    p
}

fn cm(namespace: Option<&str>, name: &str) -> Value {
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    if let Some(ns) = namespace {
        cm["metadata"]["namespace"] = json!(ns);
    }
    cm
}

/// The policy with `grant` as the entry of `propagator` (none: the default policy).
fn policy(grant: Option<Grant>) -> ValidationPolicy {
    ValidationPolicy {
        grants: Arc::new(
            grant
                .into_iter()
                .map(|g| ("propagator".into(), g))
                .collect(),
        ),
        ..ValidationPolicy::default()
    }
}

fn named(namespaces: &[&str]) -> Grant {
    Grant {
        cluster_scoped_parent: true,
        namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
        ..Grant::default()
    }
}

/// Namespaces `team-a` (labelled `propagate=yes`) and `team-b` (not).
struct Namespaces;

impl LiveObjects for Namespaces {
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        let ar = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&());
        if (api_version, kind) != ("v1", "Namespace") || key.namespace.is_some() {
            return None;
        }
        let mut ns = DynamicObject::new(&key.name, &ar);
        match key.name.as_str() {
            "team-a" => {
                ns.metadata.labels = Some(BTreeMap::from([("propagate".into(), "yes".into())]))
            }
            "team-b" => {}
            _ => return None,
        }
        Some(Arc::new(ns))
    }
}

fn judge(
    info: &PluginInfo,
    children: Vec<Value>,
    policy: &ValidationPolicy,
) -> Result<Vec<DesiredChild>, Refusal> {
    judge_children(info, &parent(info), (children, None), &Namespaces, policy)
}

#[test]
fn without_an_entry_a_cluster_scoped_parents_child_is_refused_with_the_usual_message() {
    let info = info(true);
    let e = judge(&info, vec![cm(Some("team-a"), "shared")], &policy(None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "child ConfigMap \"shared\" asks for namespace \"team-a\"; children live in the parent's namespace \"\""
    );
}

#[test]
fn a_named_namespace_takes_the_child_owned_by_the_cluster_scoped_parent_and_no_other_does() {
    let info = info(true);
    let policy = policy(Some(named(&["team-a"])));
    let out = judge(&info, vec![cm(Some("team-a"), "shared")], &policy).unwrap();
    assert_eq!(out[0].key, ObjectKey::new("team-a", "shared"));
    assert_eq!(out[0].manifest["metadata"]["namespace"], "team-a");
    assert_eq!(
        out[0].manifest["metadata"]["ownerReferences"][0]["uid"],
        "uid-parent"
    );
    assert_eq!(
        out[0].manifest["metadata"]["ownerReferences"][0]["kind"],
        "Propagation"
    );
    for (child, wanted) in [
        (cm(Some("team-b"), "shared"), "team-b"),
        (cm(None, "shared"), ""),
    ] {
        let e = judge(&info, vec![child], &policy).unwrap_err();
        assert_eq!(
            e,
            Refusal::NamespaceNotGranted {
                kind: "ConfigMap".into(),
                name: "shared".into(),
                wanted: wanted.into()
            }
        );
    }
}

#[test]
fn a_namespace_selector_takes_the_labelled_namespace_only() {
    let info = info(true);
    let grant = Grant {
        cluster_scoped_parent: true,
        namespace_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("propagate".into(), "yes".into())]),
            match_expressions: vec![],
        }),
        ..Grant::default()
    };
    let policy = policy(Some(grant));
    assert!(judge(&info, vec![cm(Some("team-a"), "shared")], &policy).is_ok());
    for ns in ["team-b", "nowhere"] {
        let e = judge(&info, vec![cm(Some(ns), "shared")], &policy).unwrap_err();
        assert!(
            matches!(e, Refusal::NamespaceNotGranted { .. }),
            "{ns}: {e}"
        );
    }
}

#[test]
fn one_name_in_two_namespaces_is_two_children() {
    let info = info(true);
    let policy = policy(Some(named(&["team-a", "team-b"])));
    let out = judge(
        &info,
        vec![cm(Some("team-a"), "shared"), cm(Some("team-b"), "shared")],
        &policy,
    )
    .unwrap();
    assert_eq!(out.len(), 2);
    let twice = judge(
        &info,
        vec![cm(Some("team-a"), "shared"), cm(Some("team-a"), "shared")],
        &policy,
    );
    assert!(matches!(twice, Err(Refusal::Duplicate { .. })));
}

#[test]
fn a_namespaced_parent_keeps_its_children_beside_it_whatever_the_entry_names() {
    // An owner reference cannot cross namespaces, so the entry does not move them.
    let info = info(false);
    let policy = policy(Some(named(&["team-a"])));
    let e = judge(&info, vec![cm(Some("team-a"), "shared")], &policy).unwrap_err();
    assert_eq!(
        e.to_string(),
        "child ConfigMap \"shared\" asks for namespace \"team-a\"; children live in the parent's namespace \"home\""
    );
    assert!(judge(&info, vec![cm(None, "shared")], &policy).is_ok());
}
