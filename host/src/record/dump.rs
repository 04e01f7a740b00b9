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
        let case = Case::of(reconcile.parent, reconcile.observed);
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
