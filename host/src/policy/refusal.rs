//! Why a plugin is refused: one variant per rule of admission, each message naming the plugin
//! (`name@version`) and the kind, so an operator reading the admission log knows what to change.

use crate::plugin::ResourceKind;

/// Why a plugin (or one of its answers) is refused. Every message names the plugin and the kind.
#[derive(Debug, thiserror::Error)]
pub enum PolicyRefusal {
    /// A declared group, version, kind or plural is not one concrete name (`*`, a
    /// subresource such as `pods/exec`, an empty or malformed name).
    #[error(
        "plugin {plugin}: {role} {field} {value:?} is not a concrete name (no wildcards, subresources or empty names)"
    )]
    NotConcrete {
        /// The plugin (`name@version`).
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// `group`, `version`, `kind` or `plural`.
        field: &'static str,
        /// What the plugin declared.
        value: String,
    },
    /// A kind no plugin may declare, whatever the policy (see [`super::kinds::is_never`]).
    #[error(
        "plugin {plugin}: {role} {kind} is never allowed (access control, API shape, admission or Namespace)"
    )]
    Never {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
    },
    /// The parent is a built-in kind the policy does not list in `builtinParents`.
    #[error(
        "plugin {plugin}: parent {kind} is a built-in kind; a plugin reconciles a custom resource of its own unless the policy's builtinParents lists it"
    )]
    BuiltinParent {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// The plugin's CRD is not YAML or JSON (or holds more than one document).
    #[error("plugin {plugin}: its CRD does not parse as one YAML or JSON document")]
    CrdParse {
        /// The plugin.
        plugin: String,
        /// The parser's error.
        #[source]
        source: crate::yaml::Error,
    },
    /// The plugin's CRD does not define exactly its parent kind.
    #[error("plugin {plugin}: its CRD does not define exactly its parent {kind}: {reason}")]
    CrdMismatch {
        /// The plugin.
        plugin: String,
        /// The declared parent.
        kind: String,
        /// What differs.
        reason: String,
    },
    /// The parent is served cluster-wide; children live in the parent's namespace.
    #[error("plugin {plugin}: parent {kind} is cluster-scoped; only namespaced parents are served")]
    ClusterScopedParent {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// A child kind the policy's `children` does not list.
    #[error("plugin {plugin}: child {kind} is not allowed by the policy (its `children` list)")]
    ChildNotAllowed {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// A related kind the policy's `related` does not list.
    #[error(
        "plugin {plugin}: related kind {kind} is not allowed by the policy (its `related` list)"
    )]
    RelatedNotAllowed {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// A child kind served cluster-wide (by discovery, whatever the plugin says).
    #[error("plugin {plugin}: child {kind} is cluster-scoped; children must be namespaced")]
    ClusterScopedChild {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// The API server does not serve this group/version/kind.
    #[error("plugin {plugin}: {role} {kind} is not served by the API server")]
    NotServed {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
    },
    /// Offline, a child kind outside the table of well-known kinds cannot be checked.
    #[error(
        "plugin {plugin}: child {kind} is not a well-known kind, so its scope cannot be checked without a cluster"
    )]
    Unverifiable {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// The declared plural or scope differs from what the API server serves.
    #[error("plugin {plugin}: {role} {kind} is declared as {declared} but served as {served}")]
    Misdeclared {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
        /// What the plugin said (plural, scope).
        declared: String,
        /// What the API server serves.
        served: String,
    },
}

/// `apps/v1 Deployment`.
pub(super) fn describe(kind: &ResourceKind) -> String {
    format!("{} {}", kind.api_version(), kind.kind)
}
