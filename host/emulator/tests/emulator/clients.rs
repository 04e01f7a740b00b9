//! The official Python client and `@kubernetes/client-node` against the emulator, each check by name.
//!
//! The clients are installed into `target/emulator-clients` by
//! `host/emulator/tests/clients/setup.sh`; their scripts (`tests/clients/{python,js}`) load the
//! kubeconfig the emulator wrote, unmodified, and print `PASS name` or `FAIL name: reason` per
//! check. A script line `HOOK what` asks this driver to act on the emulator where no client
//! request can (forget the watch history, cut every watch, set fault rules); the driver does it
//! and answers `ok`. A test passes when every expected check printed PASS and no FAIL.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use weir_emulator::{Emulator, EmulatorConfig, Rule};

/// Where `setup.sh` installs the clients: `target/emulator-clients`.
pub fn installed() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("emulator-clients")
}

/// The client scripts, next to this test binary's sources.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn require(path: &Path) -> &Path {
    assert!(
        path.exists(),
        "{} is missing: run host/emulator/tests/clients/setup.sh first (it installs the pinned clients)",
        path.display()
    );
    path
}

/// What one script reported.
#[derive(Debug, Default)]
struct Report {
    passed: Vec<String>,
    failed: Vec<String>,
    stderr: String,
}

/// Act on the emulator for a script's `HOOK` line.
fn hook(em: &Emulator, what: &str) -> Result<(), String> {
    match what.split_once(' ').unwrap_or((what, "")) {
        ("compact", _) => em.compact(),
        ("drop-watches", _) => em.drop_watches(),
        ("clear-faults", _) => em.faults().clear(),
        ("fault", rule) => {
            let rule: Rule = serde_json::from_str(rule).map_err(|e| format!("{rule}: {e}"))?;
            em.faults().set(vec![rule]);
        }
        _ => return Err(format!("unknown hook {what:?}")),
    }
    Ok(())
}

/// Run `program args… KUBECONFIG extra…` against a fresh emulator, answering its hooks.
async fn run(program: &Path, script: &Path, extra: &[&Path]) -> Report {
    let em = Emulator::start(EmulatorConfig {
        bookmark_interval: Duration::from_millis(200),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    em.write_kubeconfig(&kubeconfig).unwrap();
    let mut child = tokio::process::Command::new(program)
        .arg(script)
        .arg(&kubeconfig)
        .args(extra)
        .env("HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {}: {e}", program.display()));
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let errors = tokio::spawn(async move {
        let mut text = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text).await;
        text
    });
    let mut report = Report::default();
    let drive = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(name) = line.strip_prefix("PASS ") {
                report.passed.push(name.to_string());
            } else if let Some(failure) = line.strip_prefix("FAIL ") {
                report.failed.push(failure.to_string());
            } else if let Some(what) = line.strip_prefix("HOOK ") {
                let answer = match hook(&em, what) {
                    Ok(()) => "ok".to_string(),
                    Err(e) => e,
                };
                stdin
                    .write_all(format!("{answer}\n").as_bytes())
                    .await
                    .unwrap();
                stdin.flush().await.unwrap();
            }
        }
        child.wait().await.unwrap()
    };
    let status = tokio::time::timeout(Duration::from_secs(60), drive).await;
    let _ = child.start_kill();
    report.stderr = errors.await.unwrap();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => report
            .failed
            .push(format!("the script exited with {status}")),
        Err(_) => report
            .failed
            .push("the script did not finish in 60 s".into()),
    }
    em.shutdown().await;
    report
}

fn assert_all_pass(client: &str, report: &Report, expected: &[&str]) {
    let missing: Vec<&&str> = expected
        .iter()
        .filter(|name| !report.passed.iter().any(|p| p == *name))
        .collect();
    assert!(
        report.failed.is_empty() && missing.is_empty(),
        "{client}: {} of {} checks passed\nfailed:\n  {}\nnot passed: {missing:?}\nstderr:\n{}",
        report.passed.len(),
        expected.len(),
        report.failed.join("\n  "),
        report.stderr
    );
}

#[tokio::test]
async fn the_official_python_client_passes_every_check() {
    let python = installed().join("venv/bin/python");
    let report = run(
        require(&python),
        &scripts().join("python/conformance.py"),
        &[],
    )
    .await;
    assert_all_pass(
        "python kubernetes",
        &report,
        &[
            "kubeconfig_loads_and_namespace_is_created",
            "configmap_create_read_replace_patch_delete",
            "secret_string_data_is_stored_as_data",
            "deployment_crud_with_server_defaults_and_scale",
            "server_side_dry_run_stores_nothing",
            "list_with_label_selectors_and_pages",
            "watch_resumes_from_a_resource_version",
            "watch_from_a_compacted_version_is_410_and_relist_recovers",
            "watch_retries_an_injected_410_once_then_resumes",
            "watch_stream_survives_the_server_closing_it",
            "server_side_apply_with_field_manager_and_conflicts",
            "custom_objects_api_on_a_crd",
            "namespace_deletion_removes_its_contents",
        ],
    );
}

#[tokio::test]
async fn client_node_passes_every_check() {
    let modules = installed().join("js/node_modules");
    let report = run(
        Path::new("node"),
        &scripts().join("js/conformance.mjs"),
        &[require(&modules)],
    )
    .await;
    assert_all_pass(
        "@kubernetes/client-node",
        &report,
        &[
            "kubeconfig_loads_and_namespace_is_created",
            "configmap_crud_with_typed_api",
            "informer_lists_then_follows_changes",
            "informer_rewatches_when_the_server_closes_the_watch",
            "informer_restarted_after_a_connection_cut_mid_stream_catches_up",
            "informer_relists_after_a_410_and_reports_what_it_missed",
            "informer_survives_an_injected_410_in_the_watch_stream",
            "kubernetes_object_api_server_side_apply",
            "kubernetes_object_api_create_replace_delete_a_secret",
            "namespace_deletion_removes_its_contents",
        ],
    );
}
