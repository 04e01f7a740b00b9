//! What a `Plugin`'s status says: computed from what the host serves and what its last attempt
//! made of the spec, and written only when it changed.
//!
//! Conditions, as `metav1.Condition`:
//! - `Loaded`: the current spec's component was fetched, verified, compiled and admitted
//!   (`False` with the reason it was refused; `Unknown` while it is being fetched);
//! - `Ready`: some version of this Plugin serves its kind. A refused update leaves `Ready`
//!   `True`: the previous version keeps serving, and `status.digest` still names it;
//! - `TagChecked`, for a version fetched by tag: `True` when the registry said the tag names
//!   what serves, `False` (reason `RegistryUnreachable`) while the registry could not be
//!   reached and the pinned digest serves from the local store; its `lastTransitionTime` says
//!   since when. Absent for a version named by digest or read from a ConfigMap;
//! - `Verified`, with a verification policy: `True` naming the keys that signed what serves,
//!   `False` (`Unsigned`, `SignatureUntrusted`, `SignatureUnavailable`) when it serves under
//!   the `audit` level without verifying. Under `enforce` nothing unverified serves: `Loaded`
//!   is `False` with that reason and why;
//! - `CandidateLoaded` and `CandidateVerified`, while `spec.candidate` names one: the same two
//!   questions of the candidate. `CandidateLoaded` is `True` once it was fetched, verified and
//!   compiled and handed to the rollout, `False` with the reason it was refused before any load
//!   (a candidate refused is never shadowed, canaried or promoted; a rollout already under way
//!   goes on with the candidate proposed before); `CandidateVerified` is `False` when it rolls
//!   out under `audit` without verifying;
//! - `CacheLimited`, on a TenantPlugin of a tenant with a cache cap (`maxCachedObjects`): `True`
//!   (`AtCap`) while the cap leaves objects out, `False` (`WithinCap`) once every kind is cached
//!   whole again ([`super::cache_status`]).

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::cache_status::{CACHE_LIMITED, cache_condition, listing};
use super::candidate_status::{CandidateAttempt, candidate_conditions};
use super::fetch::TagCheck;
use super::resource::{Condition, PluginResource, PluginStatus, short_digest};
use super::verdict::Signature;
use crate::runtime::Fill;

/// The component that serves a Plugin's kind, as its status shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serving {
    /// The manifest digest (`sha256:…`).
    pub digest: String,
    /// Plugin name, from `describe()`.
    pub name: String,
    /// Plugin version, from `describe()`.
    pub version: String,
    /// The parent kind, `Kind.group`.
    pub kind: String,
}

/// What the last attempt on a Plugin's spec came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Not decided yet (being fetched or compiled, or waiting for a retry).
    Pending,
    /// The spec's component serves.
    Loaded,
    /// The spec's component is refused.
    Refused {
        /// CamelCase reason (`DigestMismatch`, `PullFailed`, `KindConflict`, ...).
        reason: &'static str,
        /// Why, for people (names the reference and the plugin where known).
        message: String,
    },
}

/// What the host checked of the version serving beyond its digest, of its candidate, and of
/// the cache it reconciles from.
#[derive(Clone, Copy, Debug)]
pub struct Checks<'a> {
    /// What its fetch learned of its tag.
    pub tag: &'a TagCheck,
    /// Its signatures (`None` without a verification policy).
    pub signature: Option<&'a Signature>,
    /// What became of `spec.candidate` (`None` while it names none).
    pub candidate: Option<&'a CandidateAttempt>,
    /// What its tenant's capped cache holds (`None`: a Plugin, or a tenant with no cap).
    pub cache: Option<&'a Fill>,
}

/// The status a Plugin should have. Transition times are carried over from `previous` where a
/// condition's status did not change.
pub fn desired(
    generation: Option<i64>,
    serving: Option<&Serving>,
    attempt: &Attempt,
    checks: Checks<'_>,
    previous: Option<&PluginStatus>,
) -> PluginStatus {
    let tag = checks.tag;
    let loaded = match attempt {
        Attempt::Pending => (
            "Unknown",
            "Fetching",
            "the component is being fetched".into(),
        ),
        Attempt::Loaded => (
            "True",
            "Loaded",
            serving.map_or_else(String::new, |s| {
                format!("{} loaded as {}@{}", s.digest, s.name, s.version)
            }),
        ),
        Attempt::Refused { reason, message } => ("False", *reason, message.clone()),
    };
    let ready = match (serving, attempt) {
        (Some(s), Attempt::Refused { .. }) => (
            "True",
            "Serving",
            format!(
                "{}@{} ({}) keeps serving {}; the current spec is refused (see Loaded)",
                s.name,
                s.version,
                short_digest(&s.digest),
                s.kind
            ),
        ),
        (Some(s), _) => (
            "True",
            "Serving",
            format!("{}@{} serves {}", s.name, s.version, s.kind),
        ),
        (None, Attempt::Refused { reason, .. }) => {
            ("False", *reason, "no version of this Plugin serves".into())
        }
        (None, _) => (
            "False",
            "NotLoaded",
            "no version of this Plugin serves yet".into(),
        ),
    };
    let condition = |type_: &str, (status, reason, message): (&str, &str, String)| {
        let before = previous
            .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_))
            .filter(|c| c.status == status);
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            last_transition_time: before
                .and_then(|c| c.last_transition_time.clone())
                .or_else(|| Some(now())),
            observed_generation: generation,
        }
    };
    let tag_checked = match (serving, tag) {
        (Some(s), TagCheck::Checked) => Some((
            "True",
            "Checked",
            format!("the registry says the tag names {}", s.digest),
        )),
        (Some(s), TagCheck::Unchecked(why)) => Some((
            "False",
            "RegistryUnreachable",
            format!(
                "the registry could not be reached to check what the tag names ({why}); the \
                 pinned {} serves from the local store, and the tag is checked again until \
                 the registry answers",
                s.digest
            ),
        )),
        (None, _) | (_, TagCheck::NotAsked) => None,
    };
    let verified = match (serving, checks.signature) {
        (Some(s), Some(Signature::Verified { keys })) => Some((
            "True",
            "Verified",
            format!("{} is signed by {}", s.digest, keys.join(", ")),
        )),
        (Some(_), Some(Signature::Audited { reason, message })) => Some((
            "False",
            *reason,
            format!("serving under the audit level although: {message}"),
        )),
        _ => None,
    };
    let mut conditions = vec![condition("Loaded", loaded), condition("Ready", ready)];
    conditions.extend(tag_checked.map(|c| condition("TagChecked", c)));
    conditions.extend(verified.map(|c| condition("Verified", c)));
    if let Some(candidate) = checks.candidate {
        let (loaded, verified) = candidate_conditions(candidate);
        conditions.push(condition("CandidateLoaded", loaded));
        conditions.extend(verified.map(|c| condition("CandidateVerified", c)));
    }
    if let Some(fill) = checks.cache {
        // Until the stores have listed, what the status said stands.
        let said = previous.and_then(|p| p.conditions.iter().find(|c| c.type_ == CACHE_LIMITED));
        conditions.push(match (cache_condition(fill), said) {
            (Some(now), _) => condition(CACHE_LIMITED, now),
            (None, Some(said)) => said.clone(),
            (None, None) => condition(CACHE_LIMITED, listing(fill)),
        });
    }
    PluginStatus {
        observed_generation: generation,
        digest: serving.map(|s| s.digest.clone()),
        short_digest: serving.map(|s| short_digest(&s.digest)),
        plugin: serving.map(|s| s.name.clone()),
        version: serving.map(|s| s.version.clone()),
        kind: serving.map(|s| s.kind.clone()),
        conditions,
        last_error: match attempt {
            Attempt::Refused { message, .. } => Some(message.clone()),
            _ => None,
        },
    }
}

/// Writes `status` to the Plugin `object` (or the TenantPlugin it was read from: `api` is
/// where it lives) unless it already has it; returns whether it wrote.
/// A merge patch of the status subresource: absent fields are sent as `null`, so a cleared
/// error is cleared on the server too.
pub async fn write<K>(
    api: &Api<K>,
    object: &PluginResource,
    status: &PluginStatus,
) -> Result<bool, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if object.status.as_ref() == Some(status) {
        return Ok(false);
    }
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut body = serde_json::to_value(status).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut body {
        for key in [
            "observedGeneration",
            "digest",
            "shortDigest",
            "plugin",
            "version",
            "kind",
            "lastError",
        ] {
            fields.entry(key).or_insert(Value::Null);
        }
    }
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": body })),
    )
    .await?;
    Ok(true)
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The version serving in the status tests (the candidate's too).
    pub(in crate::cluster) fn serving() -> Serving {
        Serving {
            digest: format!("sha256:{}", "ab".repeat(32)),
            name: "blog".into(),
            version: "0.1.0".into(),
            kind: "Blog.weir.dev".into(),
        }
    }

    fn tag(tag: &TagCheck) -> Checks<'_> {
        Checks {
            tag,
            signature: None,
            candidate: None,
            cache: None,
        }
    }

    fn condition<'a>(status: &'a PluginStatus, type_: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn a_refused_update_keeps_ready_true_and_names_the_previous_digest() {
        let refused = Attempt::Refused {
            reason: "DigestMismatch",
            message: "r has digest a, not the pinned b".into(),
        };
        let status = desired(
            Some(3),
            Some(&serving()),
            &refused,
            tag(&TagCheck::NotAsked),
            None,
        );
        assert_eq!(condition(&status, "Loaded").status, "False");
        assert_eq!(condition(&status, "Loaded").reason, "DigestMismatch");
        assert_eq!(condition(&status, "Ready").status, "True");
        assert_eq!(status.short_digest.as_deref(), Some("abababababab"));
        assert_eq!(
            status.last_error.as_deref(),
            Some("r has digest a, not the pinned b")
        );
        let none = desired(Some(3), None, &refused, tag(&TagCheck::NotAsked), None);
        assert_eq!(condition(&none, "Ready").status, "False");
        assert_eq!(none.digest, None);
    }

    #[test]
    fn an_unchanged_condition_keeps_its_transition_time_so_a_resync_writes_nothing() {
        let first = desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            tag(&TagCheck::NotAsked),
            None,
        );
        let again = desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            tag(&TagCheck::NotAsked),
            Some(&first),
        );
        assert_eq!(first, again);
        let refused = Attempt::Refused {
            reason: "PullFailed",
            message: "unreachable".into(),
        };
        let later = desired(
            Some(2),
            Some(&serving()),
            &refused,
            tag(&TagCheck::NotAsked),
            Some(&first),
        );
        assert_eq!(
            condition(&later, "Ready").last_transition_time,
            condition(&first, "Ready").last_transition_time
        );
    }

    #[test]
    fn a_tag_the_registry_could_not_check_says_so_since_the_first_failure() {
        let unreachable = |why: &str| TagCheck::Unchecked(why.into());
        let mut first = desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            tag(&unreachable("connection refused")),
            None,
        );
        let since = Some("2026-01-01T00:00:00Z".to_owned());
        for c in &mut first.conditions {
            c.last_transition_time.clone_from(&since);
        }
        let turned = condition(&first, "TagChecked");
        assert_eq!(
            (turned.status.as_str(), turned.reason.as_str()),
            ("False", "RegistryUnreachable")
        );
        assert!(
            turned.message.contains("connection refused"),
            "{}",
            turned.message
        );
        assert!(
            turned.message.contains(&serving().digest),
            "{}",
            turned.message
        );
        assert_eq!(condition(&first, "Loaded").status, "True");
        assert_eq!(condition(&first, "Ready").status, "True");

        // Still unreachable, failing otherwise: the condition keeps the time it turned False.
        let later = desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            tag(&unreachable("timed out")),
            Some(&first),
        );
        let still = condition(&later, "TagChecked");
        assert_eq!(still.last_transition_time, since);
        assert!(still.message.contains("timed out"), "{}", still.message);

        let checked = desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            tag(&TagCheck::Checked),
            Some(&later),
        );
        assert_eq!(condition(&checked, "TagChecked").status, "True");
        assert_ne!(
            condition(&checked, "TagChecked").last_transition_time,
            since
        );
        assert_eq!(condition(&checked, "Ready").last_transition_time, since);
        let by_digest = desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            tag(&TagCheck::NotAsked),
            None,
        );
        assert!(by_digest.conditions.iter().all(|c| c.type_ != "TagChecked"));
        let nothing_serves = desired(
            Some(1),
            None,
            &Attempt::Pending,
            tag(&unreachable("x")),
            None,
        );
        assert!(
            nothing_serves
                .conditions
                .iter()
                .all(|c| c.type_ != "TagChecked")
        );
    }
}
