use std::collections::BTreeMap;

use super::{AdmissionError, within_watched};
use crate::plugin::{LabelSelector, PluginInfo, ResourceKind};
use crate::policy::{self, Grant, Policy, WellKnown};

/// A plugin of a namespaced `Import` (or a cluster-scoped `Propagation`), its own CRD shipped,
/// reading ConfigMaps and Secrets.
fn plugin(cluster_scoped: bool) -> PluginInfo {
    let (kind, plural, scope) = match cluster_scoped {
        true => ("Propagation", "propagations", "Cluster"),
        false => ("Import", "imports", "Namespaced"),
    };
    PluginInfo {
        name: "importer".into(),
        version: "0.1.0".into(),
        parent: ResourceKind::of_v1("test.weir.dev", kind, plural, !cluster_scoped),
        children: vec![ResourceKind::of_v1("", "ConfigMap", "configmaps", true)],
        related: vec![
            ResourceKind::of_v1("", "ConfigMap", "configmaps", true),
            ResourceKind::of_v1("", "Secret", "secrets", true),
        ],
        finalizer: None,
        crd: Some(format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.test.weir.dev\nspec:\n  group: test.weir.dev\n  names: {{kind: {kind}, plural: {plural}}}\n  scope: {scope}\n  versions:\n  - {{name: v1, served: true, storage: true}}\n"
        )),
    }
}

/// Admission as a host watching only `watched` (all namespaces: `None`) runs it, discovery
/// aside: the policy's rules, then whether the entry fits the watched namespace.
fn admit(info: &PluginInfo, grant: Grant, watched: Option<&str>) -> Result<(), AdmissionError> {
    let policy = Policy {
        plugins: BTreeMap::from([("importer".to_owned(), grant)]),
        ..Policy::default()
    };
    let admitted = policy::admit(&policy, info, &WellKnown)?;
    within_watched(info, admitted.grant(), watched)
}

fn selecting() -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: BTreeMap::from([("share".to_owned(), "yes".to_owned())]),
        match_expressions: vec![],
    })
}

#[test]
fn a_host_watching_one_namespace_refuses_an_entry_reaching_other_namespaces_and_says_why() {
    let cases = [
        (
            plugin(true),
            Grant {
                cluster_scoped_parent: true,
                namespaces: vec!["team-a".into()],
                ..Grant::default()
            },
            "cluster-scoped parent",
        ),
        (
            plugin(false),
            Grant {
                namespaces: vec!["team-a".into(), "shared".into()],
                ..Grant::default()
            },
            "namespaces shared",
        ),
        (
            plugin(false),
            Grant {
                namespace_selector: selecting(),
                secret_data: true,
                ..Grant::default()
            },
            "namespaces labelled share=yes",
        ),
    ];
    for (info, grant, widened) in cases {
        let refused = admit(&info, grant, Some("team-a")).unwrap_err();
        assert!(
            matches!(refused, AdmissionError::BeyondWatchedNamespace { .. }),
            "{refused:?}"
        );
        assert_eq!(
            refused.to_string(),
            format!(
                "plugin importer@0.1.0: the policy's entry for it widens it to {widened}, which a host watching only namespace \"team-a\" cannot serve (run the host on all namespaces to serve it)"
            )
        );
    }
}

#[test]
fn an_entry_within_the_watched_namespace_or_a_host_watching_all_is_admitted() {
    let within = Grant {
        namespaces: vec!["team-a".into()],
        secret_data: true,
        ..Grant::default()
    };
    admit(&plugin(false), within, Some("team-a")).unwrap();
    let everywhere = Grant {
        cluster_scoped_parent: true,
        namespaces: vec!["shared".into()],
        namespace_selector: selecting(),
        secret_data: true,
        clusters: vec!["*".into()],
        cluster_selector: selecting(),
    };
    admit(&plugin(true), everywhere, None).unwrap();
    // No entry at all: the one namespace changes nothing (the policy's own refusals stand).
    admit(&plugin(false), Grant::default(), Some("team-a")).unwrap();
    let refused = admit(&plugin(true), Grant::default(), Some("team-a")).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "plugin importer@0.1.0: parent test.weir.dev/v1 Propagation is cluster-scoped; only namespaced parents are served"
    );
}
