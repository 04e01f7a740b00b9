//! One recorded reconcile as a `weir test` fixture file: the inputs, and the answer as its expectation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kube::api::DynamicObject;

use crate::runtime::cache::CachedObject;
use serde_json::{Value, json};

use crate::answer::ValidationPolicy;
use crate::offline::{SelectError, select_related};
use crate::plugin::{
    CallError, ErrorKind, Plugin, PluginInfo, ReconcileRequest, ReconcileResponse, Requeue,
};
use crate::reconcile::failed::Failed;

/// What a plugin was given for one parent, as the host gives it.
#[derive(Clone, Debug)]
pub struct Case {
    /// The parent (without `managedFields`, as the host's cache holds it).
    pub parent: Value,
    /// The children it controls (Secrets redacted unless asked otherwise).
    pub observed: Vec<Value>,
    /// The related objects its selection read (Secrets redacted unless asked otherwise): the
    /// fixture's `related`, which `weir test` selects from again.
    pub related: Vec<Value>,
}

impl Case {
    /// The inputs of a reconcile from the cache's objects.
    pub fn of(
        parent: &DynamicObject,
        observed: &[Arc<DynamicObject>],
        related: &[Arc<DynamicObject>],
    ) -> Case {
        let plain = |o: &DynamicObject| {
            let mut o = o.clone();
            o.metadata.managed_fields = None;
            serde_json::to_value(o).unwrap_or_default()
        };
        Case {
            parent: plain(parent),
            observed: observed.iter().map(|o| plain(o)).collect(),
            related: related.iter().map(|o| plain(o)).collect(),
        }
    }

    /// The inputs of a reconcile from the host's cache (managedFields already left out).
    pub fn of_cached(
        parent: &CachedObject,
        observed: &[Arc<CachedObject>],
        related: &[Arc<CachedObject>],
    ) -> Case {
        let plain = |o: &CachedObject| serde_json::from_str(&o.json()).unwrap_or_default();
        Case {
            parent: plain(parent),
            observed: observed.iter().map(|o| plain(o)).collect(),
            related: related.iter().map(|o| plain(o)).collect(),
        }
    }

    /// `namespace/name` of the parent (`name` for a cluster-scoped one).
    pub fn key(&self) -> String {
        let meta = |k: &str| {
            self.parent
                .pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match meta("namespace") {
            ns if ns.is_empty() => meta("name"),
            ns => format!("{ns}/{}", meta("name")),
        }
    }

    /// `namespace_name.yaml` (`_` is not allowed in names, so no two parents share a file).
    pub fn file_name(&self) -> String {
        format!("{}.yaml", self.key().replace('/', "_"))
    }

    /// Calls `plugin` on the inputs as `weir test` will call it on the fixture (its selection
    /// resolved against [`Case::related`] by [`crate::offline::select_related`]), and checks
    /// its answer as the host would under `policy`.
    pub fn run(&self, plugin: &Plugin, policy: &ValidationPolicy) -> Outcome {
        let unusable = |message: String| {
            Outcome::Failed(Failed::Error {
                kind: ErrorKind::Permanent,
                message,
            })
        };
        let related = match select_related(plugin, &self.parent, &self.related) {
            Ok((_, related)) => related,
            Err(SelectError::Call(e)) => return Outcome::Failed(call_failed(e)),
            Err(SelectError::Refused(message)) => {
                return Outcome::Failed(Failed::Refused {
                    answer: None,
                    message,
                });
            }
            Err(SelectError::Unreadable(text)) => return unusable(text),
        };
        let req = ReconcileRequest {
            parent: self.parent.to_string(),
            children: self.observed.iter().map(Value::to_string).collect(),
            related,
            ..Default::default()
        };
        match plugin.reconcile(&req) {
            Ok(answer) => match crate::offline::host_refusal(
                plugin.info(),
                &self.parent,
                // A recorded parent is in the host's own cluster, and so is all it observed.
                &crate::offline::Fleet::default(),
                &self.observed,
                &answer,
                policy,
            ) {
                Ok(None) => Outcome::Answer(answer),
                Ok(Some(message)) => Outcome::Failed(Failed::Refused {
                    answer: Some(answer),
                    message,
                }),
                Err(failure) => unusable(format!("{failure:?}")),
            },
            Err(e) => Outcome::Failed(call_failed(e)),
        }
    }
}

/// A failed call as a fixture expects it.
fn call_failed(e: CallError) -> Failed {
    Failed::Error {
        kind: e.kind(),
        message: match e {
            // The plugin's own words: the `plugin name@version:` prefix would tie the
            // expectation to this version.
            CallError::Plugin { message, .. } => message,
            e => e.to_string(),
        },
    }
}

/// The plugin's verdict on a case.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// An answer the host accepts.
    Answer(ReconcileResponse),
    /// A failed call or a refused answer.
    Failed(Failed),
}

/// What the fixture says about the outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// The outcome, whatever it is, is what must come out (`weir record`).
    AsRecorded,
    /// A successful reconcile must come out, so that `weir test` shows the failure (a dump).
    Success,
}

/// The fixture file's text: a comment header, then the case in the fixture format.
pub fn fixture_text(
    info: &PluginInfo,
    description: &str,
    case: &Case,
    outcome: &Outcome,
    expectation: Expectation,
) -> String {
    let mut header = format!(
        "# {} {}: the inputs {}@{} was given, as a `weir test` fixture.\n",
        info.parent.kind,
        case.key(),
        info.name,
        info.version
    );
    let expect = match (outcome, expectation) {
        (Outcome::Answer(answer), _)
        | (
            Outcome::Failed(Failed::Refused {
                answer: Some(answer),
                ..
            }),
            Expectation::Success,
        ) => {
            // A child naming a cluster carries it as a fixture writes it (`offline::Fleet`).
            let children =
                crate::offline::Fleet::default().answered(&answer.children, &answer.clusters);
            json!({"children": children, "status": answer.status, "requeue": requeue(answer.requeue)})
        }
        (Outcome::Failed(Failed::Refused { message, .. }), Expectation::AsRecorded) => {
            json!({"error": {"refused": true, "message_contains": message}})
        }
        (Outcome::Failed(Failed::Error { kind, message }), Expectation::AsRecorded) => {
            json!({"error": {"kind": kind, "message_contains": message}})
        }
        (
            Outcome::Failed(Failed::Error { .. } | Failed::Refused { answer: None, .. }),
            Expectation::Success,
        ) => {
            header.push_str(
                "# No answer is known (the call failed, or the host refused before it): `requeue: done`\n\
                 # only stands for \"succeeds\". Once the plugin is fixed, write down the answer it should give.\n",
            );
            json!({"requeue": "done"})
        }
    };
    let mut fixture = json!({
        "description": description,
        "parent": case.parent,
        "observed": case.observed,
        "expect": expect,
    });
    if !case.related.is_empty() {
        fixture["related"] = json!(case.related);
    }
    let body = crate::yaml::to_string(&fixture).unwrap_or_else(|_| format!("{fixture:#}\n"));
    header + &body
}

fn requeue(requeue: Requeue) -> Value {
    match requeue {
        Requeue::Done => json!("done"),
        Requeue::Now => json!("now"),
        Requeue::After(d) => json!({"after": u64::try_from(d.as_millis()).unwrap_or(u64::MAX)}),
    }
}

/// Writes `text` to `dir/name` through a temporary file and a rename (never half a file).
pub fn write(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let partial = dir.join(format!(".{name}.partial"));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, &path)?;
    Ok(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use super::*;
    use crate::offline::{ExpectRequeue, parse};
    use std::time::Duration;

    fn info() -> PluginInfo {
        crate::plugin::test_info::owning_config_maps(
            "blog",
            crate::plugin::test_info::namespaced("weir.dev", "Blog", "blogs"),
        )
    }

    fn case() -> Case {
        let parent: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "weir.dev/v1", "kind": "Blog",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u",
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {"title": "A"}}))
        .unwrap();
        Case::of(&parent, &[], &[])
    }

    #[test]
    fn a_recorded_answer_reads_back_as_a_fixture_expecting_it_without_managed_fields() {
        let case = case();
        assert_eq!(case.file_name(), "ns_a.yaml");
        let answer = ReconcileResponse {
            children: vec![
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            ],
            clusters: Vec::new(),
            status: Some(json!({"ready": true})),
            requeue: Requeue::After(Duration::from_secs(30)),
        };
        let text = fixture_text(
            &info(),
            "d",
            &case,
            &Outcome::Answer(answer.clone()),
            Expectation::AsRecorded,
        );
        assert!(!text.contains("managedFields"), "{text}");
        let fixture = parse(&text).unwrap();
        assert_eq!(fixture.expect.children, Some(answer.children));
        assert_eq!(fixture.expect.status, Some(answer.status));
        assert_eq!(fixture.expect.requeue, Some(ExpectRequeue::After(30_000)));
    }

    #[test]
    fn a_failure_is_expected_when_recorded_and_success_is_expected_when_dumped() {
        let case = case();
        let failed = Outcome::Failed(Failed::Error {
            kind: ErrorKind::Transient,
            message: "no database".into(),
        });
        let recorded = parse(&fixture_text(
            &info(),
            "d",
            &case,
            &failed,
            Expectation::AsRecorded,
        ))
        .unwrap();
        let error = recorded.expect.error.unwrap();
        assert_eq!(error.kind, Some(ErrorKind::Transient));
        assert_eq!(error.message_contains.as_deref(), Some("no database"));
        let dumped = parse(&fixture_text(
            &info(),
            "d",
            &case,
            &failed,
            Expectation::Success,
        ))
        .unwrap();
        assert!(dumped.expect.error.is_none());
        assert_eq!(dumped.expect.requeue, Some(ExpectRequeue::Done));
        let refused = Outcome::Failed(Failed::Refused {
            answer: Some(ReconcileResponse {
                children: vec![],
                clusters: Vec::new(),
                status: None,
                requeue: Requeue::Done,
            }),
            message: "too many".into(),
        });
        let recorded = parse(&fixture_text(
            &info(),
            "d",
            &case,
            &refused,
            Expectation::AsRecorded,
        ))
        .unwrap();
        assert!(recorded.expect.error.unwrap().refused);
        let dumped = parse(&fixture_text(
            &info(),
            "d",
            &case,
            &refused,
            Expectation::Success,
        ))
        .unwrap();
        assert_eq!(dumped.expect.children, Some(vec![]));
        let selection_refused = Outcome::Failed(Failed::Refused {
            answer: None,
            message: "reads another namespace".into(),
        });
        let dumped = parse(&fixture_text(
            &info(),
            "d",
            &case,
            &selection_refused,
            Expectation::Success,
        ))
        .unwrap();
        assert_eq!(dumped.expect.requeue, Some(ExpectRequeue::Done));
        assert!(dumped.expect.children.is_none());
    }
}
