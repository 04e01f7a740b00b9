//! The judge of a plugin's answer: pure rules, no cluster, one entry point ([`judge`]).
//!
//! A plugin's answer becomes writes in one step, the same wherever an answer is judged: the
//! controller before it applies (`reconcile`), `weir test` and `weir record` offline
//! (`fixtures`), and the rollout's comparison of a candidate's answer with the serving one's
//! (`rollout`). [`judge`] checks the whole answer against the plugin's declaration, the cluster
//! admin's [`ValidationPolicy`] and the [`LiveObjects`] (nobody else's objects), stamps the
//! host-owned fields on the children, and merges the plugin's status with the parent's: either
//! the whole answer passes, or it comes back untouched with the [`Refusal`]. Nothing here
//! talks to the cluster; the live objects are the caller's (the controller's cache, a fixture's
//! observed objects).
//!
//! A child placed in a member cluster carries marks naming its parent instead of an owner
//! reference ([`ParentMark`]); who controls a live object is read by the rule of its cluster
//! ([`Ownership`]).
//!
//! Beside the judge, the other rules of what crosses the sandbox's edge: what of an observed
//! object the plugin may see ([`redacted`]), how a call can fail ([`PluginError`]), and whether
//! a live object already holds a desired manifest ([`holds`], [`live_holds`]).

mod check;
mod cluster;
mod drift;
mod failure;
mod live;
mod marks;
mod policy;
mod redact;
mod refusal;
mod status;

use kube::api::DynamicObject;
use serde_json::Value;

pub use self::check::{
    DesiredChild, MANIFEST_HASH_ANNOTATION, MAX_CHILD_BYTES, MAX_CHILDREN, MAX_STATUS_BYTES,
    Ownership, SERVICE_ACCOUNT_TOKEN_TYPE, controller_uid, is_valid_name,
};
pub use self::drift::{holds, live_holds};
pub use self::failure::{FailureCause, PluginError};
pub use self::live::LiveObjects;
pub use self::marks::{
    MEMBER_CLUSTERS_ANNOTATION, PARENT_API_VERSION_ANNOTATION, PARENT_CLUSTER_ANNOTATION,
    PARENT_KIND_ANNOTATION, PARENT_NAME_ANNOTATION, PARENT_UID_LABEL, ParentMark,
    recorded_clusters,
};
pub use self::policy::{ANY_CLUSTER, DEFAULT_SECRET_TYPES, Grant, ValidationPolicy};
pub use self::redact::{DATA_HASH, data_hash, for_plugin, redacted};
pub use self::refusal::{Refusal, refusal_message};
pub use self::status::{Reconciled, desired_status, merge_diff, now};
use crate::plugin::{PluginInfo, ReconcileResponse, Requeue};

/// What an answer is judged against: who answered, for which parent, among which live objects,
/// under which policy, and the time a condition that changes is stamped with.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// The plugin's declaration.
    pub info: &'a PluginInfo,
    /// The parent the answer is for, as the plugin was given it.
    pub parent: &'a DynamicObject,
    /// The objects a desired child's name is looked up in.
    pub live: &'a dyn LiveObjects,
    /// What the cluster admin lets an answer carry.
    pub policy: &'a ValidationPolicy,
    /// `lastTransitionTime` of a condition whose status changes (see [`now`]).
    pub now: &'a str,
}

/// An answer the host accepts: what it writes.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The children, stamped, in the answer's order.
    pub children: Vec<DesiredChild>,
    /// The status the parent should show, the host's `Reconciled` condition saying it converged.
    pub status: Value,
    /// When the plugin asked to be called again.
    pub requeue: Requeue,
}

/// An answer the host refuses: why, and the answer as the plugin gave it (not copied).
#[derive(Debug)]
pub struct Refused {
    /// What was wrong with it.
    pub refusal: Refusal,
    /// The answer, untouched (a `--dump-failures` case keeps it).
    pub answer: ReconcileResponse,
}

/// The judgment of one answer: accepted, or refused with the answer handed back.
pub type Verdict = Result<Judged, Box<Refused>>;

/// Judges `answer` against `inputs`: the whole of it is accepted ([`Judged`]) or refused
/// ([`Refused`], with the answer handed back). Pure, so it runs the same in the controller,
/// offline in `weir test`, and on both versions of a rollout.
pub fn judge(inputs: Inputs<'_>, answer: ReconcileResponse) -> Verdict {
    #[cfg(test)]
    tests::count(&inputs.info.name);
    let parent = inputs.parent;
    if let Err(refusal) = cluster::check(
        inputs.info,
        parent,
        (&answer.children, &answer.clusters),
        inputs.live,
        inputs.policy,
    ) {
        return Err(Box::new(Refused { refusal, answer }));
    }
    let accepted = match check::check(
        inputs.info,
        parent,
        (&answer.children, answer.status.as_ref()),
        &answer.clusters,
        inputs.live,
        inputs.policy,
    ) {
        Ok(accepted) => accepted,
        Err(refusal) => return Err(Box::new(Refused { refusal, answer })),
    };
    let status = desired_status(
        parent.data.get("status"),
        answer.status,
        parent.metadata.generation,
        &Reconciled::ok(),
        inputs.now,
    );
    Ok(Judged {
        children: accepted.stamp(answer.children),
        status,
        requeue: answer.requeue,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    //! How many answers the judge saw, per plugin name, in this test process; and the judge's
    //! children for a bare list of children, as the checks' tests ask it.

    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};

    use kube::api::DynamicObject;
    use serde_json::Value;

    use super::{DesiredChild, Inputs, LiveObjects, Refusal, ValidationPolicy, judge};
    use crate::plugin::{PluginInfo, ReconcileResponse, Requeue};

    /// The judge's children for `children` and `status`, or its refusal.
    pub(crate) fn judge_children(
        info: &PluginInfo,
        parent: &DynamicObject,
        (children, status): (Vec<Value>, Option<&Value>),
        live: &dyn LiveObjects,
        policy: &ValidationPolicy,
    ) -> Result<Vec<DesiredChild>, Refusal> {
        let inputs = Inputs {
            info,
            parent,
            live,
            policy,
            now: "T",
        };
        let answer = ReconcileResponse {
            children,
            clusters: Vec::new(),
            status: status.cloned(),
            requeue: Requeue::Done,
        };
        judge(inputs, answer)
            .map(|judged| judged.children)
            .map_err(|refused| refused.refusal)
    }

    static JUDGED: Mutex<Option<HashMap<String, u64>>> = Mutex::new(None);

    pub(super) fn count(plugin: &str) {
        let mut judged = JUDGED.lock().unwrap_or_else(PoisonError::into_inner);
        *judged
            .get_or_insert_with(HashMap::new)
            .entry(plugin.to_owned())
            .or_default() += 1;
    }

    /// Answers of plugins named `plugin` judged so far (a test names its plugins uniquely).
    pub(crate) fn judged(plugin: &str) -> u64 {
        let judged = JUDGED.lock().unwrap_or_else(PoisonError::into_inner);
        judged
            .as_ref()
            .and_then(|j| j.get(plugin))
            .copied()
            .unwrap_or_default()
    }
}
