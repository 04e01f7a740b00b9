//! What each build of the hostile plugin claims about itself: the `Attack` plugin, or a variant
//! whose attack is its `describe()` (chosen by a cargo feature, one component per variant).

#![allow(
    dead_code,
    reason = "each variant uses some of the helpers, none all of them"
)]

use crate::bindings::PluginInfo;
use crate::bindings::weir::reconciler::types::ResourceKind;

/// The `Attack` kind's group and version.
const GROUP: &str = "test.weir.dev";

fn kind(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
    }
}

/// A namespaced CRD of `group` defining `kind`/`plural`, with free-form spec and status.
fn crd(kind: &str, plural: &str) -> String {
    format!(
        r#"{{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {{"name": "{plural}.{GROUP}"}},
  "spec": {{
    "group": "{GROUP}",
    "scope": "Namespaced",
    "names": {{"kind": "{kind}", "plural": "{plural}", "singular": "{singular}", "listKind": "{kind}List"}},
    "versions": [{{
      "name": "v1", "served": true, "storage": true,
      "subresources": {{"status": {{}}}},
      "schema": {{"openAPIV3Schema": {{"type": "object", "properties": {{
        "spec": {{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "status": {{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
      }}}}}}
    }}]
  }}
}}"#,
        singular = kind.to_lowercase()
    )
}

fn config_maps() -> ResourceKind {
    kind("", "v1", "ConfigMap", "configmaps", true)
}

/// A plugin of its own parent kind (`kind`, CRD included) with `children`.
fn own(name: &str, parent: (&str, &str), children: Vec<ResourceKind>) -> PluginInfo {
    PluginInfo {
        name: name.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        parent: kind(GROUP, "v1", parent.0, parent.1, true),
        children,
        finalizer: Some(format!("{GROUP}/{name}")),
        crd: Some(crd(parent.0, parent.1)),
    }
}

/// `hostile`: parent `Attack`, children ConfigMap and Secret, a finalizer, its CRD.
#[cfg(not(any(
    feature = "parent-secret",
    feature = "claims",
    feature = "wildcard",
    feature = "crd-other",
    feature = "unserved"
)))]
pub fn info() -> PluginInfo {
    own(
        "hostile",
        ("Attack", "attacks"),
        vec![config_maps(), kind("", "v1", "Secret", "secrets", true)],
    )
}

/// `hostile-parent-secret`: reconciles every Secret (and would hold a finalizer on each).
#[cfg(feature = "parent-secret")]
pub fn info() -> PluginInfo {
    PluginInfo {
        name: "hostile-parent-secret".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        parent: kind("", "v1", "Secret", "secrets", true),
        children: vec![config_maps()],
        finalizer: Some(format!("{GROUP}/steal")),
        crd: None,
    }
}

/// `hostile-claims`: Namespaces and CRDs as children, both declared namespaced.
#[cfg(feature = "claims")]
pub fn info() -> PluginInfo {
    own(
        "hostile-claims",
        ("Claim", "claims"),
        vec![
            kind("", "v1", "Namespace", "namespaces", true),
            kind(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                true,
            ),
        ],
    )
}

/// `hostile-wildcard`: a child of every group, kind and plural.
#[cfg(feature = "wildcard")]
pub fn info() -> PluginInfo {
    own(
        "hostile-wildcard",
        ("Wildcard", "wildcards"),
        vec![kind("*", "v1", "*", "*", true)],
    )
}

/// `hostile-crd-other`: declares parent `Squat` but ships the Blog's CRD name and kind, so
/// `weir dev` would redefine someone else's custom resource.
#[cfg(feature = "crd-other")]
pub fn info() -> PluginInfo {
    let mut info = own(
        "hostile-crd-other",
        ("Squat", "squats"),
        vec![config_maps()],
    );
    info.crd = Some(
        crd("Squat", "squats")
            .replace("squats.test.weir.dev", "blogs.weir.dev")
            .replace(
                &format!("\"group\": \"{GROUP}\""),
                "\"group\": \"weir.dev\"",
            )
            .replace("\"Squat\"", "\"Blog\"")
            .replace("\"squats\"", "\"blogs\""),
    );
    info
}

/// `hostile-unserved`: parent `Ghost`, whose CRD nobody installs.
#[cfg(feature = "unserved")]
pub fn info() -> PluginInfo {
    own("hostile-unserved", ("Ghost", "ghosts"), vec![config_maps()])
}
