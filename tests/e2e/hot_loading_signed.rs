//! The plugins directory held to a verification policy on a running host (`weir run --plugins
//! DIR --verification-policy FILE`): an unsigned file serves nothing, its Blog gets no child,
//! until `weir sign` writes the signature beside it; then the Blog converges.

use std::path::Path;
use std::process::Command;

use anyhow::{Result, ensure};
use kube::api::ListParams;
use serde_json::json;
use weir::trust::PrivateKey;
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, eventually, install, kinds, plugin, wait_ready};

/// Runs the built `weir sign --key KEY FILE`.
fn weir_sign(key: &Path, file: &Path) -> Result<()> {
    let weir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/weir");
    let out = Command::new(&weir)
        .arg("sign")
        .arg("--key")
        .arg(key)
        .arg(file)
        .output()?;
    ensure!(
        out.status.success(),
        "weir sign failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn an_unsigned_file_serves_nothing_until_weir_sign_writes_its_signature() -> Result<()> {
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let dir = tempfile::tempdir()?;
    let keys = tempfile::tempdir()?;
    let key = PrivateKey::from_bytes(&[5; 32])?;
    let key_file = keys.path().join("weir.key");
    std::fs::write(&key_file, key.to_pem())?;
    let pem: String = key
        .public_pem()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let policy = keys.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: v1\nlevel: {{directory: enforce}}\nallOf:\n  - kind: pubKey\n    name: platform\n    key: |\n{pem}"
        ),
    )?;
    install(dir.path(), "blog.wasm", "blog.wasm")?;
    let host = env
        .run_args(RunSource::Plugins(dir.path().into()))
        .flags([
            "--verification-policy".to_owned(),
            policy.display().to_string(),
        ])
        .in_process(&env)
        .start()
        .await?;
    env.create(
        &kinds::blog(),
        "signed",
        json!({"title": "Signed", "replicas": 1}),
    )
    .await?;
    eventually("the unsigned file refused", CONVERGE, || async {
        (host.hotload_metrics().refusals("unsigned") == 1).then_some(())
    })
    .await?;
    assert!(host.catalog().is_empty(), "an unsigned file serves nothing");
    let deployments = env.api(&kinds::deployment());
    assert!(
        deployments
            .list(&ListParams::default())
            .await?
            .items
            .is_empty(),
        "no child of an unserved kind"
    );

    weir_sign(&key_file, &dir.path().join("blog.wasm"))?;
    wait_ready(&env.api(&kinds::blog()), "signed").await?;
    assert_eq!(host.catalog().len(), 1);
    assert_eq!(
        deployments.list(&ListParams::default()).await?.items.len(),
        1
    );
    Ok(())
}
