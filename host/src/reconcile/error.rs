//! How a reconcile ends when it does not succeed: one typed error, one action the host takes on it.
//!
//! The happy path (`Controller::reconcile`) is written with `?` and returns a [`ReconcileError`]
//! that keeps each typed source. [`ErrorAction::of`] is the one place that turns such an error into
//! what the user and the queue see: the `Reconciled` condition's reason, the Event, the metric
//! label and the queue's decision (kube-runtime splits `reconcile` and `error_policy` the same way).

use super::apply::ApplyError;
use super::finalizer::FinalizerError;
use super::invoke::PluginError;
use super::status::StatusError;
use crate::answer::{self, Refusal, Refused};
use crate::plugin::{ErrorKind, PluginInfo, ReconcileResponse};
use crate::runtime::{Finish, Short};

/// Why one reconcile of one parent failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The plugin call failed: a trap, a timeout, or an error the plugin returned.
    #[error(transparent)]
    Plugin(PluginError),
    /// The plugin answered, and the host refused the answer; nothing was written.
    #[error("{message}")]
    Refused {
        /// What `weir test` prints for the same answer (`answer::refusal_message`).
        message: String,
        /// What was wrong with the answer (already in `message`, so not a `#[source]`).
        refusal: Refusal,
        /// The refused answer as the plugin gave it (handed back by [`answer::judge`], not
        /// copied); `None` when the selection was refused before any answer, or when the answer
        /// was already stamped (a name taken between the cache read and the create).
        answer: Option<Box<ReconcileResponse>>,
    },
    /// Writing (or pruning) a child failed.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// Writing the parent's status or finalizers failed.
    #[error(transparent)]
    Parent(#[from] StatusError),
    /// The plugin's cleanup of a parent being deleted failed.
    #[error("finalize failed: {0}")]
    Finalize(PluginError),
    /// A store the reconcile reads does not hold its whole kind (a tenant's cache cap left
    /// objects out): the plugin is not asked, nothing is written or pruned.
    #[error(transparent)]
    CacheLimited(#[from] Short),
}

impl From<FinalizerError> for ReconcileError {
    fn from(e: FinalizerError) -> Self {
        ReconcileError::Parent(e.into())
    }
}

impl ReconcileError {
    /// The host refused `info`'s answer (or selection) for `refusal`, with the condition's message.
    pub fn refused(info: &PluginInfo, refusal: Refusal, answer: Option<ReconcileResponse>) -> Self {
        Self::Refused {
            message: answer::refusal_message(info, &refusal),
            refusal,
            answer: answer.map(Box::new),
        }
    }

    /// The judge refused `info`'s answer: the refusal with the answer as the plugin gave it.
    pub fn refused_answer(info: &PluginInfo, refused: Refused) -> Self {
        Self::refused(info, refused.refusal, Some(refused.answer))
    }
}

/// How soon a reconcile a short cache held back is tried again.
pub const CACHE_LIMITED_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// The label a reconcile's outcome carries in `weir_reconciles_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResultLabel {
    /// The answer was applied (or the parent's cleanup finished).
    Success,
    /// A call or a write failed.
    Error,
    /// The answer broke the contract and was refused.
    Refused,
    /// The parent is gone from the cache: deleted means done.
    Gone,
}

impl ResultLabel {
    /// The metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Refused => "refused",
            Self::Gone => "gone",
        }
    }

    /// Every label, for listings.
    pub const ALL: [ResultLabel; 4] = [Self::Success, Self::Error, Self::Refused, Self::Gone];
}

/// What the host does about one [`ReconcileError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorAction {
    /// The `Reconciled` condition's reason (and the Event's), CamelCase.
    pub reason: &'static str,
    /// Whether the condition is written: a failed status write cannot report itself.
    pub report: bool,
    /// What the queue does with the key.
    pub finish: Finish,
    /// The metric label.
    pub label: ResultLabel,
}

impl ErrorAction {
    /// The one mapping from an error to its condition, Event, metric and queue decision.
    pub fn of(error: &ReconcileError) -> Self {
        let (reason, report, finish, label) = match error {
            ReconcileError::Refused { .. } => {
                ("Refused", true, Finish::Failed, ResultLabel::Refused)
            }
            ReconcileError::Plugin(e) if e.refused => {
                ("Refused", true, Finish::Failed, ResultLabel::Refused)
            }
            ReconcileError::Plugin(e) => match e.kind {
                ErrorKind::Transient => ("TransientError", true, Finish::Retry, ResultLabel::Error),
                ErrorKind::Permanent => {
                    ("PermanentError", true, Finish::Failed, ResultLabel::Error)
                }
            },
            ReconcileError::Apply(e) if e.is_permanent() => {
                ("PermanentError", true, Finish::Failed, ResultLabel::Error)
            }
            ReconcileError::Apply(_) => ("TransientError", true, Finish::Retry, ResultLabel::Error),
            ReconcileError::Parent(_) => (
                "StatusWriteFailed",
                false,
                Finish::Retry,
                ResultLabel::Error,
            ),
            // Tried again at a steady pace (and at once on a change of the parent): how long
            // the cache stays short is the tenant's doing, not a failure to back off from.
            ReconcileError::CacheLimited(_) => (
                "CacheLimited",
                true,
                Finish::After(CACHE_LIMITED_RETRY),
                ResultLabel::Error,
            ),
            ReconcileError::Finalize(e) => (
                "FinalizeFailed",
                false,
                if e.kind == ErrorKind::Transient {
                    Finish::Retry
                } else {
                    Finish::Failed
                },
                ResultLabel::Error,
            ),
        };
        Self {
            reason,
            report,
            finish,
            label,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ObjectKey;

    fn plugin_error(kind: ErrorKind) -> ReconcileError {
        ReconcileError::Plugin(PluginError::new(kind, "plugin blog@1: boom"))
    }

    #[test]
    fn a_transient_plugin_failure_is_retried_with_backoff_and_reported() {
        let p = ErrorAction::of(&plugin_error(ErrorKind::Transient));
        assert_eq!(
            (p.reason, p.finish, p.label),
            ("TransientError", Finish::Retry, ResultLabel::Error)
        );
        assert!(p.report);
    }

    #[test]
    fn a_permanent_plugin_failure_waits_for_a_change() {
        let p = ErrorAction::of(&plugin_error(ErrorKind::Permanent));
        assert_eq!((p.reason, p.finish), ("PermanentError", Finish::Failed));
    }

    #[test]
    fn a_refused_answer_is_labelled_refused_and_not_retried() {
        let refusal = Refusal::Duplicate {
            kind: "ConfigMap".into(),
            name: "x".into(),
        };
        let info = crate::plugin::test_info::owning_config_maps(
            "blog",
            crate::plugin::test_info::namespaced("weir.dev", "Blog", "blogs"),
        );
        let e = ReconcileError::refused(&info, refusal, None);
        assert_eq!(
            crate::chain::Chain(&e).to_string(),
            r#"plugin blog: answer refused: child ConfigMap "x" appears twice"#,
            "the refusal is said once"
        );
        let p = ErrorAction::of(&e);
        assert_eq!(
            (p.reason, p.finish, p.label),
            ("Refused", Finish::Failed, ResultLabel::Refused)
        );
        let contract = ReconcileError::Plugin(PluginError::refused("response too large"));
        assert_eq!(ErrorAction::of(&contract).label, ResultLabel::Refused);
    }

    #[test]
    fn a_reconcile_held_back_by_a_short_cache_is_reported_and_tried_again_at_a_steady_pace() {
        let e = ReconcileError::from(Short {
            owner: "tenant team-b".into(),
            limit: 20,
            held: 20,
            kind: "ConfigMap".into(),
        });
        let message = crate::chain::Chain(&e).to_string();
        for needle in [
            "tenant team-b",
            "at most 20",
            "maxCachedObjects",
            "ConfigMap",
        ] {
            assert!(message.contains(needle), "{needle} is not in {message}");
        }
        let p = ErrorAction::of(&e);
        assert!(p.report, "the parent's Reconciled condition says why");
        assert_eq!(
            (p.reason, p.finish, p.label),
            (
                "CacheLimited",
                Finish::After(CACHE_LIMITED_RETRY),
                ResultLabel::Error
            )
        );
    }

    #[test]
    fn a_failed_status_write_is_retried_without_trying_to_report_itself() {
        let e = ReconcileError::Parent(StatusError::Status {
            kind: "Blog".into(),
            name: ObjectKey::new("ns", "b").to_string(),
            source: kube::Error::LinesCodecMaxLineLengthExceeded,
        });
        let p = ErrorAction::of(&e);
        assert!(!p.report);
        assert_eq!((p.finish, p.label), (Finish::Retry, ResultLabel::Error));
    }
}
