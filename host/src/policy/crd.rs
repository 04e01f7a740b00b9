//! Whether the CRD a plugin ships defines exactly its parent kind, and nothing else.
//!
//! `weir dev` force-applies that CRD, so a CRD for another kind would let a plugin redefine
//! someone else's custom resource (or squat a name before its owner installs it).

use serde_json::Value;

use super::PolicyRefusal;
use super::kinds::{Scope, is_builtin_group};
use crate::plugin::PluginInfo;

/// Checks that `text` (the plugin's `crd`, YAML or JSON, one document) is an
/// `apiextensions.k8s.io/v1` CustomResourceDefinition named `<plural>.<group>` whose group,
/// `names.kind`, `names.plural` and scope are exactly the declared parent's and which serves
/// the parent's version. Returns the scope the CRD gives the parent.
pub fn check(info: &PluginInfo, text: &str) -> Result<Scope, PolicyRefusal> {
    let parent = &info.parent;
    let refuse = |reason: String| PolicyRefusal::CrdMismatch {
        plugin: info.label(),
        kind: super::refusal::describe(parent),
        reason,
    };
    let crd: Value = crate::yaml::from_str(text).map_err(|source| PolicyRefusal::CrdParse {
        plugin: info.label(),
        source,
    })?;
    let field = |path: &[&str]| -> String {
        path.iter()
            .try_fold(&crd, |v, k| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let expect = |path: &[&str], want: &str| -> Result<(), PolicyRefusal> {
        let got = field(path);
        if got == want {
            Ok(())
        } else {
            Err(refuse(format!(
                "its {} is {got:?}, not {want:?}",
                path.join(".")
            )))
        }
    };
    expect(&["apiVersion"], "apiextensions.k8s.io/v1")?;
    expect(&["kind"], "CustomResourceDefinition")?;
    expect(&["spec", "group"], &parent.group)?;
    expect(&["spec", "names", "kind"], &parent.kind)?;
    expect(&["spec", "names", "plural"], &parent.plural)?;
    expect(
        &["metadata", "name"],
        &format!("{}.{}", parent.plural, parent.group),
    )?;
    let scope = match field(&["spec", "scope"]).as_str() {
        "Namespaced" => Scope::Namespaced,
        "Cluster" => Scope::Cluster,
        other => return Err(refuse(format!("its spec.scope is {other:?}"))),
    };
    if (scope == Scope::Namespaced) != parent.namespaced {
        return Err(refuse(format!(
            "it makes the kind {scope:?} but the plugin declares namespaced: {}",
            parent.namespaced
        )));
    }
    if is_builtin_group(&parent.group) {
        return Err(refuse(format!(
            "its group {:?} is reserved for Kubernetes' own API",
            parent.group
        )));
    }
    let serves = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .is_some_and(|versions| {
            versions.iter().any(|v| {
                v.get("name").and_then(Value::as_str) == Some(parent.version.as_str())
                    && v.get("served").and_then(Value::as_bool) == Some(true)
            })
        });
    if !serves {
        return Err(refuse(format!(
            "it does not serve version {:?}",
            parent.version
        )));
    }
    Ok(scope)
}
