//! What the cluster admin's policy lets a plugin's answer carry beyond the fixed rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::live::LiveObjects;
use crate::clusters::Labels;
use crate::plugin::LabelSelector;
use crate::runtime::ObjectKey;

/// A grant's cluster naming every member the host engages ([`Grant::clusters`]).
pub const ANY_CLUSTER: &str = "*";

/// The default Secret types: the ones whose content the writer supplies in full.
pub const DEFAULT_SECRET_TYPES: &[&str] = &[
    "Opaque",
    "kubernetes.io/tls",
    "kubernetes.io/basic-auth",
    "kubernetes.io/ssh-auth",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/dockercfg",
];

/// What the host lets a plugin's answer carry, from the cluster admin's policy
/// ([`crate::policy::Policy::validation`]); `Default` is the default policy's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationPolicy {
    /// The `type`s a desired Secret may have (none: `Opaque`); any other is refused with
    /// [`super::Refusal::SecretType`]. The one rule for credential-bearing Secrets: by default
    /// ([`DEFAULT_SECRET_TYPES`]) it leaves out [`super::SERVICE_ACCOUNT_TOKEN_TYPE`],
    /// which the API server's token controller fills with a token of whichever ServiceAccount
    /// its annotation names (a credential the plugin was never given), and
    /// `bootstrap.kubernetes.io/token`. The allowed types hold only what the plugin wrote.
    pub secret_types: Vec<String>,
    /// What the policy widens for each plugin, by plugin name (its `plugins:` entries); a
    /// plugin without an entry gets nothing beyond the fixed rules.
    pub grants: Arc<BTreeMap<String, Grant>>,
    /// What is widened for every plugin judged, whatever its name, when it has no entry in
    /// `grants`: a tenant namespace's Secret data (`crate::policy::Tenant`); `None` for the
    /// cluster's own plugins.
    pub every_plugin: Option<Grant>,
}

/// What the cluster admin's policy widens for one plugin (an entry of its `plugins:` map, keyed
/// by the plugin's name). Every field defaults to nothing widened; the plugin's own declaration
/// never widens anything.
///
/// ```yaml
/// plugins:
///   config-propagator:
///     clusterScopedParent: true
///     namespaces: [team-a]
///     namespaceSelector: {matchLabels: {weir.dev/propagate: "true"}}
///     secretData: true
///   spread:
///     clusters: [member-a, member-b]   # or ["*"]: every member the host engages
///     clusterSelector: {matchLabels: {env: prod}}   # and members with these labels
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Grant {
    /// The plugin may reconcile a cluster-scoped parent, one its own CRD defines. Its
    /// children still land only in the namespaces below (the owner reference from a
    /// namespaced child to a cluster-scoped parent is one Kubernetes allows).
    pub cluster_scoped_parent: bool,
    /// Namespaces, by name, where the plugin may read related objects beyond its parent's
    /// namespace, and where a cluster-scoped parent's children may land.
    pub namespaces: Vec<String>,
    /// Namespaces, by their labels, allowed as `namespaces` are (read from the host's cache
    /// of Namespaces at each reconcile, so a relabelled namespace gains or loses it).
    pub namespace_selector: Option<LabelSelector>,
    /// Related Secrets reach the plugin with their data (by default they come without it).
    pub secret_data: bool,
    /// Member clusters, by name, where the plugin may place children (contract 0.4.0); `"*"`:
    /// every member the host engages. Without it the plugin writes only in its parent's
    /// cluster, whatever members the host engages: a member's credentials are the operator's,
    /// lent to the plugins the policy names.
    pub clusters: Vec<String>,
    /// Member clusters, by their labels, allowed as `clusters` are. A cluster's labels are its
    /// Secret's (`weir run --cluster-secrets`); a cluster from a kubeconfig file has none.
    pub cluster_selector: Option<LabelSelector>,
}

impl Grant {
    /// Whether the entry widens anything at all.
    pub fn widens(&self) -> bool {
        self.cluster_scoped_parent
            || !self.namespaces.is_empty()
            || self.namespace_selector.is_some()
            || self.secret_data
            || self.grants_clusters()
    }

    /// Whether the entry grants any member cluster (by name or by labels).
    pub fn grants_clusters(&self) -> bool {
        !self.clusters.is_empty() || self.cluster_selector.is_some()
    }

    /// Whether the plugin may place children in member cluster `cluster`, labelled `labels`
    /// (`None`: not known, as for a cluster not engaged; only a grant by name can then hold).
    pub fn allows_cluster(&self, cluster: &str, labels: Option<&Labels>) -> bool {
        let named = (self.clusters.iter()).any(|c| c == ANY_CLUSTER || c == cluster);
        let labelled = (self.cluster_selector.as_ref())
            .zip(labels)
            .is_some_and(|(selector, labels)| selector.matches(labels));
        named || labelled
    }

    /// [`Grant::allows_cluster`] for a member whose labels may not be known: `None` is a
    /// member not engaged now, whose labels went with it. A grant by labels cannot be judged
    /// then and is not held against it: nothing is read or written in a member not engaged
    /// (it is refused as such), and it is judged again once it is engaged.
    pub fn may_allow_cluster(&self, cluster: &str, labels: Option<&Labels>) -> bool {
        let unknown = labels.is_none() && self.cluster_selector.is_some();
        unknown || self.allows_cluster(cluster, labels)
    }

    /// Whether objects in namespace `ns` are within the grant: named, or a Namespace `live`
    /// holds (`v1` `Namespace`) has labels the selector matches.
    pub fn allows_namespace(&self, ns: &str, live: &dyn LiveObjects) -> bool {
        if self.namespaces.iter().any(|n| n == ns) {
            return true;
        }
        let Some(selector) = &self.namespace_selector else {
            return false;
        };
        let key = ObjectKey {
            namespace: None,
            name: ns.to_owned(),
        };
        live.get("v1", "Namespace", &key).is_some_and(|namespace| {
            let labels = namespace.metadata.labels.clone().unwrap_or_default();
            selector.matches(&labels)
        })
    }

    /// The widenings that reach beyond namespace `watched`, one line each as [`Grant::lines`]
    /// says them: a cluster-scoped parent, named namespaces other than `watched`, a namespace
    /// selector (it may select any). Empty: a host watching only `watched` can serve the entry.
    pub fn beyond(&self, watched: &str) -> Vec<String> {
        Grant {
            cluster_scoped_parent: self.cluster_scoped_parent,
            namespaces: self
                .namespaces
                .iter()
                .filter(|n| *n != watched)
                .cloned()
                .collect(),
            namespace_selector: self.namespace_selector.clone(),
            secret_data: false,
            clusters: Vec::new(),
            cluster_selector: None,
        }
        .lines()
    }

    /// One line per widening, as `weir plugins`, `weir rbac` and the admission log show it.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.cluster_scoped_parent {
            lines.push("cluster-scoped parent".to_owned());
        }
        if !self.namespaces.is_empty() {
            lines.push(format!("namespaces {}", self.namespaces.join(",")));
        }
        if let Some(selector) = &self.namespace_selector {
            lines.push(format!("namespaces labelled {}", said(selector)));
        }
        if self.secret_data {
            lines.push("related Secrets with their data".to_owned());
        }
        if !self.clusters.is_empty() {
            lines.push(format!(
                "children in member clusters {}",
                self.clusters.join(",")
            ));
        }
        if let Some(selector) = &self.cluster_selector {
            lines.push(format!(
                "children in member clusters labelled {}",
                said(selector)
            ));
        }
        lines
    }

    /// What the entry grants of member clusters, in one phrase (`none` when nothing).
    pub fn clusters_said(&self) -> String {
        let mut said_clusters: Vec<String> = self.clusters.clone();
        if let Some(selector) = &self.cluster_selector {
            said_clusters.push(format!("labelled {}", said(selector)));
        }
        if said_clusters.is_empty() {
            return "none".to_owned();
        }
        said_clusters.join(",")
    }
}

/// A label selector as the grant's lines say it.
fn said(selector: &LabelSelector) -> String {
    let labels: Vec<String> = (selector.match_labels.iter())
        .map(|(k, v)| format!("{k}={v}"))
        .chain(
            (selector.match_expressions.iter())
                .map(|e| format!("{} {:?} {:?}", e.key, e.operator, e.values)),
        )
        .collect();
    labels.join(",")
}

impl Default for ValidationPolicy {
    fn default() -> Self {
        Self {
            secret_types: DEFAULT_SECRET_TYPES
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            grants: Arc::default(),
            every_plugin: None,
        }
    }
}

impl ValidationPolicy {
    /// Whether a desired Secret of `secret_type` may be written.
    pub fn allows_secret_type(&self, secret_type: &str) -> bool {
        self.secret_types.iter().any(|t| t == secret_type)
    }

    /// What the policy widens for the plugin named `plugin`, if anything.
    pub fn grant(&self, plugin: &str) -> Option<&Grant> {
        self.grants
            .get(plugin)
            .or(self.every_plugin.as_ref())
            .filter(|g| g.widens())
    }
}
