//! The member clusters a parent may have children in, recorded on it, and what holds up its deletion.
//!
//! A parent's children in members are found in the caches of the members engaged now
//! (`crate::clusters::Engaged::children_of`). A member released meanwhile (its kubeconfig
//! removed) shows nothing, and a deletion that believed it would let the parent go and leave
//! its children there behind. So the host records on the parent, in
//! [`MEMBER_CLUSTERS_ANNOTATION`], every member cluster it may have children in ([`to_record`]):
//! written with the host's finalizer, grown before a child is placed in a new cluster, shrunk
//! only once an engaged member's listed cache shows no child of it there. A cluster that is not
//! engaged stays recorded: what it holds cannot be seen.
//!
//! The one rule of a deletion ([`holdups`]): the host's finalizer is held while a recorded
//! cluster is not engaged, or while an engaged member's children cannot be deleted (its API
//! server fails). The parent's [`MEMBER_CHILDREN_CONDITION`] condition names each such cluster
//! and why ([`held_status`]); it changes only when that does. An operator who knows a member
//! is gone for good lets the parent go by hand: removing the cluster from the annotation, or the
//! host's finalizer from the parent.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::answer::MEMBER_CLUSTERS_ANNOTATION;

/// The host's condition on a parent being deleted whose children in member clusters cannot all
/// be deleted yet: `False` while they are left, with the clusters that hold them up.
pub const MEMBER_CHILDREN_CONDITION: &str = "MemberChildrenDeleted";

/// What the host can tell of a member cluster's children of a parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    /// Not engaged: what it holds can neither be seen nor deleted.
    Released,
    /// Engaged, its caches of the child kinds not all listed yet.
    Listing,
    /// Engaged and listed: no child in its cache means none there.
    Listed,
}

/// What a parent should record: the engaged clusters a child is placed in now, the clusters a
/// child of it is seen in, and every cluster `recorded` names whose cache cannot show that
/// none is left there (not engaged, or not listed yet).
pub(super) fn to_record<'a>(
    recorded: &BTreeSet<String>,
    placed: impl IntoIterator<Item = &'a str>,
    observed: impl IntoIterator<Item = &'a str>,
    seen: impl Fn(&str) -> Seen,
) -> BTreeSet<String> {
    // A child placed in a cluster that is not engaged is not written: nothing is there to wait for.
    let placed = placed.into_iter().filter(|c| seen(c) != Seen::Released);
    let unknown = recorded.iter().filter(|c| seen(c) != Seen::Listed);
    placed
        .chain(observed)
        .map(str::to_owned)
        .chain(unknown.cloned())
        .collect()
}

/// The JSON Patch operations turning the annotations as cached into ones recording `record`;
/// none when they already do. An absent map is tested as `null`, so that annotations written
/// meanwhile are never replaced.
pub(super) fn record_ops(
    cached: Option<&BTreeMap<String, String>>,
    record: &BTreeSet<String>,
) -> Vec<Value> {
    let path = format!(
        "/metadata/annotations/{}",
        MEMBER_CLUSTERS_ANNOTATION
            .replace('~', "~0")
            .replace('/', "~1")
    );
    let value = record
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",");
    let now = cached.and_then(|a| a.get(MEMBER_CLUSTERS_ANNOTATION));
    if now == Some(&value) {
        return Vec::new();
    }
    if record.is_empty() {
        return match now {
            Some(_) => vec![json!({"op": "remove", "path": path})],
            None => Vec::new(),
        };
    }
    match cached {
        Some(_) => vec![json!({"op": "add", "path": path, "value": value})],
        None => vec![
            json!({"op": "test", "path": "/metadata/annotations", "value": null}),
            json!({"op": "add", "path": "/metadata/annotations",
                   "value": {MEMBER_CLUSTERS_ANNOTATION: value}}),
        ],
    }
}

/// Why a member cluster holds up a parent's deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Why {
    /// The parent records it and it is not engaged.
    Released,
    /// The parent records it, it is engaged, and it has not answered its first list: what it
    /// holds of the parent's children cannot be seen.
    Unlisted,
    /// Deleting a child there failed, with this error.
    Failing(String),
}

/// One member cluster holding up a parent's deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Holdup {
    /// The cluster.
    pub cluster: String,
    /// Why.
    pub why: Why,
}

impl std::fmt::Display for Holdup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            Why::Released => write!(
                f,
                "member cluster {:?} is not engaged (the parent recorded children there)",
                self.cluster
            ),
            Why::Unlisted => write!(
                f,
                "member cluster {:?} has not answered its first list (its children there cannot be seen)",
                self.cluster
            ),
            Why::Failing(error) => write!(f, "member cluster {:?}: {error}", self.cluster),
        }
    }
}

/// The one rule of a deletion: the clusters that hold it up, by name. A recorded cluster that
/// is not engaged, or engaged but not listed yet, and an engaged one whose children could not
/// be deleted (`failing`: its error). While none does, the deletion goes on; no other member
/// (one that never answers included) holds it up.
pub(super) fn holdups(
    recorded: &BTreeSet<String>,
    failing: BTreeMap<String, String>,
    seen: impl Fn(&str) -> Seen,
) -> Vec<Holdup> {
    let mut holdups: BTreeMap<String, Why> = (recorded.iter())
        .filter_map(|c| match seen(c) {
            Seen::Released => Some((c.clone(), Why::Released)),
            Seen::Listing => Some((c.clone(), Why::Unlisted)),
            Seen::Listed => None,
        })
        .collect();
    holdups.extend(failing.into_iter().map(|(c, e)| (c, Why::Failing(e))));
    (holdups.into_iter())
        .map(|(cluster, why)| Holdup { cluster, why })
        .collect()
}

/// The status a parent being deleted should show for `holdups`: `live` with the host's
/// [`MEMBER_CHILDREN_CONDITION`] set (one of that type replaced, everything else kept). `None`
/// when it needs none: nothing holds the deletion up and nothing ever did.
pub(super) fn held_status(
    live: Option<&Value>,
    holdups: &[Holdup],
    generation: Option<i64>,
    now: &str,
) -> Option<Value> {
    let mut status: Map<String, Value> =
        live.and_then(Value::as_object).cloned().unwrap_or_default();
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let at = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(MEMBER_CHILDREN_CONDITION));
    let (reason, message) = match holdups {
        [] if at.is_none() => return None,
        [] => (
            "Deleting",
            "every member cluster holding its children answers: they are being deleted".to_owned(),
        ),
        _ => {
            let released = holdups.iter().all(|h| h.why == Why::Released);
            let reason = if released {
                "MemberNotEngaged"
            } else {
                "MemberUnreachable"
            };
            let each: Vec<String> = holdups.iter().map(ToString::to_string).collect();
            let message = format!("deletion waits for its children in {}", each.join("; "));
            (reason, message)
        }
    };
    // Its status is always False: the time it turned so stays.
    let since = at
        .map(|i| &conditions[i])
        .filter(|p| p.get("status").and_then(Value::as_str) == Some("False"))
        .and_then(|p| p.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut condition = json!({
        "type": MEMBER_CHILDREN_CONDITION,
        "status": "False",
        "reason": reason,
        "message": crate::plugin::truncate(&message, MAX_CONDITION_MESSAGE),
        "lastTransitionTime": since,
    });
    if let Some(g) = generation {
        condition["observedGeneration"] = json!(g);
    }
    match at {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    status.insert("conditions".into(), Value::Array(conditions));
    Some(Value::Object(status))
}

/// Bytes Kubernetes accepts in a condition message.
const MAX_CONDITION_MESSAGE: usize = 32_768;

#[cfg(test)]
#[path = "placed_tests.rs"]
mod tests;
