//! The host deployed for real, with its plugins delivered each way deploy/README.md documents.
//!
//! `deploy/` applied to a secure emulator (TLS, tokens, RBAC), the host image (tests/image.sh:
//! deploy/Dockerfile's `prebuilt` stage around this build's binary) run with podman as the
//! Deployment's pod runs it, and the Blogs converging with no request refused, whichever way the
//! Blog plugin arrives: the `weir-plugins` ConfigMap (`configmap`), an image volume
//! (`volume`), or a `Plugin` pulled from a private registry on loopback (`plugin`). The rules
//! granted are proven least privilege both ways: the scenario passes with them, and fails with
//! a 403 naming the rule when any one rule is removed (`rules`).
//!
//! Needs podman and runc (tests/setup-podman.sh, which tests/image.sh runs), Debian's
//! docker-registry (tests/setup-registry.sh) and the Blog component (plugins/build.sh). The
//! container shares the host's network and gets explicit rlimits (a sandbox cannot raise them).

use std::sync::OnceLock;
use std::time::Duration;

use crate::workspace;

mod cluster;
mod pod;
mod rules;

mod configmap;
mod plugin;
mod volume;

use weir_test_support::registry;

/// The host image tests/image.sh builds.
const IMAGE: &str = "localhost/weir:test";
/// The ServiceAccount the Deployment runs as, as the API server names it.
const SERVICE_ACCOUNT: &str = "system:serviceaccount:weir:weir";
/// How long a scenario may take to show what it waits for (the debug binary, two cores).
const PATIENCE: Duration = Duration::from_secs(90);

/// Builds [`IMAGE`] around this build's `weir` once per test process, printing its size; the
/// image's ID, which the pods run (another checkout may move the tag meanwhile).
fn image() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| {
        let image = std::process::Command::new(workspace().join("tests/image.sh"))
            .args([env!("CARGO_BIN_EXE_weir"), IMAGE])
            .output()
            .unwrap();
        assert!(
            image.status.success(),
            "tests/image.sh: {}",
            String::from_utf8_lossy(&image.stderr)
        );
        println!("{}", String::from_utf8_lossy(&image.stdout).trim());
        let id = pod::podman(&["image", "inspect", "--format", "{{.Id}}", IMAGE]);
        assert!(id.status.success(), "podman image inspect {IMAGE}");
        String::from_utf8(id.stdout).unwrap().trim().to_string()
    })
}

/// Polls `check` every 250 ms until it answers, or panics after [`PATIENCE`] with `what` and the
/// host's log.
async fn eventually<T>(what: &str, pod: &pod::Pod, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(t) = check().await {
            return t;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {PATIENCE:?}\n--- the host's log ---\n{}",
            pod.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
