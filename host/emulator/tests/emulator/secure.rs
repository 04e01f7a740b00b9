//! A secure emulator (`EmulatorConfig::secure`): HTTPS with its own CA, bearer tokens, RBAC.
//! kube's client, kubectl, the official Python client and client-node connect with the
//! kubeconfig it writes, get 401 with a wrong token, and a ServiceAccount gets what its Role
//! grants and the real 403 elsewhere.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};
use weir_emulator::{Emulator, EmulatorConfig};

/// A secure emulator and, in `dir`, three kubeconfigs: the one it wrote (admin), the same with
/// a wrong token, and the same with a token of the ServiceAccount `default/reader`, which may
/// get and list ConfigMaps in `default` only.
async fn secure(dir: &Path) -> (Emulator, [PathBuf; 3]) {
    let em = Emulator::start(EmulatorConfig {
        secure: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let client = em.client();
    let create = PostParams::default();
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "reader"}})).unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), "default")
        .create(&create, &sa)
        .await
        .unwrap();
    let role: Role = serde_json::from_value(json!({"metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}))
    .unwrap();
    Api::<Role>::namespaced(client.clone(), "default")
        .create(&create, &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}]}))
    .unwrap();
    Api::<RoleBinding>::namespaced(client, "default")
        .create(&create, &binding)
        .await
        .unwrap();

    let admin = dir.join("admin");
    em.write_kubeconfig(&admin).unwrap();
    let with_token = |name: &str, token: &str| {
        let mut config: Value = serde_json::to_value(em.kubeconfig()).unwrap();
        config["users"][0]["user"]["token"] = json!(token);
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
        path
    };
    let wrong = with_token("wrong", "not-a-token-this-emulator-issued");
    let token = em.service_account_token("default", "reader").unwrap();
    let reader = with_token("reader", &token);
    (em, [admin, wrong, reader])
}

async fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .await
        .unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

#[tokio::test]
async fn the_kubeconfig_carries_the_ca_and_a_token_and_never_skips_verification() {
    let dir = tempfile::tempdir().unwrap();
    let (em, [admin, ..]) = secure(dir.path()).await;
    assert!(em.url().starts_with("https://127.0.0.1:"));
    let written = std::fs::read_to_string(&admin).unwrap();
    assert!(written.contains("certificate-authority-data:"), "{written}");
    assert!(written.contains("token:"), "{written}");
    assert!(!written.contains("insecure-skip-tls-verify"), "{written}");
    let namespaces: Api<Namespace> = Api::all(em.client());
    let listed = namespaces.list(&ListParams::default()).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
    em.shutdown().await;
}

#[tokio::test]
async fn kubectl_connects_with_tokens_and_gets_401_and_the_real_403() {
    let dir = tempfile::tempdir().unwrap();
    let (em, [admin, wrong, reader]) = secure(dir.path()).await;
    let ok = kubectl(&admin, &["get", "namespaces"]).await;
    assert!(ok.status.success(), "{}", text(&ok.stderr));

    let refused = kubectl(&wrong, &["get", "namespaces"]).await;
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("Unauthorized"),
        "{}",
        text(&refused.stderr)
    );
    assert!(
        em.requests()
            .iter()
            .any(|r| r.status == 401 && r.user.is_none())
    );

    assert!(
        kubectl(&reader, &["get", "configmaps", "-n", "default"])
            .await
            .status
            .success()
    );
    let forbidden = kubectl(&reader, &["get", "configmaps", "-n", "kube-system"]).await;
    assert!(!forbidden.status.success());
    assert!(
        text(&forbidden.stderr).contains(r#"configmaps is forbidden: User "system:serviceaccount:default:reader" cannot list resource "configmaps" in API group "" in the namespace "kube-system""#),
        "{}",
        text(&forbidden.stderr)
    );
    let who = kubectl(
        &reader,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await;
    assert_eq!(
        text(&who.stdout),
        "system:serviceaccount:default:reader",
        "{}",
        text(&who.stderr)
    );
    em.shutdown().await;
}

#[tokio::test]
async fn kubectl_auth_can_i_answers_from_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (em, [admin, _, reader]) = secure(dir.path()).await;
    let can = async |args: &[&str]| {
        let out = kubectl(&reader, &[&["auth", "can-i"], args].concat()).await;
        text(&out.stdout).trim().to_string()
    };
    assert_eq!(can(&["list", "configmaps", "-n", "default"]).await, "yes");
    assert_eq!(
        can(&["get", "configmaps/any", "-n", "default"]).await,
        "yes"
    );
    assert_eq!(can(&["delete", "configmaps", "-n", "default"]).await, "no");
    assert_eq!(
        can(&["list", "configmaps", "-n", "kube-system"]).await,
        "no"
    );
    assert_eq!(can(&["list", "secrets", "-n", "default"]).await, "no");
    let listed = text(
        &kubectl(&reader, &["auth", "can-i", "--list", "-n", "default"])
            .await
            .stdout,
    );
    assert!(listed.contains("configmaps"), "{listed}");
    let admin_can = text(
        &kubectl(&admin, &["auth", "can-i", "delete", "nodes"])
            .await
            .stdout,
    );
    assert_eq!(admin_can.trim(), "yes");
    em.shutdown().await;
}

#[tokio::test]
async fn kubectl_create_token_issues_a_token_that_authenticates_as_the_account() {
    let dir = tempfile::tempdir().unwrap();
    let (em, [admin, ..]) = secure(dir.path()).await;
    let issued = kubectl(&admin, &["create", "token", "reader", "-n", "default"]).await;
    assert!(issued.status.success(), "{}", text(&issued.stderr));
    let token = text(&issued.stdout).trim().to_string();
    let who = kubectl(
        &admin,
        &[
            "--token",
            &token,
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await;
    assert_eq!(
        text(&who.stdout),
        "system:serviceaccount:default:reader",
        "{}",
        text(&who.stderr)
    );
    let missing = kubectl(&admin, &["create", "token", "nobody", "-n", "default"]).await;
    assert!(!missing.status.success());

    // The token dies with its account.
    let accounts: Api<ServiceAccount> = Api::namespaced(em.client(), "default");
    accounts
        .delete("reader", &Default::default())
        .await
        .unwrap();
    let after = kubectl(&admin, &["--token", &token, "get", "configmaps"]).await;
    let after = text(&after.stderr);
    assert!(
        after.contains("Unauthorized") || after.contains("provide credentials"),
        "{after}"
    );
    em.shutdown().await;
}

#[tokio::test]
async fn a_service_account_reads_what_its_role_grants_through_kube_rs() {
    let dir = tempfile::tempdir().unwrap();
    let (em, [_, _, reader]) = secure(dir.path()).await;
    let config: kube::config::Kubeconfig =
        serde_json::from_slice(&std::fs::read(&reader).unwrap()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let here: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    here.list(&ListParams::default()).await.unwrap();
    let there: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    match there.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403);
            assert_eq!(status.reason, "Forbidden");
        }
        other => panic!("expected a 403, got {other:?}"),
    }
    let denied = em
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.status == 403)
        .unwrap();
    assert_eq!(
        denied.user.as_deref(),
        Some("system:serviceaccount:default:reader")
    );
    em.shutdown().await;
}

/// `program args…` with the three kubeconfigs; every check it prints passes.
async fn client_script(program: &Path, script: &str, extra: &[&Path]) {
    let dir = tempfile::tempdir().unwrap();
    let (em, [admin, wrong, reader]) = secure(dir.path()).await;
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    let out = tokio::process::Command::new(program)
        .arg(scripts.join(script))
        .args([&admin, &wrong, &reader])
        .args(extra)
        .env("HOME", dir.path())
        .output()
        .await
        .unwrap_or_else(|e| panic!("could not start {}: {e}", program.display()));
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.matches("PASS ").count() == 3,
        "{script}:\n{stdout}\n{}",
        text(&out.stderr)
    );
    em.shutdown().await;
}

fn installed(path: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = tmp
        .parent()
        .unwrap_or(tmp)
        .join("emulator-clients")
        .join(path);
    assert!(
        path.exists(),
        "{} is missing: run host/emulator/tests/clients/setup.sh",
        path.display()
    );
    path
}

#[tokio::test]
async fn the_python_client_connects_over_tls_with_a_token_and_gets_401_and_403() {
    client_script(&installed("venv/bin/python"), "python/secure.py", &[]).await;
}

#[tokio::test]
async fn client_node_connects_over_tls_with_a_token_and_gets_401_and_403() {
    client_script(
        Path::new("node"),
        "js/secure.mjs",
        &[&installed("js/node_modules")],
    )
    .await;
}
