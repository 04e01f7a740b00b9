//! What one reconcile decides: the children to hold, the status, when to look again.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// One desired child, already turned into the JSON text the host applies, and
/// the cluster it belongs in.
///
/// Build it with `.into()` from any k8s-openapi object (or any other
/// `k8s_openapi::Resource`); its `apiVersion` and `kind` come from the type. It
/// belongs in the parent's cluster unless [`Child::in_cluster`] names another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    pub(crate) json: Result<String, String>,
    pub(crate) cluster: Option<String>,
}

impl<K: k8s_openapi::Resource + Serialize> From<K> for Child {
    fn from(object: K) -> Self {
        // Serialising a k8s-openapi object cannot fail in practice; should it,
        // the reconcile fails with the reason instead of panicking in the guest.
        let json = serde_json::to_string(&object).map_err(|e| format!("{} {e}", K::KIND));
        Child {
            json,
            cluster: None,
        }
    }
}

impl Child {
    /// A child given as raw JSON, for kinds without a Rust type.
    pub fn json(manifest: Value) -> Self {
        Child::text(manifest.to_string(), None)
    }

    /// The child belongs in `cluster` (contract 0.4.0), not the parent's. The host
    /// refuses a cluster it has not engaged.
    pub fn in_cluster(mut self, cluster: impl Into<String>) -> Self {
        self.cluster = Some(cluster.into());
        self
    }

    pub(crate) fn text(json: String, cluster: Option<String>) -> Self {
        Child {
            json: Ok(json),
            cluster,
        }
    }
}

/// When the host should reconcile this parent again, apart from watch events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Requeue {
    /// Converged: wait for the next change to the parent or a child.
    #[default]
    Done,
    /// Again as soon as possible (the host still applies its hot-loop guard).
    Now,
    /// Again after this long.
    After(Duration),
}

/// The answer of one reconcile: the level the cluster should be held at.
///
/// Children not listed are deleted by the host, so always list every child.
#[must_use = "an Outcome does nothing until it is returned from `reconcile`"]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub(crate) children: Vec<Child>,
    pub(crate) status: Option<Result<String, String>>,
    pub(crate) requeue: Requeue,
}

impl Outcome {
    /// Hold the parent's children at exactly these manifests.
    pub fn apply(children: Vec<Child>) -> Self {
        Outcome {
            children,
            status: None,
            requeue: Requeue::Done,
        }
    }

    /// Set the parent's `status` to this value.
    pub fn status(mut self, status: impl Serialize) -> Self {
        self.status = Some(serde_json::to_string(&status).map_err(|e| e.to_string()));
        self
    }

    /// Reconcile again after `delay` even if nothing changes.
    pub fn requeue_after(mut self, delay: Duration) -> Self {
        self.requeue = Requeue::After(delay);
        self
    }

    /// Reconcile again as soon as possible.
    pub fn requeue_now(mut self) -> Self {
        self.requeue = Requeue::Now;
        self
    }
}

/// The outcome of one cleanup step while the parent is being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finalize {
    /// Cleanup is complete; the host removes its finalizer.
    Complete,
    /// Not done yet; ask again after this long.
    AgainAfter(Duration),
    /// A cleanup step that acts (contract 0.3.0): the host holds the parent's children and
    /// status at `outcome`'s while its finalizer is held (applied and pruned as a reconcile's),
    /// and removes the finalizer once they are written if `finalized`; otherwise it asks again
    /// as `outcome`'s requeue says (by default at the next change of the parent or a child).
    /// Scale a workload to zero, then let the parent go:
    /// `Finalize::Apply { outcome: Outcome::apply(vec![scaled.into()]), finalized: none_left }`.
    Apply {
        /// The children and status to hold while cleaning up, and when to ask again.
        outcome: Outcome,
        /// Cleanup is done once `outcome` is written.
        finalized: bool,
    },
}
