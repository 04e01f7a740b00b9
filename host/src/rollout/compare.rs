//! Two versions' answers to the same inputs, normalised as the apply step does, and their differences.
//!
//! An answer is compared as the judge left it ([`crate::answer::judge`], the one the reconcile
//! path writes from): the host-owned fields stamped on the children (namespace, owner reference,
//! parent label), refused where the host would refuse, the plugin's status merged into the one
//! the parent would show. What differs after that is what the cluster would see.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::answer::{FailureCause, MANIFEST_HASH_ANNOTATION, PluginError, Verdict};
use crate::plugin::Requeue;

/// How two answers differ; one metric label each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DiffKind {
    /// The desired children differ (one more, one fewer, or a field of one).
    Children,
    /// The status the parent would show differs.
    Status,
    /// When to look again differs.
    Requeue,
    /// One version failed (or was refused) and the other did not, or they failed differently.
    Error,
}

impl DiffKind {
    /// Every kind, in label order.
    pub const ALL: [DiffKind; 4] = [Self::Children, Self::Status, Self::Requeue, Self::Error];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Children => "children",
            Self::Status => "status",
            Self::Requeue => "requeue",
            Self::Error => "error",
        }
    }
}

/// One difference, with what each version said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// Which part of the answer.
    pub kind: DiffKind,
    /// Where and how, e.g. `ConfigMap ns/a: metadata.labels.x: (absent) → "v2"`.
    pub detail: String,
}

/// How one version fared on one reconcile, for the rollback window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered, and the answer would be applied.
    Ok,
    /// Failed (trap, timeout, error) or was refused.
    Failed(FailureCause),
    /// Answered, asking to run again at once: what the hot-loop guard throttles.
    HotLoop,
}

impl Outcome {
    /// The label a bad outcome is counted under; `None` when it went well.
    pub fn label(self) -> Option<&'static str> {
        match self {
            Self::Ok => None,
            Self::Failed(cause) => Some(cause.as_str()),
            Self::HotLoop => Some("hot-loop"),
        }
    }
}

/// An answer after the apply step's normalisation.
#[derive(Clone, Debug, PartialEq)]
pub enum Normalised {
    /// What would be written.
    Answer {
        /// Stamped manifests by `Kind namespace/name`, the hash annotation left out (it is derived).
        children: BTreeMap<String, Value>,
        /// The status the parent would show.
        status: Value,
        /// When to look again.
        requeue: Requeue,
    },
    /// Nothing would be written.
    Failed {
        /// Why.
        cause: FailureCause,
        /// The message the parent's condition would carry.
        message: String,
    },
}

impl Normalised {
    /// What the cluster would see of one version's judged answer ([`crate::answer::judge`], run
    /// once per answer by the caller, at one time for both versions so time itself never differs).
    pub fn of(verdict: &Result<Verdict, PluginError>) -> Self {
        let judged = match verdict {
            Ok(Ok(judged)) => judged,
            Ok(Err(refused)) => {
                return Self::Failed {
                    cause: FailureCause::Refused,
                    message: refused.refusal.to_string(),
                };
            }
            Err(e) => {
                return Self::Failed {
                    cause: e.cause,
                    message: e.message.clone(),
                };
            }
        };
        let children = judged
            .children
            .iter()
            .map(|child| {
                let mut manifest = child.manifest.clone();
                if let Some(annotations) = manifest
                    .pointer_mut("/metadata/annotations")
                    .and_then(Value::as_object_mut)
                {
                    annotations.remove(MANIFEST_HASH_ANNOTATION);
                    if annotations.is_empty()
                        && let Some(meta) =
                            manifest.get_mut("metadata").and_then(Value::as_object_mut)
                    {
                        meta.remove("annotations");
                    }
                }
                (format!("{} {}", child.kind.kind, child.key), manifest)
            })
            .collect();
        Self::Answer {
            children,
            status: judged.status.clone(),
            requeue: judged.requeue,
        }
    }

    /// The outcome for the rollback window; `soon` tells whether a requeue counts as a hot loop.
    pub fn outcome(&self, soon: impl Fn(Requeue) -> bool) -> Outcome {
        match self {
            Self::Failed { cause, .. } => Outcome::Failed(*cause),
            Self::Answer { requeue, .. } if soon(*requeue) => Outcome::HotLoop,
            Self::Answer { .. } => Outcome::Ok,
        }
    }
}

/// Most differing fields named per child or status.
const MAX_PATHS: usize = 3;

/// What differs between the `serving` and the `candidate` answer; empty when they agree.
pub fn compare(serving: &Normalised, candidate: &Normalised) -> Vec<Diff> {
    use Normalised::{Answer, Failed};
    match (serving, candidate) {
        (
            Answer {
                children: sc,
                status: ss,
                requeue: sr,
            },
            Answer {
                children: cc,
                status: cs,
                requeue: cr,
            },
        ) => {
            let mut diffs = Vec::new();
            let mut details = Vec::new();
            for (key, s) in sc {
                match cc.get(key) {
                    None => details.push(format!("{key}: only the serving version wants it")),
                    Some(c) if c != s => details.push(format!("{key}: {}", paths(s, c))),
                    Some(_) => {}
                }
            }
            for key in cc.keys().filter(|k| !sc.contains_key(*k)) {
                details.push(format!("{key}: only the candidate wants it"));
            }
            if !details.is_empty() {
                diffs.push(Diff {
                    kind: DiffKind::Children,
                    detail: details.join("; "),
                });
            }
            if ss != cs {
                diffs.push(Diff {
                    kind: DiffKind::Status,
                    detail: format!("status: {}", paths(ss, cs)),
                });
            }
            if sr != cr {
                diffs.push(Diff {
                    kind: DiffKind::Requeue,
                    detail: format!("requeue: {sr:?} → {cr:?}"),
                });
            }
            diffs
        }
        (Failed { cause: a, .. }, Failed { cause: b, .. }) if a == b => Vec::new(),
        (s, c) => vec![Diff {
            kind: DiffKind::Error,
            detail: format!("serving: {}; candidate: {}", Brief(s), Brief(c)),
        }],
    }
}

/// One side of an error difference, in a few words.
struct Brief<'a>(&'a Normalised);

impl fmt::Display for Brief<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Normalised::Answer { children, .. } => {
                write!(f, "answered ({} children)", children.len())
            }
            Normalised::Failed { cause, message } => write!(f, "{} ({message})", cause.as_str()),
        }
    }
}

/// The first few JSON paths where `a` and `b` differ, each with both values.
fn paths(a: &Value, b: &Value) -> String {
    let mut out = Vec::new();
    walk("", Some(a), Some(b), &mut out);
    let more = out.len().saturating_sub(MAX_PATHS);
    out.truncate(MAX_PATHS);
    let mut text = out.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

fn walk(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
    if a == b {
        return;
    }
    if let (Some(Value::Object(a)), Some(Value::Object(b))) = (a, b) {
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for k in keys {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            walk(&p, a.get(k), b.get(k), out);
        }
        return;
    }
    let show = |v: Option<&Value>| v.map_or_else(|| "(absent)".to_owned(), Value::to_string);
    let path = if path.is_empty() { "." } else { path };
    out.push(format!("{path}: {} → {}", show(a), show(b)));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;
    use crate::answer::{Inputs, LiveObjects, ValidationPolicy, judge};
    use crate::plugin::{PluginInfo, ReconcileResponse};
    use crate::runtime::ObjectKey;

    struct Nothing;
    impl LiveObjects for Nothing {
        fn get(&self, _: &str, _: &str, _: &ObjectKey) -> Option<Arc<DynamicObject>> {
            None
        }
    }

    fn info() -> PluginInfo {
        crate::plugin::test_info::owning_config_maps(
            "blog",
            crate::plugin::test_info::namespaced("weir.dev", "Blog", "blogs"),
        )
    }

    fn parent() -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "weir.dev/v1", "kind": "Blog",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 2},
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn answer(label: Option<&str>, requeue: Requeue) -> Result<ReconcileResponse, PluginError> {
        let mut labels = json!({"app": "a"});
        if let Some(l) = label {
            labels["weir.dev/hot-swapped"] = json!(l);
        }
        Ok(ReconcileResponse {
            children: vec![json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a-page", "labels": labels},
                "data": {"k": "v"},
            })],
            clusters: Vec::new(),
            status: Some(json!({"ready": true})),
            requeue,
        })
    }

    fn normalised(a: &Result<ReconcileResponse, PluginError>) -> Normalised {
        let (info, parent) = (info(), parent());
        let inputs = Inputs {
            info: &info,
            parent: &parent,
            live: &Nothing,
            policy: &ValidationPolicy::default(),
            now: "T",
        };
        Normalised::of(&a.clone().map(|answer| judge(inputs, answer)))
    }

    #[test]
    fn identical_answers_do_not_differ() {
        let a = normalised(&answer(None, Requeue::Done));
        assert_eq!(compare(&a, &a.clone()), vec![]);
    }

    #[test]
    fn one_changed_label_is_one_children_diff_naming_the_child_and_the_field() {
        let diffs = compare(
            &normalised(&answer(None, Requeue::Done)),
            &normalised(&answer(Some("v2"), Requeue::Done)),
        );
        assert_eq!(
            diffs,
            vec![Diff {
                kind: DiffKind::Children,
                detail:
                    "ConfigMap ns/a-page: metadata.labels.weir.dev/hot-swapped: (absent) → \"v2\""
                        .into()
            }]
        );
    }

    #[test]
    fn a_different_requeue_and_a_failure_are_their_own_kinds() {
        let done = normalised(&answer(None, Requeue::Done));
        let now = normalised(&answer(None, Requeue::Now));
        assert_eq!(
            compare(&done, &now)
                .iter()
                .map(|d| d.kind)
                .collect::<Vec<_>>(),
            [DiffKind::Requeue]
        );
        assert_eq!(now.outcome(|r| r == Requeue::Now), Outcome::HotLoop);
        let failed = normalised(&Err(PluginError::new(
            crate::plugin::ErrorKind::Permanent,
            "boom",
        )));
        let diffs = compare(&done, &failed);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].kind, DiffKind::Error);
        assert!(
            diffs[0].detail.contains("candidate: error (boom)"),
            "{diffs:?}"
        );
        assert_eq!(compare(&failed, &failed.clone()), vec![]);
    }

    #[test]
    fn an_answer_the_host_would_refuse_is_a_refusal() {
        let mut refused = answer(None, Requeue::Done);
        if let Ok(r) = &mut refused {
            r.children[0]["metadata"]["namespace"] = json!("kube-system");
        }
        let n = normalised(&refused);
        assert_eq!(n.outcome(|_| false), Outcome::Failed(FailureCause::Refused));
    }
}
