//! What a `Plugin`'s status says of its `spec.candidate`: whether it was refused before any
//! load or after it (it serves another kind, the rollout rolled it back), and why
//! (`CandidateLoaded`), and what its signatures came to (`CandidateVerified`);
//! [`super::status::desired`] adds these conditions while the spec names a candidate.

use super::verdict::Signature;

/// What became of a Plugin's `spec.candidate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CandidateAttempt {
    /// Not decided yet (being fetched, or waiting for a retry).
    Pending,
    /// Fetched, verified and compiled, and handed to the rollout.
    Proposed {
        /// The manifest digest (`sha256:…`).
        digest: String,
        /// Plugin name and version, from `describe()` (`blog@0.2.0`).
        version: String,
        /// What its signatures came to (`None` without a verification policy).
        signature: Option<Signature>,
    },
    /// Loaded and handed to the rollout, then refused there: it would replace another kind or
    /// plugin, or the rollout rolled it back (or had before a restart). The serving version
    /// reconciles alone.
    Dropped {
        /// The manifest digest (`sha256:…`).
        digest: String,
        /// Plugin name and version, from `describe()` (`blog@0.2.0`).
        version: String,
        /// CamelCase reason (`OtherKind`, `OtherPlugin`, `RolledBack`, ...).
        reason: &'static str,
        /// Why, for people.
        message: String,
    },
    /// Refused before it was loaded: never shadowed, canaried or promoted.
    Refused {
        /// CamelCase reason (`Unsigned`, `SignatureUntrusted`, `DigestMismatch`, ...).
        reason: &'static str,
        /// Why, for people (names the Plugin and the digest where known).
        message: String,
    },
}

/// `(status, reason, message)` of `CandidateLoaded`, and of `CandidateVerified` if it has one.
pub(super) type CandidateConditions = (
    (&'static str, &'static str, String),
    Option<(&'static str, &'static str, String)>,
);

/// The conditions that say what became of the candidate.
pub(super) fn candidate_conditions(candidate: &CandidateAttempt) -> CandidateConditions {
    match candidate {
        CandidateAttempt::Pending => (
            (
                "Unknown",
                "Fetching",
                "the candidate is being fetched".into(),
            ),
            None,
        ),
        CandidateAttempt::Refused { reason, message } => (
            (
                "False",
                *reason,
                format!("{message}; the candidate is not shadowed, canaried or promoted"),
            ),
            None,
        ),
        CandidateAttempt::Dropped {
            digest,
            version,
            reason,
            message,
        } => (
            (
                "False",
                *reason,
                format!(
                    "{digest} was loaded as {version}, then refused: {message}; the serving version reconciles alone"
                ),
            ),
            None,
        ),
        CandidateAttempt::Proposed {
            digest,
            version,
            signature,
        } => {
            let loaded = (
                "True",
                "Loaded",
                format!("{digest} loaded as {version} and handed to the rollout"),
            );
            let verified = signature.as_ref().map(|s| match s {
                Signature::Verified { keys } => (
                    "True",
                    "Verified",
                    format!("{digest} is signed by {}", keys.join(", ")),
                ),
                Signature::Audited { reason, message } => (
                    "False",
                    *reason,
                    format!("rolled out under the audit level although: {message}"),
                ),
            });
            (loaded, verified)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::PluginStatus;
    use crate::cluster::fetch::TagCheck;
    use crate::cluster::resource::Condition;
    use crate::cluster::status::tests::serving;
    use crate::cluster::status::{Attempt, Checks, desired};

    use super::*;

    fn with(candidate: Option<&CandidateAttempt>) -> PluginStatus {
        let checks = Checks {
            tag: &TagCheck::NotAsked,
            signature: None,
            candidate,
            cache: None,
        };
        desired(Some(2), Some(&serving()), &Attempt::Loaded, checks, None)
    }

    fn condition<'a>(status: &'a PluginStatus, type_: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn a_refused_candidate_says_why_beside_the_version_that_keeps_serving() {
        let refused = CandidateAttempt::Refused {
            reason: "Unsigned",
            message: "Plugin blog: sha256:cd has no signature".into(),
        };
        let status = with(Some(&refused));
        let loaded = condition(&status, "CandidateLoaded");
        assert_eq!(
            (loaded.status.as_str(), loaded.reason.as_str()),
            ("False", "Unsigned")
        );
        assert!(loaded.message.contains("has no signature"), "{loaded:?}");
        assert!(loaded.message.contains("not shadowed"), "{loaded:?}");
        let types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Loaded", "Ready", "CandidateLoaded"]);
        assert_eq!(condition(&status, "Loaded").status, "True");
        assert_eq!(status.last_error, None, "the serving spec is not refused");
    }

    #[test]
    fn a_candidate_refused_after_its_load_says_which_and_why_beside_the_version_that_keeps_serving()
    {
        let dropped = CandidateAttempt::Dropped {
            digest: "sha256:cd".into(),
            version: "blog@0.2.0".into(),
            reason: "RolledBack",
            message: "rolled back: failures 9/10 against 0/10".into(),
        };
        let status = with(Some(&dropped));
        let loaded = condition(&status, "CandidateLoaded");
        assert_eq!(
            (loaded.status.as_str(), loaded.reason.as_str()),
            ("False", "RolledBack")
        );
        for needle in [
            "blog@0.2.0",
            "sha256:cd",
            "failures 9/10",
            "serving version",
        ] {
            assert!(loaded.message.contains(needle), "{needle}: {loaded:?}");
        }
        assert_eq!(condition(&status, "Loaded").status, "True");
        assert_eq!(status.last_error, None, "the serving spec is not refused");
    }

    #[test]
    fn a_candidate_rolled_out_under_audit_says_why_it_does_not_verify() {
        let audited = CandidateAttempt::Proposed {
            digest: "sha256:cd".into(),
            version: "blog@0.2.0".into(),
            signature: Some(Signature::Audited {
                reason: "SignatureUntrusted",
                message: "no key of the policy verifies it".into(),
            }),
        };
        let status = with(Some(&audited));
        let loaded = condition(&status, "CandidateLoaded");
        assert_eq!(
            (loaded.status.as_str(), loaded.reason.as_str()),
            ("True", "Loaded")
        );
        assert!(loaded.message.contains("blog@0.2.0"), "{loaded:?}");
        let verified = condition(&status, "CandidateVerified");
        assert_eq!(
            (verified.status.as_str(), verified.reason.as_str()),
            ("False", "SignatureUntrusted")
        );
        assert!(verified.message.contains("audit"), "{verified:?}");
    }

    #[test]
    fn without_a_candidate_the_status_says_nothing_of_one() {
        let status = with(None);
        assert!(
            status
                .conditions
                .iter()
                .all(|c| !c.type_.starts_with("Candidate")),
            "{status:?}"
        );
    }
}
