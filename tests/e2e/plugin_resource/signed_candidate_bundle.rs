//! A Plugin's `spec.candidate` signed only by a Sigstore bundle referring to it (through the
//! referrers tag schema: the test registry has no referrers API, as in `signed_bundle`), under
//! `enforce`: a candidate carrying another artifact's bundle is refused as such, its reason on
//! `CandidateLoaded`, and never shadowed while the bundle-signed v1 keeps serving every Blog; the
//! same bytes with their own bundle verify, are shadowed over every Blog and promoted.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::json;
use weir::cluster::oci::parse_reference;
use weir::cluster::{Credentials, Registry};
use weir::trust::{PrivateKey, bundle};
use weir_test_support::registry::LocalRegistry;

use super::signed::{key_file, policy_file};
use super::signed_candidate::Serving;
use super::{weir_push, weir_push_with};

#[tokio::test]
async fn a_candidate_with_another_artifact_s_bundle_is_never_shadowed_and_one_with_its_own_is_promoted()
-> Result<()> {
    let registry = LocalRegistry::start()?;
    let dir = tempfile::tempdir()?;
    let platform = PrivateKey::from_bytes(&[23; 32])?;
    let platform_key = key_file(dir.path(), "platform", &platform)?;
    let bundle_only = ["--sign", platform_key.as_str(), "--bundle"];
    let v1_ref = registry.reference("weir/blog", "1.0");
    let v1 = weir_push_with("blog.wasm", &v1_ref, &bundle_only);
    // v2's bytes, unsigned, with v1's genuine bundle attached as a referrer of v2.
    let moved = registry.reference("weir/moved", "2.0");
    let v2 = weir_push("blog-v2.wasm", &moved);
    let reference = parse_reference(&moved)?;
    Registry::new(&reference, &Credentials::Anonymous)
        .push_bundle(
            &reference,
            &v2,
            &bundle::sign(&platform, &v1, &BTreeMap::new()),
        )
        .await?;
    // The same bytes beside v1, signed by their own bundle only.
    let signed = registry.reference("weir/blog", "2.0");
    assert_eq!(weir_push_with("blog-v2.wasm", &signed, &bundle_only), v2);

    let enforce = policy_file(dir.path(), "enforce", &platform)?;
    let (serving, enforcing) = Serving::enforcing(&enforce, &v1_ref, &v1).await?;

    let case = "another artifact's bundle";
    let candidate = json!({"oci": moved, "digest": v2});
    let why = format!("vouches for {v1}, not {v2} (a signature of another artifact)");
    serving
        .refuses(&enforcing, case, candidate, "SignatureUntrusted", &why)
        .await?;
    serving.no_child_steered();

    serving.promotes(&enforcing, json!({"digest": v2})).await?;
    enforcing.shutdown().await;
    Ok(())
}
