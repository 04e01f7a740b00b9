//! The `weir` crate's integration tests, one binary so the crate and wasmtime are linked once:
//! the sandbox against real and hand-written components, loading and hot-loading, `weir test`,
//! `weir dev` as a process, the `deploy/` manifests, and the production feature set.
//!
//! The one test that watches the whole process's memory lives apart, in `sandbox_copy.rs`.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use weir_test_support::guests;

mod baseline_compiler;
mod compile_apart;
mod sandbox;
mod sandbox_deadline;
mod sandbox_load;
mod sandbox_log;

mod hotload;
mod hotload_signed;
mod sandbox_weir_test;
mod weir_test_refusals;
mod weir_test_related;

mod deploy;
mod deploy_image;
#[cfg(feature = "dev")]
mod dev;
#[cfg(feature = "dev")]
mod dev_view;
#[cfg(feature = "dev")]
mod dev_watch;
mod features;
#[cfg(feature = "dev")]
mod record;
mod record_related;

/// The checkout's root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/plugins/<file>`, as `plugins/build.sh` builds it; fails the test when it is missing.
pub fn built(file: &str) -> PathBuf {
    let path = workspace().join("target/plugins").join(file);
    assert!(
        path.exists(),
        "{} is missing: run plugins/build.sh first",
        path.display()
    );
    path
}

/// A `tracing` writer the test reads back: the host's formatted log, as a terminal shows it.
#[derive(Clone, Default)]
pub struct LogText(Arc<Mutex<Vec<u8>>>);

impl LogText {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for LogText {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
