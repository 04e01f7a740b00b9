//! Compiling a component in a short-lived child process, so the compiler's memory peak is the
//! child's and not the long-running host's.
//!
//! Cranelift needs tens of MiB to compile even a small component, more for an interpreter guest;
//! a host that compiled in its own process kept that peak as its own (a new pod compiling the
//! Blog plugin peaked near twice the memory it used once it had compiled). The child is the
//! same program (`weir compile-plugin`): it builds an engine of the same settings, compiles the
//! bytes it reads from its standard input and stores the artifact in the shared precompiled
//! cache, which the host then maps. Any failure of the child leaves the host to compile the
//! component itself, so the error a broken component gets is the same either way.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// How to compile apart: the program and the engine settings it must compile for.
#[derive(Clone, Debug)]
pub(super) struct Apart {
    /// The program (the `weir` binary).
    pub(super) program: PathBuf,
    /// The precompiled cache the child stores into.
    pub(super) cache_dir: PathBuf,
    /// The engine's pooling setting (part of the artifact's key).
    pub(super) pooling: bool,
    /// Whether the engine compiles with the baseline compiler.
    pub(super) baseline_compiler: bool,
}

/// The lines of the child's standard error kept in a failure's reason.
const STDERR_LINES: usize = 5;

impl Apart {
    /// Compiles `bytes` (whose sha256 is `sha256`) into the cache in a child process.
    pub(super) fn compile(&self, sha256: &str, bytes: &[u8]) -> Result<(), String> {
        let mut command = Command::new(&self.program);
        command.arg("--cache-dir").arg(&self.cache_dir).args([
            "--log",
            "warn",
            "compile-plugin",
            "--sha256",
            sha256,
        ]);
        if self.baseline_compiler {
            command.arg("--baseline-compiler");
        }
        if !self.pooling {
            command.arg("--no-pooling");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.program.display()))?;
        let written = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(bytes))
            .transpose();
        let output = child
            .wait_with_output()
            .map_err(|e| format!("waiting for the compiling child: {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let lines: Vec<&str> = stderr.lines().rev().take(STDERR_LINES).collect();
            let tail: Vec<&str> = lines.into_iter().rev().collect();
            return Err(format!(
                "the compiling child {}: {}",
                output.status,
                tail.join(" | ")
            ));
        }
        written.map_err(|e| format!("handing the component to the compiling child: {e}"))?;
        Ok(())
    }
}
