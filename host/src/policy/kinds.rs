//! Which kinds exist and how they are scoped: the API server's discovery, or a static table offline.
//!
//! A plugin's `describe()` says whether a kind is namespaced and what its plural is; admission
//! never believes it. [`Discovered`] asks the cluster (kube's `pinned_kind`, one request per kind);
//! [`WellKnown`] is the built-in API of Kubernetes 1.33, for `weir rbac` (no cluster) and tests.

use std::collections::HashMap;

use kube::Client;
use kube::core::GroupVersionKind;
pub use kube::discovery::Scope;
use kube::error::DiscoveryError;

use crate::plugin::{PluginInfo, ResourceKind};

/// What the API server says about one `group/version/kind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// Served, under this plural and scope.
    Served {
        /// The URL plural the API server serves the kind under.
        plural: String,
        /// Namespaced or cluster-wide.
        scope: Scope,
    },
    /// Known not to be served (discovery answered, without this kind).
    NotServed,
    /// Cannot tell (offline, and not a well-known kind).
    Unknown,
}

/// A source of truth for kinds: discovery or the static table.
pub trait Resolve {
    /// How `kind` (by group, version and kind; the declared plural and scope are ignored) is served.
    fn resolve(&self, kind: &ResourceKind) -> Resolved;
}

/// One row of the static table: a built-in kind of Kubernetes 1.33.
struct Row {
    group: &'static str,
    versions: &'static [&'static str],
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
}

const fn row(
    group: &'static str,
    versions: &'static [&'static str],
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> Row {
    Row {
        group,
        versions,
        kind,
        plural,
        namespaced,
    }
}

const V1: &[&str] = &["v1"];

/// The built-in kinds a plugin might name, as Kubernetes 1.33 serves them.
const TABLE: &[Row] = &[
    row("", V1, "ConfigMap", "configmaps", true),
    row("", V1, "Secret", "secrets", true),
    row("", V1, "Service", "services", true),
    row("", V1, "ServiceAccount", "serviceaccounts", true),
    row(
        "",
        V1,
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
    ),
    row("", V1, "Pod", "pods", true),
    row("", V1, "PodTemplate", "podtemplates", true),
    row(
        "",
        V1,
        "ReplicationController",
        "replicationcontrollers",
        true,
    ),
    row("", V1, "Endpoints", "endpoints", true),
    row("", V1, "Event", "events", true),
    row("", V1, "LimitRange", "limitranges", true),
    row("", V1, "ResourceQuota", "resourcequotas", true),
    row("", V1, "Namespace", "namespaces", false),
    row("", V1, "Node", "nodes", false),
    row("", V1, "PersistentVolume", "persistentvolumes", false),
    row("apps", V1, "Deployment", "deployments", true),
    row("apps", V1, "StatefulSet", "statefulsets", true),
    row("apps", V1, "DaemonSet", "daemonsets", true),
    row("apps", V1, "ReplicaSet", "replicasets", true),
    row(
        "apps",
        V1,
        "ControllerRevision",
        "controllerrevisions",
        true,
    ),
    row("batch", V1, "Job", "jobs", true),
    row("batch", V1, "CronJob", "cronjobs", true),
    row(
        "autoscaling",
        &["v1", "v2"],
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
    ),
    row(
        "policy",
        V1,
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
    row("networking.k8s.io", V1, "Ingress", "ingresses", true),
    row(
        "networking.k8s.io",
        V1,
        "NetworkPolicy",
        "networkpolicies",
        true,
    ),
    row(
        "networking.k8s.io",
        V1,
        "IngressClass",
        "ingressclasses",
        false,
    ),
    row(
        "discovery.k8s.io",
        V1,
        "EndpointSlice",
        "endpointslices",
        true,
    ),
    row("coordination.k8s.io", V1, "Lease", "leases", true),
    row("events.k8s.io", V1, "Event", "events", true),
    row("rbac.authorization.k8s.io", V1, "Role", "roles", true),
    row(
        "rbac.authorization.k8s.io",
        V1,
        "RoleBinding",
        "rolebindings",
        true,
    ),
    row(
        "rbac.authorization.k8s.io",
        V1,
        "ClusterRole",
        "clusterroles",
        false,
    ),
    row(
        "rbac.authorization.k8s.io",
        V1,
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    row(
        "apiextensions.k8s.io",
        V1,
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        V1,
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        V1,
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        V1,
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        V1,
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
    ),
    row(
        "apiregistration.k8s.io",
        V1,
        "APIService",
        "apiservices",
        false,
    ),
    row(
        "certificates.k8s.io",
        V1,
        "CertificateSigningRequest",
        "certificatesigningrequests",
        false,
    ),
    row(
        "storage.k8s.io",
        V1,
        "StorageClass",
        "storageclasses",
        false,
    ),
    row(
        "scheduling.k8s.io",
        V1,
        "PriorityClass",
        "priorityclasses",
        false,
    ),
];

/// The built-in API of Kubernetes 1.33, offline: what `weir rbac` and the tests resolve against.
/// Kinds outside the table are [`Resolved::Unknown`], never assumed to be namespaced.
#[derive(Clone, Copy, Debug, Default)]
pub struct WellKnown;

impl Resolve for WellKnown {
    fn resolve(&self, kind: &ResourceKind) -> Resolved {
        let Some(row) = TABLE
            .iter()
            .find(|r| r.group == kind.group && r.kind == kind.kind)
        else {
            return Resolved::Unknown;
        };
        if !row.versions.contains(&kind.version.as_str()) {
            return Resolved::NotServed;
        }
        Resolved::Served {
            plural: row.plural.to_owned(),
            scope: if row.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            },
        }
    }
}

/// Whether `group` is Kubernetes' own: the core group, a group without a dot (`apps`, `batch`,
/// which a CRD may not use), or one under `k8s.io`/`kubernetes.io` (reserved by API review,
/// KEP-2337: a CRD there needs the `api-approved.kubernetes.io` annotation).
pub fn is_builtin_group(group: &str) -> bool {
    group.is_empty()
        || !group.contains('.')
        || group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// Groups whose every kind is beyond a plugin, whatever the policy says: access control
/// (RBAC, token and access reviews, certificate signing), the API's own shape (CRDs,
/// aggregated APIs) and admission (webhooks, admission policies). One of these as a child
/// or a parent hands a plugin the keys to the cluster.
const NEVER_GROUPS: &[&str] = &[
    "rbac.authorization.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "certificates.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "admissionregistration.k8s.io",
];

/// Whether `group`/`kind` may never be a plugin's parent or child (see [`NEVER_GROUPS`];
/// and `Namespace`, whose deletion deletes everything in it).
pub fn is_never(group: &str, kind: &str) -> bool {
    NEVER_GROUPS.contains(&group) || (group.is_empty() && kind == "Namespace")
}

/// The cluster's answer for the kinds of some plugins, taken once (a snapshot).
#[derive(Clone, Debug, Default)]
pub struct Discovered {
    kinds: HashMap<(String, String, String), Resolved>,
}

impl Discovered {
    /// Asks the API server about the parent, child and related kinds of `info` (one request per kind,
    /// with kube's `discovery::pinned_kind`). A kind or group the server does not serve is
    /// [`Resolved::NotServed`]; any other failure (network, authorization) is an error, so a
    /// flaky API server never turns into a refusal.
    pub async fn for_plugin(client: &Client, info: &PluginInfo) -> Result<Self, kube::Error> {
        let mut found = Self::default();
        found
            .add(
                client,
                std::iter::once(&info.parent)
                    .chain(&info.children)
                    .chain(&info.related),
            )
            .await?;
        Ok(found)
    }

    /// Adds the answers for `kinds` (already known ones are not asked again).
    pub async fn add<'a>(
        &mut self,
        client: &Client,
        kinds: impl IntoIterator<Item = &'a ResourceKind>,
    ) -> Result<(), kube::Error> {
        for kind in kinds {
            let key = key(kind);
            if self.kinds.contains_key(&key) {
                continue;
            }
            let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
            let resolved = match kube::discovery::pinned_kind(client, &gvk).await {
                Ok((resource, caps)) => Resolved::Served {
                    plural: resource.plural,
                    scope: caps.scope,
                },
                Err(kube::Error::Discovery(
                    DiscoveryError::MissingKind(_)
                    | DiscoveryError::MissingApiGroup(_)
                    | DiscoveryError::MissingResource(_)
                    | DiscoveryError::EmptyApiGroup(_),
                )) => Resolved::NotServed,
                Err(kube::Error::Api(status)) if status.is_not_found() => Resolved::NotServed,
                Err(e) => return Err(e),
            };
            self.kinds.insert(key, resolved);
        }
        Ok(())
    }

    /// Records an answer by hand (for tests and for callers with their own discovery).
    pub fn insert(&mut self, kind: &ResourceKind, resolved: Resolved) {
        self.kinds.insert(key(kind), resolved);
    }
}

impl Resolve for Discovered {
    fn resolve(&self, kind: &ResourceKind) -> Resolved {
        self.kinds
            .get(&key(kind))
            .cloned()
            .unwrap_or(Resolved::Unknown)
    }
}

fn key(kind: &ResourceKind) -> (String, String, String) {
    (kind.group.clone(), kind.version.clone(), kind.kind.clone())
}
