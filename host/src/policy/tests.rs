//! The admission policy's cases, parent and CRD checks first, then children, related kinds and
//! the policy file. One module over ~500 lines on purpose: every case builds its plugin with the
//! same few builders at the top.

use super::*;
use crate::plugin::PluginInfo;

const BLOG_CRD: &str = include_str!("../../../deploy/crd/blog.yaml");

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

fn configmaps() -> ResourceKind {
    kind("", "v1", "ConfigMap", "configmaps")
}

/// A plugin named `p@1` declaring `parent`, no children, no CRD.
fn plugin(parent: ResourceKind) -> PluginInfo {
    PluginInfo {
        name: "p".into(),
        version: "1".into(),
        parent,
        children: vec![],
        related: vec![],
        finalizer: None,
        crd: None,
    }
}

fn with_children(mut info: PluginInfo, children: Vec<ResourceKind>) -> PluginInfo {
    info.children = children;
    info
}

fn with_crd(mut info: PluginInfo, crd: &str) -> PluginInfo {
    info.crd = Some(crd.into());
    info
}

/// The Blog plugin as it describes itself: its own CRD, three workload children.
fn blog() -> PluginInfo {
    let info = plugin(kind("weir.dev", "v1alpha1", "Blog", "blogs"));
    let info = with_crd(info, BLOG_CRD);
    with_children(
        info,
        vec![
            configmaps(),
            kind("apps", "v1", "Deployment", "deployments"),
            kind("", "v1", "Service", "services"),
        ],
    )
}

fn crd(group: &str, kind: &str, plural: &str, scope: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n  names: {{kind: {kind}, plural: {plural}}}\n  scope: {scope}\n  versions:\n  - {{name: v1, served: true, storage: true}}\n"
    )
}

fn refused(info: &PluginInfo) -> PolicyRefusal {
    admit(&Policy::default(), info, &WellKnown).expect_err("should be refused")
}

#[test]
fn the_blog_plugin_with_its_own_crd_is_admitted_as_declared() {
    let admitted = admit(&Policy::default(), &blog(), &WellKnown).unwrap();
    assert_eq!(admitted.info(), &blog());
    assert!(admitted.parent_from_own_crd());
    assert_eq!(admitted.sensitive_children().count(), 0);
}

#[test]
fn a_builtin_parent_is_refused_unless_the_policy_lists_it() {
    let info = plugin(kind("", "v1", "Secret", "secrets"));
    let e = refused(&info);
    assert!(matches!(e, PolicyRefusal::BuiltinParent { .. }), "{e:?}");
    let message = e.to_string();
    assert!(
        message.contains("p@1") && message.contains("v1 Secret"),
        "{message}"
    );
    let deployments = plugin(kind("apps", "v1", "Deployment", "deployments"));
    assert!(matches!(
        refused(&deployments),
        PolicyRefusal::BuiltinParent { .. }
    ));

    let policy = Policy {
        builtin_parents: vec![GroupKind::new("", "Secret")],
        ..Policy::default()
    };
    assert!(admit(&policy, &info, &WellKnown).is_ok());
    assert!(admit(&policy, &deployments, &WellKnown).is_err());
}

#[test]
fn a_parent_in_a_kubernetes_group_counts_as_builtin_even_when_unknown_to_the_table() {
    let info = plugin(kind(
        "gateway.networking.k8s.io",
        "v1",
        "Gateway",
        "gateways",
    ));
    assert!(matches!(
        refused(&info),
        PolicyRefusal::BuiltinParent { .. }
    ));
}

#[test]
fn a_custom_parent_without_a_crd_is_admitted_but_must_match_discovery() {
    let chaos = with_children(
        plugin(kind("test.weir.dev", "v1", "Chaos", "chaoses")),
        vec![configmaps()],
    );
    let admitted = admit(&Policy::default(), &chaos, &WellKnown).unwrap();
    assert!(!admitted.parent_from_own_crd());

    let mut found = Discovered::default();
    found.insert(&configmaps(), WellKnown.resolve(&configmaps()));
    found.insert(
        &chaos.parent,
        Resolved::Served {
            plural: "chaos".into(),
            scope: Scope::Namespaced,
        },
    );
    let e = admit(&Policy::default(), &chaos, &found).unwrap_err();
    assert!(
        matches!(e, PolicyRefusal::Misdeclared { role: "parent", .. }),
        "{e:?}"
    );
}

#[test]
fn a_crd_for_another_kind_than_the_parent_is_refused() {
    let info = with_crd(
        plugin(kind("test.weir.dev", "v1", "Scenario", "scenarios")),
        BLOG_CRD,
    );
    let e = refused(&info);
    assert!(matches!(e, PolicyRefusal::CrdMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("spec.group"), "{e}");

    // Same group, another kind.
    let other = crd("test.weir.dev", "Other", "others", "Namespaced");
    let info = with_crd(
        plugin(kind("test.weir.dev", "v1", "Scenario", "scenarios")),
        &other,
    );
    assert!(refused(&info).to_string().contains("names.kind"));
}

#[test]
fn a_crd_must_match_the_declared_plural_scope_and_version() {
    let parent = kind("test.weir.dev", "v1", "Scenario", "scenarios");
    let plural = crd("test.weir.dev", "Scenario", "scenarioz", "Namespaced");
    assert!(
        refused(&with_crd(plugin(parent.clone()), &plural))
            .to_string()
            .contains("names.plural")
    );
    let cluster = crd("test.weir.dev", "Scenario", "scenarios", "Cluster");
    assert!(matches!(
        refused(&with_crd(plugin(parent.clone()), &cluster)),
        PolicyRefusal::CrdMismatch { .. }
    ));
    let mut v2 = parent.clone();
    v2.version = "v2".into();
    let exact = crd("test.weir.dev", "Scenario", "scenarios", "Namespaced");
    assert!(
        refused(&with_crd(plugin(v2), &exact))
            .to_string()
            .contains("does not serve version")
    );
    assert!(
        admit(
            &Policy::default(),
            &with_crd(plugin(parent), &exact),
            &WellKnown
        )
        .is_ok()
    );
}

#[test]
fn a_cluster_scoped_parent_is_refused_even_with_a_matching_crd() {
    let mut parent = kind("test.weir.dev", "v1", "Tenant", "tenants");
    parent.namespaced = false;
    let info = with_crd(
        plugin(parent),
        &crd("test.weir.dev", "Tenant", "tenants", "Cluster"),
    );
    let e = refused(&info);
    assert!(
        matches!(e, PolicyRefusal::ClusterScopedParent { .. }),
        "{e:?}"
    );
}

#[test]
fn a_crd_in_a_kubernetes_group_or_with_two_documents_is_refused() {
    let builtin = with_crd(
        plugin(kind("apps.k8s.io", "v1", "Deployment", "deployments")),
        &crd("apps.k8s.io", "Deployment", "deployments", "Namespaced"),
    );
    assert!(refused(&builtin).to_string().contains("reserved"));

    let exact = crd("test.weir.dev", "Scenario", "scenarios", "Namespaced");
    let two = format!(
        "{exact}---\n{}",
        crd("test.weir.dev", "Other", "others", "Namespaced")
    );
    let info = with_crd(
        plugin(kind("test.weir.dev", "v1", "Scenario", "scenarios")),
        &two,
    );
    assert!(matches!(refused(&info), PolicyRefusal::CrdParse { .. }));
    assert!(matches!(
        check_crd(&info),
        Err(PolicyRefusal::CrdParse { .. })
    ));
    assert!(!check_crd(&plugin(configmaps())).unwrap());
    assert!(check_crd(&blog()).unwrap());
}

#[test]
fn wildcards_subresources_and_empty_names_are_refused() {
    let cases = [
        (kind("*", "v1", "ConfigMap", "configmaps"), "group"),
        (kind("", "*", "ConfigMap", "configmaps"), "version"),
        (kind("", "v1", "*", "configmaps"), "kind"),
        (kind("", "v1", "ConfigMap", "*"), "plural"),
        (kind("", "v1", "Pod", "pods/exec"), "plural"),
        (kind("", "v1", "ConfigMap", ""), "plural"),
        (kind("apps.", "v1", "Deployment", "deployments"), "group"),
    ];
    for (child, field) in cases {
        let e = refused(&with_children(blog(), vec![child.clone()]));
        assert!(
            matches!(&e, PolicyRefusal::NotConcrete { field: f, role: "child", .. } if *f == field),
            "{child:?}: {e:?}"
        );
        let e = refused(&plugin(child.clone()));
        assert!(
            matches!(&e, PolicyRefusal::NotConcrete { role: "parent", .. }),
            "{child:?}: {e:?}"
        );
    }
}

#[test]
fn a_child_kind_outside_the_allow_list_is_refused_until_the_policy_adds_it() {
    let daemonsets = kind("apps", "v1", "DaemonSet", "daemonsets");
    let info = with_children(blog(), vec![daemonsets]);
    let e = refused(&info);
    assert!(matches!(e, PolicyRefusal::ChildNotAllowed { .. }), "{e:?}");
    assert!(e.to_string().contains("apps/v1 DaemonSet"), "{e}");
    let mut policy = Policy::default();
    policy.children.push(GroupKind::new("apps", "DaemonSet"));
    assert!(admit(&policy, &info, &WellKnown).is_ok());
}

#[test]
fn access_control_api_shape_and_namespaces_are_never_allowed_even_if_the_policy_lists_them() {
    let never = [
        kind("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        kind(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
        ),
        kind(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        kind("", "v1", "Namespace", "namespaces"),
        kind(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
    ];
    let everything = Policy {
        builtin_parents: never.iter().map(GroupKind::of).collect(),
        children: never.iter().map(GroupKind::of).collect(),
        ..Policy::default()
    };
    for k in never {
        let e = admit(
            &everything,
            &with_children(blog(), vec![k.clone()]),
            &WellKnown,
        )
        .unwrap_err();
        assert!(
            matches!(e, PolicyRefusal::Never { role: "child", .. }),
            "{k:?}: {e:?}"
        );
        let e = admit(&everything, &plugin(k.clone()), &WellKnown).unwrap_err();
        assert!(
            matches!(e, PolicyRefusal::Never { role: "parent", .. }),
            "{k:?}: {e:?}"
        );
    }
}

#[test]
fn scope_comes_from_discovery_not_from_the_plugins_flag() {
    // A cluster-scoped kind the admin allowed by mistake, declared as namespaced.
    let volumes = kind("", "v1", "PersistentVolume", "persistentvolumes");
    let mut policy = Policy::default();
    policy.children.push(GroupKind::of(&volumes));
    let e = admit(&policy, &with_children(blog(), vec![volumes]), &WellKnown).unwrap_err();
    assert!(
        matches!(e, PolicyRefusal::ClusterScopedChild { .. }),
        "{e:?}"
    );

    // A namespaced kind declared cluster-scoped, and one declared under another plural.
    let mut flag = configmaps();
    flag.namespaced = false;
    let e = refused(&with_children(blog(), vec![flag]));
    assert!(matches!(e, PolicyRefusal::Misdeclared { .. }), "{e:?}");
    let lie = kind("", "v1", "ConfigMap", "secrets");
    let e = refused(&with_children(blog(), vec![lie]));
    assert!(e.to_string().contains("served as configmaps"), "{e}");
}

#[test]
fn a_child_kind_the_cluster_does_not_serve_is_refused_and_offline_it_cannot_be_checked() {
    let certificates = kind("cert-manager.io", "v1", "Certificate", "certificates");
    let mut policy = Policy::default();
    policy.children.push(GroupKind::of(&certificates));
    let info = with_children(blog(), vec![certificates.clone()]);

    let e = admit(&policy, &info, &WellKnown).unwrap_err();
    assert!(matches!(e, PolicyRefusal::Unverifiable { .. }), "{e:?}");

    let mut found = Discovered::default();
    found.insert(&certificates, Resolved::NotServed);
    let e = admit(&policy, &info, &found).unwrap_err();
    assert!(
        matches!(e, PolicyRefusal::NotServed { role: "child", .. }),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("cert-manager.io/v1 Certificate"),
        "{e}"
    );

    found.insert(
        &certificates,
        Resolved::Served {
            plural: "certificates".into(),
            scope: Scope::Namespaced,
        },
    );
    assert!(admit(&policy, &info, &found).is_ok());
}

#[test]
fn a_removed_version_of_a_builtin_kind_is_not_served() {
    let old = kind("batch", "v1beta1", "CronJob", "cronjobs");
    let e = refused(&with_children(blog(), vec![old]));
    assert!(matches!(e, PolicyRefusal::NotServed { .. }), "{e:?}");
}

#[test]
fn secrets_are_admitted_as_sensitive_and_their_type_is_left_to_the_answer_validation() {
    let secrets = kind("", "v1", "Secret", "secrets");
    let info = with_children(blog(), vec![secrets]);
    let admitted = admit(&Policy::default(), &info, &WellKnown).unwrap();
    assert_eq!(admitted.sensitive_children().count(), 1);

    let default = Policy::default().validation();
    assert_eq!(default, crate::answer::ValidationPolicy::default());
    for allowed in [
        "Opaque",
        "kubernetes.io/tls",
        "kubernetes.io/dockerconfigjson",
    ] {
        assert!(default.allows_secret_type(allowed), "{allowed}");
    }
    for credential in [
        "kubernetes.io/service-account-token",
        "bootstrap.kubernetes.io/token",
    ] {
        assert!(!default.allows_secret_type(credential), "{credential}");
    }
    let none = Policy {
        secret_types: vec![],
        ..Policy::default()
    };
    assert!(!none.validation().allows_secret_type("Opaque"));
}

#[test]
fn a_policy_file_keeps_defaults_for_absent_fields_and_refuses_unknown_fields_and_never_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let narrow = write("narrow.yaml", "secretTypes: []\n");
    let policy = Policy::load(&narrow).unwrap();
    assert!(policy.secret_types.is_empty());
    assert_eq!(policy.children, Policy::default().children);
    assert!(policy.builtin_parents.is_empty());

    let only = write("only.yaml", "children:\n  - {kind: ConfigMap}\n");
    let policy = Policy::load(&only).unwrap();
    assert_eq!(policy.children, vec![GroupKind::new("", "ConfigMap")]);

    let typo = write("typo.yaml", "childrens: []\n");
    assert!(matches!(
        Policy::load(&typo),
        Err(PolicyError::Parse { .. })
    ));
    let rbac = write(
        "rbac.yaml",
        "children:\n  - {group: rbac.authorization.k8s.io, kind: RoleBinding}\n",
    );
    assert!(matches!(
        Policy::load(&rbac),
        Err(PolicyError::Never { .. })
    ));
    assert!(matches!(
        Policy::load(&dir.path().join("absent.yaml")),
        Err(PolicyError::Read { .. })
    ));
    assert_eq!(Policy::load_or_default(None).unwrap(), Policy::default());
}

#[test]
fn the_default_policy_allows_no_never_kind_and_only_namespaced_well_known_children() {
    let policy = Policy::default();
    for gk in &policy.children {
        assert!(!kinds::is_never(&gk.group, &gk.kind), "{gk}");
        let k = kind(&gk.group, "v1", &gk.kind, "x");
        match WellKnown.resolve(&k) {
            Resolved::Served { scope, .. } => assert_eq!(scope, Scope::Namespaced, "{gk}"),
            other => panic!("{gk}: {other:?}"),
        }
    }
    assert!(!policy.secret_types.iter().any(|t| t.contains("token")));
}

#[test]
fn related_kinds_are_admitted_from_the_related_list_at_their_served_scope() {
    let mut namespaces = kind("", "v1", "Namespace", "namespaces");
    namespaces.namespaced = false;
    let mut info = blog();
    info.related = vec![
        configmaps(),
        kind("", "v1", "Secret", "secrets"),
        namespaces.clone(),
    ];
    let admitted = admit(&Policy::default(), &info, &WellKnown).unwrap();
    assert_eq!(
        admitted.sensitive_children().count(),
        1,
        "the related Secrets are flagged"
    );

    // Declared namespaced, served cluster-wide: refused like a lying child.
    namespaces.namespaced = true;
    info.related = vec![namespaces];
    assert!(matches!(
        refused(&info),
        PolicyRefusal::Misdeclared {
            role: "related",
            ..
        }
    ));
    // Access control stays fenced off, and the list is the admin's.
    info.related = vec![kind("rbac.authorization.k8s.io", "v1", "Role", "roles")];
    assert!(matches!(
        refused(&info),
        PolicyRefusal::Never {
            role: "related",
            ..
        }
    ));
    info.related = vec![configmaps()];
    let policy = Policy {
        related: vec![],
        ..Policy::default()
    };
    let e = admit(&policy, &info, &WellKnown).unwrap_err();
    assert!(
        matches!(e, PolicyRefusal::RelatedNotAllowed { .. }),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("related kind v1 ConfigMap is not allowed"),
        "{e}"
    );
}
