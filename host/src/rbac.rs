//! `weir rbac`: the least-privilege ClusterRole for a set of plugins, from what the host will admit.
//!
//! Everything the host writes or watches follows from the plugins' `describe()`:
//! the parent kind (watch it, patch its finalizers and its status), each
//! child kind (watch, apply, prune) and each related kind (get, list, watch: never a write). So the ClusterRole is computed, not
//! hand-kept: `weir rbac --plugins DIR` prints it, and `deploy/rbac/cluster-role.yaml`
//! is its output for the plugins shipped here (a test keeps the two equal).
//! Leader election's Lease lives in the host's namespace and is granted by a
//! Role beside it, not here.
//!
//! A claim is not a grant: rules come only from plugins [`crate::policy::admit`] accepts
//! (under `--policy FILE`, or the default policy), with kinds checked against the static
//! table of Kubernetes' built-in API (no cluster needed). So no wildcard, no cluster-scoped
//! kind, no RBAC, Namespace or CRD kind is ever granted. A refused plugin makes the command
//! fail with every reason, printing nothing: a ClusterRole silently missing a plugin would
//! only move the failure to the host's start. `--skip-refused` prints the role for the
//! others, with the refusals as comments. Sensitive grants (Secrets) are flagged by a
//! `# WARNING:` comment at the top and on stderr.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::clusters::Labels;
use crate::plugin::{Engine, Limits, LoadError, PluginInfo};
use crate::policy::{self, Admitted, Policy, PolicyError, PolicyRefusal, WellKnown};

/// Why the rules could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RbacError {
    /// The plugins directory could not be read.
    #[error("cannot read the plugins directory {}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A plugin did not load, so what it needs is unknown.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The policy file could not be used.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Plugins the policy refuses (without `--skip-refused`).
    #[error("{} plugin(s) refused by the policy, so no ClusterRole is printed (--skip-refused leaves them out):{}", .0.len(), bullets(.0))]
    Refused(Vec<PolicyRefusal>),
    /// The ClusterRole could not be written as YAML.
    #[error("cannot render the ClusterRole as YAML")]
    Yaml(#[from] crate::yaml::SerializeError),
}

fn bullets(refusals: &[PolicyRefusal]) -> String {
    refusals.iter().map(|r| format!("\n  - {r}")).collect()
}

/// Verbs on a parent kind: watch it, and merge-patch its finalizers.
const PARENT: &[&str] = &["get", "list", "watch", "patch", "update"];
/// Verbs on a parent's status subresource.
const STATUS: &[&str] = &["get", "patch", "update"];
/// `blockOwnerDeletion` on a child needs `update` on the owner's finalizers
/// wherever the OwnerReferencesPermissionEnforcement admission plugin runs.
const FINALIZERS: &[&str] = &["update"];
/// Verbs on a child kind: watch, server-side apply (create or patch), prune.
const CHILD: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];
/// Verbs on a related kind: the host watches it for the plugin and never writes it.
const RELATED: &[&str] = &["get", "list", "watch"];
/// The host records Events (`events.k8s.io/v1`) on parents.
const EVENTS: &[&str] = &["create", "patch"];

/// The ClusterRole `name` granting what the host needs to serve `plugins` (admitted ones
/// only: their kinds are concrete, namespaced and allowed).
///
/// Rules are merged per API group and verb set and sorted, so the output is stable.
pub fn cluster_role(name: &str, plugins: &[Admitted]) -> ClusterRole {
    let mut grants = Grants::new();
    let mut grant = |group: &str, resource: String, verbs: &'static [&'static str]| {
        grants
            .entry((group.to_owned(), verbs))
            .or_default()
            .insert(resource);
    };
    grant("events.k8s.io", "events".into(), EVENTS);
    for admitted in plugins {
        let info = admitted.info();
        let parent = &info.parent;
        grant(&parent.group, parent.plural.clone(), PARENT);
        grant(&parent.group, format!("{}/status", parent.plural), STATUS);
        grant(
            &parent.group,
            format!("{}/finalizers", parent.plural),
            FINALIZERS,
        );
        for child in &info.children {
            grant(&child.group, child.plural.clone(), CHILD);
        }
        for related in &info.related {
            grant(&related.group, related.plural.clone(), RELATED);
        }
        // The policy's entry selects namespaces by label: the host reads Namespaces' labels.
        if admitted
            .grant()
            .is_some_and(|g| g.namespace_selector.is_some())
        {
            grant("", "namespaces".into(), RELATED);
        }
    }
    role(name, grants)
}

/// Rules by (API group, verbs) → resources.
type Grants = BTreeMap<(String, &'static [&'static str]), BTreeSet<String>>;

/// The ClusterRole `name` granting what the host needs in member cluster `cluster` for the
/// admitted `plugins` the policy grants that cluster, named or labelled `labels` (its
/// `plugins:` entry's `clusters` or `clusterSelector`): each one's child kinds, to watch, apply
/// and prune there, and its related kinds, to read there (a 0.4.0 selection may name the
/// cluster). Their parents and Events stay in the host's own cluster ([`cluster_role`]).
pub fn member_role(name: &str, plugins: &[Admitted], (cluster, labels): Member<'_>) -> ClusterRole {
    let mut grants = Grants::new();
    for admitted in plugins {
        if !admitted
            .grant()
            .is_some_and(|g| g.allows_cluster(cluster, Some(labels)))
        {
            continue;
        }
        let info = admitted.info();
        let kinds = (info.children.iter().map(|k| (k, CHILD)))
            .chain(info.related.iter().map(|k| (k, RELATED)));
        for (kind, verbs) in kinds {
            grants
                .entry((kind.group.clone(), verbs))
                .or_default()
                .insert(kind.plural.clone());
        }
    }
    role(name, grants)
}

/// The ClusterRole `name` of `grants`, merged and sorted so the output is stable.
fn role(name: &str, mut grants: Grants) -> ClusterRole {
    // A resource in two grants (a kind one plugin reads and another, or the same, writes) stays
    // only in the larger one: every printed rule is needed, none repeats another's verbs.
    let all: Vec<_> = grants
        .iter()
        .map(|((group, verbs), resources)| (group.clone(), *verbs, resources.clone()))
        .collect();
    for ((group, verbs), resources) in &mut grants {
        resources.retain(|resource| {
            !all.iter().any(|(g, wider, rs)| {
                g == group
                    && wider.len() > verbs.len()
                    && verbs.iter().all(|v| wider.contains(v))
                    && rs.contains(resource)
            })
        });
    }
    grants.retain(|_, resources| !resources.is_empty());
    let rules = grants
        .into_iter()
        .map(|((group, verbs), resources)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(resources.into_iter().collect()),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        })
        .collect();
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_owned(),
                "weir".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        ..ClusterRole::default()
    }
}

/// What `weir rbac` prints: the manifest, and the warnings also meant for stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The ClusterRole as YAML, headed by comments (warnings, sources, refusals).
    pub yaml: String,
    /// One line per sensitive grant or skipped plugin.
    pub warnings: Vec<String>,
}

/// Options of `weir rbac`.
#[derive(Clone, Copy, Debug)]
pub struct RbacOptions<'a> {
    /// Directory of plugin components (`*.wasm`).
    pub plugins: &'a Path,
    /// Name of the ClusterRole.
    pub name: &'a str,
    /// The admission policy (`--policy FILE`); `None`: the default policy.
    pub policy: Option<&'a Path>,
    /// Leave refused plugins out instead of failing.
    pub skip_refused: bool,
    /// The role of member cluster `NAME` instead of the host's own cluster's.
    pub cluster: Option<&'a str>,
    /// That member's labels (its cluster Secret's), for grants by label.
    pub cluster_labels: &'a Labels,
}

/// A member cluster as the policy grants it: its name and its labels.
pub type Member<'a> = (&'a str, &'a Labels);

/// `weir rbac`: prints the ClusterRole on stdout and its warnings on stderr.
pub fn print(engine: &Engine, options: &RbacOptions<'_>) -> Result<(), RbacError> {
    let policy = Policy::load_or_default(options.policy)?;
    let infos = load_dir(engine, options.plugins)?;
    let rendered = match options.cluster {
        None => role_for(options.name, &infos, &policy, options.skip_refused)?,
        Some(cluster) => member_role_for(
            (options.name, (cluster, options.cluster_labels)),
            &infos,
            &policy,
            options.skip_refused,
        )?,
    };
    for warning in &rendered.warnings {
        eprintln!("warning: {warning}");
    }
    print!("{}", rendered.yaml);
    Ok(())
}

/// Loads every `*.wasm` in `dir` (sorted) and renders their ClusterRole under the default
/// policy as YAML, failing if any plugin is refused.
pub fn render(engine: &Engine, dir: &Path, name: &str) -> Result<String, RbacError> {
    let infos = load_dir(engine, dir)?;
    Ok(role_for(name, &infos, &Policy::default(), false)?.yaml)
}

/// What every `*.wasm` in `dir` (sorted) says about itself.
fn load_dir(engine: &Engine, dir: &Path) -> Result<Vec<PluginInfo>, RbacError> {
    let dir_err = |source| RbacError::Dir {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(dir_err)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    files.sort();
    let mut infos = Vec::new();
    for file in &files {
        infos.push(engine.load_file(file, Limits::default())?.info().clone());
    }
    Ok(infos)
}

/// The ClusterRole for the plugins of `infos` that `policy` admits (offline: kinds resolve
/// against [`WellKnown`]), with a header saying which plugins it was made from. Refused
/// plugins fail the whole rendering unless `skip_refused`.
pub fn role_for(
    name: &str,
    infos: &[PluginInfo],
    policy: &Policy,
    skip_refused: bool,
) -> Result<Rendered, RbacError> {
    let (admitted, refused) = admit_all(infos, policy, skip_refused)?;
    let mut warnings = Vec::new();
    for a in &admitted {
        let info = a.info();
        for kind in a.sensitive_children() {
            warnings.push(format!(
                "plugin {}@{} writes {}s: the host is granted {} on {} in every namespace (it watches them all to find this plugin's; the plugin sees only its own, without their data)",
                info.name,
                info.version,
                kind.kind,
                CHILD.join("/"),
                kind.plural
            ));
        }
    }
    for a in &admitted {
        let info = a.info();
        for line in a.grant().map(policy::Grant::lines).unwrap_or_default() {
            warnings.push(format!(
                "plugin {}@{} is widened by the policy's entry for it: {line}",
                info.name, info.version
            ));
        }
    }
    for refusal in &refused {
        warnings.push(format!("refused, nothing granted: {refusal}"));
    }
    let mut out = String::new();
    for warning in &warnings {
        out.push_str(&format!("# WARNING: {warning}\n"));
    }
    out.push_str(
        "# Generated by `weir rbac --plugins DIR` (least privilege for these plugins; rerun it when a plugin\n# declares new child kinds, or add rules by hand for anything else the host should do) from:\n",
    );
    for info in admitted.iter().map(Admitted::info) {
        out.push_str(&format!(
            "#   {} {} ({}.{})\n",
            info.name, info.version, info.parent.kind, info.parent.group
        ));
    }
    out.push_str(&crate::yaml::to_string(&with_kind(cluster_role(
        name, &admitted,
    )))?);
    Ok(Rendered {
        yaml: out,
        warnings,
    })
}

/// k8s-openapi leaves `apiVersion`/`kind` to the serializer of the typed value;
/// the YAML serializer needs them spelled out to produce an applicable manifest.
fn with_kind(role: ClusterRole) -> serde_json::Value {
    let mut value = serde_json::to_value(role).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), "rbac.authorization.k8s.io/v1".into());
        map.insert("kind".into(), "ClusterRole".into());
    }
    value
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "rbac_widened_tests.rs"]
mod widened_tests;

/// The plugins of `infos` that `policy` admits, and the refusals of the others; an error if
/// any is refused, unless `skip_refused`.
fn admit_all(
    infos: &[PluginInfo],
    policy: &Policy,
    skip_refused: bool,
) -> Result<(Vec<Admitted>, Vec<PolicyRefusal>), RbacError> {
    let mut admitted = Vec::new();
    let mut refused = Vec::new();
    for info in infos {
        match policy::admit(policy, info, &WellKnown) {
            Ok(a) => admitted.push(a),
            Err(refusal) => refused.push(refusal),
        }
    }
    if !refused.is_empty() && !skip_refused {
        return Err(RbacError::Refused(refused));
    }
    Ok((admitted, refused))
}

/// `weir rbac --cluster NAME`: the ClusterRole `name` the host's credentials need in member
/// cluster `cluster` for the plugins of `infos` the policy admits and grants that cluster,
/// headed by which ones they are.
pub fn member_role_for(
    (name, (cluster, labels)): (&str, Member<'_>),
    infos: &[PluginInfo],
    policy: &Policy,
    skip_refused: bool,
) -> Result<Rendered, RbacError> {
    let (admitted, refused) = admit_all(infos, policy, skip_refused)?;
    let mut warnings: Vec<String> = refused
        .iter()
        .map(|r| format!("refused, nothing granted: {r}"))
        .collect();
    let placing: Vec<&PluginInfo> = admitted
        .iter()
        .filter(|a| (a.grant()).is_some_and(|g| g.allows_cluster(cluster, Some(labels))))
        .map(Admitted::info)
        .collect();
    if placing.is_empty() {
        warnings.push(format!(
            "the policy grants no plugin member cluster {cluster:?}: the role is empty"
        ));
    }
    let mut out: String = warnings
        .iter()
        .map(|w| format!("# WARNING: {w}\n"))
        .collect();
    out.push_str(&format!(
        "# Generated by `weir rbac --plugins DIR --cluster {cluster}`: bind it in member cluster {cluster:?}\n# to the credentials its kubeconfig gives the host; the child and related kinds of the plugins the policy grants it:\n"
    ));
    for info in &placing {
        out.push_str(&format!("#   {} {}\n", info.name, info.version));
    }
    out.push_str(&crate::yaml::to_string(&with_kind(member_role(
        name,
        &admitted,
        (cluster, labels),
    )))?);
    Ok(Rendered {
        yaml: out,
        warnings,
    })
}
