//! Signatures stored as Sigstore bundles referring to the artifact (cosign v3's default), on the
//! test registry, which has no referrers API, so through the referrers tag schema: a component
//! signed with a bundle only (`weir push --sign KEY --bundle`) verifies and serves under
//! `enforce`; one carrying a bundle moved from another artifact is refused as such; one signed
//! in both formats has both found, listed by `weir verify` with their formats, and counted.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::Result;
use serde_json::json;
use weir::cluster::oci::parse_reference;
use weir::cluster::{Credentials, Registry};
use weir::trust::{PrivateKey, bundle};
use weir_test_support::registry::LocalRegistry;

use super::signed::{host, key_file, verified};
use super::through_the_host::{apply, condition, install_plugin_crd, loaded_digest, status_until};
use super::{weir_push, weir_push_with};
use weir_e2e::{TestEnv, plugin};

/// A policy met by a signature of any one of `keys` (named), enforced for the cluster source.
fn any_key_policy(dir: &Path, keys: &[(&str, &PrivateKey)]) -> Result<String> {
    let mut text = String::from(
        "apiVersion: v1\nlevel: {cluster: enforce}\nanyOf:\n  minimumMatches: 1\n  signatures:\n",
    );
    for (name, key) in keys {
        text += &format!("    - kind: pubKey\n      name: {name}\n      key: |\n");
        for line in key.public_pem().lines() {
            text += &format!("        {line}\n");
        }
    }
    let path = dir.join("policy-any.yaml");
    std::fs::write(&path, text)?;
    Ok(path.to_string_lossy().into_owned())
}

/// `weir verify REF ARGS…`: (success, stdout).
fn weir_verify(reference: &str, args: &[&str]) -> (bool, String) {
    let weir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/weir");
    let out = Command::new(&weir)
        .args(["verify", reference])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", weir.display()));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The first line of `weir verify`'s output listing a signature of `format`.
fn line<'a>(out: &'a str, format: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(format))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_bundle_alone_verifies_a_moved_one_is_refused_and_a_bundle_beside_a_tag_signature_counts()
-> Result<()> {
    let registry = LocalRegistry::start()?;
    let dir = tempfile::tempdir()?;
    let (platform, release) = (
        PrivateKey::from_bytes(&[21; 32])?,
        PrivateKey::from_bytes(&[22; 32])?,
    );
    let (platform_key, release_key) = (
        key_file(dir.path(), "platform", &platform)?,
        key_file(dir.path(), "release", &release)?,
    );
    let (bundled_tag, moved_tag, both_tag) = (
        registry.reference("weir/blog", "1.0"),
        registry.reference("weir/blog", "2.0"),
        registry.reference("weir/blog", "3.0"),
    );
    // v1: a bundle only.
    let v1 = weir_push_with(
        "blog.wasm",
        &bundled_tag,
        &["--sign", &platform_key, "--bundle", "-a", "team=blog"],
    );
    // v2: unsigned, with v1's genuine bundle attached as a referrer of v2.
    let v2 = weir_push("blog-v2.wasm", &moved_tag);
    let reference = parse_reference(&moved_tag)?;
    let annotations = BTreeMap::from([("team".to_owned(), "blog".to_owned())]);
    Registry::new(&reference, &Credentials::Anonymous)
        .push_bundle(&reference, &v2, &bundle::sign(&platform, &v1, &annotations))
        .await?;
    // v3: a tag signature by one key, and a bundle by the other.
    let v3 = weir_push_with("blog-c.wasm", &both_tag, &["--sign", &platform_key]);
    let again = weir_push_with(
        "blog-c.wasm",
        &both_tag,
        &["--sign", &release_key, "--bundle"],
    );
    assert_eq!(v3, again, "the same bytes push to the same digest");

    let (platform_pub, release_pub) = (
        dir.path().join("platform.pub"),
        dir.path().join("release.pub"),
    );
    std::fs::write(&platform_pub, platform.public_pem())?;
    std::fs::write(&release_pub, release.public_pem())?;
    let platform_pub = platform_pub.to_string_lossy().into_owned();
    let release_pub = release_pub.to_string_lossy().into_owned();

    // `weir verify` lists each signature with its format.
    let (ok, out) = weir_verify(&bundled_tag, &["--key", &platform_pub]);
    assert!(ok, "{out}");
    assert!(
        line(&out, "bundle").ends_with(&format!("vouches for {v1}; verified by platform.pub")),
        "{out}"
    );
    assert!(!out.contains("tag signature"), "{out}");
    let (ok, out) = weir_verify(&moved_tag, &["--key", &platform_pub]);
    assert!(!ok, "{out}");
    assert!(out.contains(&format!("vouches for {v1}")), "{out}");
    assert!(out.contains("another artifact"), "{out}");
    let (ok, out) = weir_verify(&both_tag, &["--key", &platform_pub, "--key", &release_pub]);
    assert!(ok, "{out}");
    assert!(
        line(&out, "tag signature").ends_with("verified by platform.pub"),
        "{out}"
    );
    assert!(
        line(&out, "bundle").ends_with("verified by release.pub"),
        "{out}"
    );
    assert!(
        out.contains("verified: signed by platform.pub, release.pub"),
        "{out}"
    );

    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let store = tempfile::tempdir()?;
    let policy = any_key_policy(
        dir.path(),
        &[("platform", &platform), ("release", &release)],
    )?;
    let host = host(&env, store.path(), &policy).await?;

    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": bundled_tag}, "digest": v1}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "v1, signed by a bundle, serves", |s| {
        loaded_digest(&v1)(s) && verified(s).0 == "True"
    })
    .await?;
    assert_eq!(verified(&status).1, "Verified", "{status:?}");
    assert!(verified(&status).2.contains("platform"), "{status:?}");

    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": moved_tag}, "digest": v2}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "v2 with v1's bundle is refused", |s| {
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
        error.contains(&format!("vouches for {v1}, not {v2}"))
            && error.contains("another artifact"),
        "{error}"
    );

    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": both_tag}, "digest": v3}),
    )
    .await?;
    let status = status_until(
        &plugins,
        "blog",
        "v3, signed in both formats, serves",
        |s| loaded_digest(&v3)(s) && verified(s).0 == "True",
    )
    .await?;
    let (_, _, message) = verified(&status);
    assert!(
        message.contains("platform") && message.contains("release"),
        "both signatures count: {message}"
    );
    host.shutdown().await;
    Ok(())
}
