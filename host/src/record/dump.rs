//! `--dump-failures DIR`: every failed or refused reconcile written as a fixture that fails the same way.

use std::path::{Path, PathBuf};

use super::case::{self, Case, Expectation, Outcome};
use crate::chain::Chain;
use crate::reconcile::failed::{FailedReconcile, FailureSink};

/// Writes each failed reconcile to `DIR/<plugin>-<namespace>_<name>.yaml` (the last failure of a
/// parent replaces the one before), expecting a successful reconcile: `weir test PLUGIN DIR`
/// then shows the same error, or the same refusal, as the cluster did.
#[derive(Debug)]
pub struct Dumps {
    dir: PathBuf,
}

impl Dumps {
    /// Dumps into `dir`, created if missing.
    pub fn new(dir: &Path) -> std::io::Result<Dumps> {
        std::fs::create_dir_all(dir)?;
        Ok(Dumps {
            dir: dir.to_owned(),
        })
    }
}

impl FailureSink for Dumps {
    fn failed(&self, reconcile: &FailedReconcile<'_>) {
        let info = reconcile.info;
        let case = Case::of_cached(reconcile.parent, reconcile.observed, reconcile.related);
        let what = match &reconcile.failed {
            crate::reconcile::failed::Failed::Error { .. } => "failed",
            crate::reconcile::failed::Failed::Refused { .. } => "was refused",
        };
        let description = format!(
            "{} {}: the reconcile by {}@{} {what} on the cluster (dumped); it should succeed",
            info.parent.kind,
            case.key(),
            info.name,
            info.version
        );
        let text = case::fixture_text(
            info,
            &description,
            &case,
            &Outcome::Failed(reconcile.failed.clone()),
            Expectation::Success,
        );
        let name = format!("{}-{}", info.name, case.file_name());
        match case::write(&self.dir, &name, &text) {
            Ok(path) => tracing::info!(file = %path.display(), "failed reconcile dumped"),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %Chain(&e), "cannot dump a failed reconcile")
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use std::sync::Arc;

    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;
    use crate::plugin::{ReconcileResponse, Requeue};
    use crate::reconcile::failed::Failed;
    use crate::runtime::cache::CachedObject;

    fn object(value: serde_json::Value) -> Arc<CachedObject> {
        let decoded: DynamicObject = serde_json::from_value(value).unwrap();
        Arc::new(CachedObject::from_object(&decoded).unwrap())
    }

    #[test]
    fn a_refused_reconcile_is_dumped_with_its_related_objects_and_the_answer_it_gave() {
        let info = crate::plugin::test_info::owning_config_maps(
            "blog",
            crate::plugin::test_info::namespaced("weir.dev", "Blog", "blogs"),
        );
        let parent = object(json!({"apiVersion": "weir.dev/v1", "kind": "Blog",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u"}}));
        let theme = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "theme", "namespace": "ns"}, "data": {"style.css": "h1{}"}}));
        let answer = ReconcileResponse {
            children: vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a-page", "namespace": "elsewhere"}})],
            clusters: Vec::new(),
            status: None,
            requeue: Requeue::Done,
        };
        let dir = tempfile::tempdir().unwrap();
        let dumps = Dumps::new(dir.path()).unwrap();
        dumps.failed(&FailedReconcile {
            info: &info,
            parent: &parent,
            observed: &[],
            related: std::slice::from_ref(&theme),
            failed: Failed::Refused {
                answer: Some(answer.clone()),
                message: "refused".into(),
            },
        });
        let text = std::fs::read_to_string(dir.path().join("blog-ns_a.yaml")).unwrap();
        let fixture = crate::offline::parse(&text).unwrap();
        assert_eq!(
            fixture.related,
            [serde_json::from_str::<serde_json::Value>(&theme.json()).unwrap()]
        );
        assert_eq!(fixture.expect.children, Some(answer.children));
        assert!(fixture.expect.error.is_none(), "a dump expects success");
    }
}
