//! Plugins held to a verification policy on the hot-load path: a component signed by the
//! policy's key (`weir push --sign`) serves and its status names the key; one signed by an
//! unknown key, or unsigned, is refused under `enforce` (the verified version keeps serving)
//! and served under `audit` with the reason; `weir verify` says what it found; a verified
//! digest serves again after a restart with the registry down, from the verdict kept beside it.
//! `signed_bundle`: the same with signatures stored as Sigstore bundles.

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use serde_json::json;
use weir::cluster::PluginStatus;
use weir::manager::Manager;
use weir::trust::PrivateKey;
use weir_e2e::host::RunSource;
use weir_e2e::{TestEnv, own_engine, plugin};
use weir_test_support::registry::LocalRegistry;

use super::through_the_host::{apply, condition, install_plugin_crd, loaded_digest, status_until};
use super::{weir_push, weir_push_with};

/// Writes `key`'s private half to `dir/NAME.key` and returns the path.
pub(super) fn key_file(dir: &Path, name: &str, key: &PrivateKey) -> Result<String> {
    let path = dir.join(format!("{name}.key"));
    std::fs::write(&path, key.to_pem())?;
    Ok(path.to_string_lossy().into_owned())
}

/// A policy trusting `key` as `platform`, at `level` for the cluster source.
pub(super) fn policy_file(dir: &Path, level: &str, key: &PrivateKey) -> Result<String> {
    let pem: String = key
        .public_pem()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let path = dir.join(format!("policy-{level}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nlevel: {{cluster: {level}}}\nallOf:\n  - kind: pubKey\n    name: platform\n    key: |\n{pem}"
        ),
    )?;
    Ok(path.to_string_lossy().into_owned())
}

pub(super) async fn host(env: &TestEnv, store: &Path, policy: &str) -> Result<Manager> {
    env.run_args(RunSource::Cluster(store.into()))
        .flags(["--verification-policy", policy])
        .in_process(env)
        .engine(own_engine()?)
        .start()
        .await
}

pub(super) fn verified(s: &PluginStatus) -> (String, String, String) {
    s.conditions
        .iter()
        .find(|c| c.type_ == "Verified")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// `weir verify REF --key PUB`: (success, stdout).
fn weir_verify(reference: &str, public: &Path) -> (bool, String) {
    let weir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/weir");
    let out = Command::new(&weir)
        .args([
            "verify",
            reference,
            "--key",
            public.to_str().unwrap_or_default(),
        ])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", weir.display()));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn only_a_component_the_policy_s_key_signed_serves_under_enforce_and_audit_serves_and_says_why()
-> Result<()> {
    let mut registry = LocalRegistry::start()?;
    let dir = tempfile::tempdir()?;
    let (platform, stranger) = (
        PrivateKey::from_bytes(&[11; 32])?,
        PrivateKey::from_bytes(&[12; 32])?,
    );
    let (signed_tag, stranger_tag, unsigned_tag) = (
        registry.reference("weir/blog", "1.0"),
        registry.reference("weir/blog", "2.0"),
        registry.reference("weir/blog", "3.0"),
    );
    let platform_key = key_file(dir.path(), "platform", &platform)?;
    let v1 = weir_push_with(
        "blog.wasm",
        &signed_tag,
        &["--sign", &platform_key, "-a", "team=blog"],
    );
    let v2 = weir_push_with(
        "blog-v2.wasm",
        &stranger_tag,
        &["--sign", &key_file(dir.path(), "stranger", &stranger)?],
    );
    let unsigned = weir_push("chaos.wasm", &unsigned_tag);

    // `weir verify` lists the signature and the key that verifies it.
    let public = dir.path().join("platform.pub");
    std::fs::write(&public, platform.public_pem())?;
    let (ok, out) = weir_verify(&signed_tag, &public);
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!("vouches for {v1}; verified by platform.pub")),
        "{out}"
    );
    let (ok, out) = weir_verify(&stranger_tag, &public);
    assert!(!ok && out.contains("no key given verifies it"), "{out}");
    let (ok, out) = weir_verify(&unsigned_tag, &public);
    assert!(!ok && out.contains("no signature"), "{out}");

    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let store = tempfile::tempdir()?;
    let enforce = policy_file(dir.path(), "enforce", &platform)?;
    let host_enforcing = host(&env, store.path(), &enforce).await?;

    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": signed_tag}, "digest": v1}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "the signed v1 serves", loaded_digest(&v1)).await?;
    let (is, reason, message) = verified(&status);
    assert_eq!(
        (is.as_str(), reason.as_str()),
        ("True", "Verified"),
        "{status:?}"
    );
    assert!(message.contains("platform"), "{message}");

    // Signed by a key the policy does not name: refused, v1 keeps serving.
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": stranger_tag}, "digest": v2}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "v2 is refused", |s| {
        condition(s, "Loaded") == ("False".into(), "SignatureUntrusted".into())
    })
    .await?;
    assert_eq!(
        status.digest.as_deref(),
        Some(v1.as_str()),
        "v1 keeps serving"
    );
    let error = status.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("no key of the policy verifies it") && error.contains(&v2),
        "{error}"
    );

    // Unsigned: refused as unsigned.
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": unsigned_tag}, "digest": unsigned}),
    )
    .await?;
    status_until(&plugins, "blog", "the unsigned one is refused", |s| {
        condition(s, "Loaded") == ("False".into(), "Unsigned".into())
    })
    .await?;
    host_enforcing.shutdown().await;

    // Under audit, v2 serves and its status says why it would have been refused.
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": stranger_tag}, "digest": v2}),
    )
    .await?;
    let audit = policy_file(dir.path(), "audit", &platform)?;
    let host_auditing = host(&env, store.path(), &audit).await?;
    let status = status_until(
        &plugins,
        "blog",
        "v2 serves under audit",
        loaded_digest(&v2),
    )
    .await?;
    assert_eq!(
        (verified(&status).0.as_str(), verified(&status).1.as_str()),
        ("False", "SignatureUntrusted"),
        "{status:?}"
    );
    host_auditing.shutdown().await;

    // The verified v1 again, after a restart with the registry down: its verdict is kept
    // beside it, so it serves without its signature being fetched.
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": signed_tag}, "digest": v1}),
    )
    .await?;
    registry.stop();
    let host_enforcing = host(&env, store.path(), &enforce).await?;
    let status = status_until(&plugins, "blog", "v1 serves offline, verified", |s| {
        loaded_digest(&v1)(s) && verified(s).0 == "True"
    })
    .await?;
    assert_eq!(condition(&status, "TagChecked").0, "False");
    host_enforcing.shutdown().await;
    Ok(())
}
