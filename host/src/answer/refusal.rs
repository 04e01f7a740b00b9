//! Why the host refuses a plugin's answer (or selection), and the message it shows for it.

use crate::plugin::PluginInfo;

/// The text the host puts in the parent's condition and Event when it refuses an answer;
/// `weir test` prints the same.
pub fn refusal_message(info: &PluginInfo, refusal: &Refusal) -> String {
    format!("plugin {}: answer refused: {refusal}", info.name)
}

/// Why the plugin's answer was refused. Permanent: retrying the same answer cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A child is not a JSON object, lacks `apiVersion`, `kind` or `metadata.name`, or has
    /// `metadata.labels` or `metadata.annotations` that are not maps.
    #[error("child #{index} has a missing or mistyped {field}")]
    Malformed {
        /// Position in the plugin's answer.
        index: usize,
        /// The missing or mistyped field.
        field: &'static str,
    },
    /// A child's kind is not one the plugin declared.
    #[error("child {kind} {name:?} is of a kind the plugin did not declare ({api_version})")]
    UndeclaredKind {
        /// apiVersion of the child.
        api_version: String,
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
    },
    /// A child would land in another namespace than its parent's, or the parent has none.
    #[error(
        "child {kind} {name:?} asks for namespace {wanted:?}; children live in the parent's namespace {parent:?}"
    )]
    Namespace {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The namespace the plugin asked for.
        wanted: String,
        /// The parent's namespace (empty for a cluster-scoped parent).
        parent: String,
    },
    /// A cluster-scoped parent's child asks for a namespace the policy's entry for the plugin
    /// neither names nor selects (or for none).
    #[error(
        "child {kind} {name:?} asks for namespace {wanted:?}, which the policy's entry for this plugin does not allow"
    )]
    NamespaceNotGranted {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The namespace the plugin asked for.
        wanted: String,
    },
    /// A child's name is not a valid Kubernetes object name.
    #[error("child {kind} has an invalid name {name:?}")]
    InvalidName {
        /// Kind of the child.
        kind: String,
        /// The name.
        name: String,
    },
    /// Two children share kind and name.
    #[error("child {kind} {name:?} appears twice")]
    Duplicate {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
    },
    /// The answer has too many children or a child too large.
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge {
        /// What is too large.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// An object with that name exists and this parent does not control it.
    #[error("{kind} {namespace}/{name} exists and is {owner}; Weir does not adopt or overwrite it")]
    Foreign {
        /// Kind of the object.
        kind: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// `not owned by any controller` or `controlled by <uid>`; in a member cluster, `not
        /// marked by any parent` or `marked by the parent <uid>`, and the cluster.
        owner: String,
    },
    /// A child carries `metadata.finalizers`: it could outlive its parent's deletion forever.
    #[error(
        "child {kind} {name:?} carries finalizers {finalizers}; a plugin may not put finalizers on its children"
    )]
    Finalizers {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The finalizers, as JSON.
        finalizers: String,
    },
    /// A Secret child of a `type` the policy's `secretTypes` does not list (by default the
    /// credential-bearing ones the API server fills, such as a ServiceAccount's token).
    #[error(
        "child Secret {name:?} is of type {secret_type}, which the host's policy (secretTypes) does not let a plugin write: credential-bearing types such as kubernetes.io/service-account-token are filled by the API server"
    )]
    SecretType {
        /// Name of the Secret.
        name: String,
        /// Its type.
        secret_type: String,
    },
    /// The desired status is larger than [`MAX_STATUS_BYTES`] once serialised.
    #[error("the desired status ({size} bytes) exceeds the limit of {limit} bytes")]
    StatusTooLarge {
        /// Its serialised size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A selection (`select`) reads a kind the plugin did not declare in `related`.
    #[error(
        "selection #{index} reads {kind} ({api_version}) {what}, a kind the plugin did not declare as related"
    )]
    UndeclaredRelated {
        /// Position in the plugin's selection.
        index: usize,
        /// apiVersion of the kind.
        api_version: String,
        /// The kind.
        kind: String,
        /// `by name "x"` or `by label selector`.
        what: String,
    },
    /// A selection reads another namespace than the parent's.
    #[error(
        "selection #{index} reads {kind} in namespace {wanted:?}; related objects are read in the parent's namespace {parent:?} only"
    )]
    RelatedNamespace {
        /// Position in the plugin's selection.
        index: usize,
        /// The kind.
        kind: String,
        /// The namespace the plugin asked for.
        wanted: String,
        /// The parent's namespace.
        parent: String,
    },
    /// A selection reads a namespace the policy's entry for the plugin does not allow.
    #[error(
        "selection #{index} reads {kind} in namespace {wanted:?}, which the policy's entry for this plugin does not allow"
    )]
    RelatedNamespaceNotGranted {
        /// Position in the plugin's selection.
        index: usize,
        /// The kind.
        kind: String,
        /// The namespace the plugin asked for.
        wanted: String,
    },
    /// A child names a cluster the host has not engaged (contract 0.4.0).
    #[error(
        "child {kind} {key} of {plugin} names cluster {cluster:?}, which this host has not engaged (its own cluster is {local:?})",
        local = crate::plugin::LOCAL_CLUSTER
    )]
    UnknownCluster {
        /// `name@version` of the plugin.
        plugin: String,
        /// Kind of the child.
        kind: String,
        /// The child's key, `namespace/name`.
        key: String,
        /// The cluster it names.
        cluster: String,
    },
    /// A child names a member cluster the policy does not grant its plugin (contract 0.4.0).
    #[error(
        "child {kind} {key} of {plugin} names cluster {cluster:?}, which the policy does not grant this plugin (granted: {granted}; the policy's `plugins:` entry lists the clusters it may place children in)"
    )]
    ClusterNotGranted {
        /// `name@version` of the plugin.
        plugin: String,
        /// Kind of the child.
        kind: String,
        /// The child's key, `namespace/name`.
        key: String,
        /// The cluster it names.
        cluster: String,
        /// The clusters the policy grants it, or `none`.
        granted: String,
    },
    /// A selection reads in a cluster the policy does not grant its plugin (contract 0.4.0).
    #[error(
        "selection #{index} of {kind} reads in cluster {cluster:?}, which the policy does not grant this plugin (granted: {granted}; the policy's `plugins:` entry lists the clusters it may place children in and read in)"
    )]
    RelatedClusterNotGranted {
        /// Position in the plugin's selection.
        index: usize,
        /// The kind.
        kind: String,
        /// The cluster it names.
        cluster: String,
        /// The clusters the policy grants it, or `none`.
        granted: String,
    },
    /// A selection reads in a cluster the host has not engaged, or whose cache of the kind
    /// holds no first list yet (contract 0.4.0).
    #[error(
        "selection #{index} of {kind} reads in cluster {cluster:?}, which this host has not engaged or not listed yet (its own cluster is {local:?})",
        local = crate::plugin::LOCAL_CLUSTER
    )]
    RelatedCluster {
        /// Position in the plugin's selection.
        index: usize,
        /// The kind.
        kind: String,
        /// The cluster it names.
        cluster: String,
    },
    /// A selection is malformed (an invalid name, a selector Kubernetes would reject, a
    /// namespace for a cluster-scoped kind).
    #[error("selection #{index} of {kind} is invalid: {reason}")]
    InvalidSelection {
        /// Position in the plugin's selection.
        index: usize,
        /// The kind.
        kind: String,
        /// What is wrong.
        reason: String,
    },
}
