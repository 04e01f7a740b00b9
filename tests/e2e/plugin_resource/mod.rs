//! Plugins delivered through a registry: `weir push`, pulls pinned by digest, the local store
//! that spares a restart the download (never the question what a tag names now), the same
//! refusal of a moved tag with and without the old content stored, a store that heals when
//! removed, and a registry behind basic auth read with a pull Secret.
//! Each test starts a real registry on loopback (`tests/setup-registry.sh` installs it).
//! [`through_the_host`]: the same, end to end, with the host following Plugin objects;
//! `registry_outage`: a host restarted or swapped while the registry is down; `signed`: Plugins
//! held to a verification policy; `signed_bundle`: signed with Sigstore bundles referring to
//! them; `signed_candidate`: their candidates held to it; `signed_candidate_bundle`: candidates
//! signed by bundles only.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use weir::cluster::fetch::{FetchError, fetch, pull_credentials};
use weir::cluster::oci::{OciError, parse_reference};
use weir::cluster::{Blobs, Credentials, ObjectReference, Registry};
use weir::plugin::Limits;
use weir_e2e::{TestEnv, built, engine};
use weir_test_support::registry::{LocalRegistry, docker_config};

mod registry_outage;
mod signed;
mod signed_bundle;
mod signed_candidate;
mod signed_candidate_bundle;
pub(crate) mod through_the_host;

/// `weir push` of the shipped binary (built by `cargo build -p weir --bin weir`, as tests/run.sh does).
pub(crate) fn weir_push(component: &str, reference: &str) -> String {
    weir_push_with(component, reference, &[])
}

/// `weir push` with more flags (`--sign KEY`, `-a K=V`).
pub(crate) fn weir_push_with(component: &str, reference: &str, flags: &[&str]) -> String {
    let weir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/weir");
    let out = Command::new(&weir)
        .args(["push", built(component).to_str().unwrap(), reference])
        .args(flags)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", weir.display()));
    assert!(
        out.status.success(),
        "weir push failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn a_pushed_component_is_pulled_once_and_a_second_fetch_downloads_nothing() {
    let registry = LocalRegistry::start().unwrap();
    let reference = registry.reference("weir/blog", "1.0");
    let digest = weir_push("blog.wasm", &reference);
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    // The same bytes push to the same manifest (the config records no time).
    assert_eq!(weir_push("blog.wasm", &reference), digest);

    let cache = tempfile::tempdir().unwrap();
    let blobs = Blobs::open(cache.path()).unwrap();
    let first = fetch(&blobs, &reference, None, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(first.digest, digest);
    assert!(first.pulled);
    let original = std::fs::read(built("blog.wasm")).unwrap();
    assert_eq!(std::fs::read(&first.component.path).unwrap(), original);

    // Pinned and on disk (a restart, a second replica): the tag is asked about, nothing is
    // downloaded.
    let downloads = registry.downloads();
    assert!(downloads > 0, "the registry's access log is not counted");
    let again = fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!((again.pulled, &again.component), (false, &first.component));
    assert_eq!(
        registry.downloads(),
        downloads,
        "the component was downloaded again"
    );

    // By digest and on disk: a digest names its content for good, so the registry hears nothing.
    let reads = registry.reads();
    let by_digest = format!("{}/weir/blog@{digest}", registry.addr);
    let again = fetch(&blobs, &by_digest, None, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!((again.pulled, &again.component), (false, &first.component));
    assert_eq!(
        registry.reads(),
        reads,
        "the registry was asked about a digest"
    );

    // The stored component loads straight from disk by its digest.
    let plugin = engine()
        .unwrap()
        .load_verified(
            &again.component.path,
            &again.component.sha256,
            Limits::default(),
        )
        .unwrap();
    assert_eq!(plugin.info().name, "blog");
    assert_eq!(plugin.sha256(), again.component.sha256);
}

#[tokio::test]
async fn a_tag_that_names_another_digest_than_the_pin_is_refused() {
    let registry = LocalRegistry::start().unwrap();
    let reference = registry.reference("weir/blog", "stable");
    let v1 = weir_push("blog.wasm", &reference);
    let v2 = weir_push("blog-v2.wasm", &reference);
    assert_ne!(v1, v2);
    let cache = tempfile::tempdir().unwrap();
    let blobs = Blobs::open(cache.path()).unwrap();
    let err = fetch(&blobs, &reference, Some(&v1), &Credentials::Anonymous)
        .await
        .unwrap_err();
    let FetchError::Oci(OciError::DigestMismatch { pinned, found, .. }) = &err else {
        panic!("{err:?}")
    };
    assert_eq!((pinned, found), (&v1, &v2));
    // By digest, the old version is still there to pin.
    let by_digest = format!("{}/weir/blog@{v1}", registry.addr);
    let old = fetch(&blobs, &by_digest, None, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(&old.component.path).unwrap(),
        std::fs::read(built("blog.wasm")).unwrap()
    );
    // A digest that names nothing is an error from the registry, not a load.
    let nothing = format!("sha256:{}", "0".repeat(64));
    let err = fetch(&blobs, &reference, Some(&nothing), &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Oci(OciError::DigestMismatch { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_moved_tag_is_refused_alike_with_the_pinned_content_stored_and_with_a_fresh_store() {
    let registry = LocalRegistry::start().unwrap();
    let reference = registry.reference("weir/blog", "2.0");
    let v1 = weir_push("blog.wasm", &reference);
    let warm = tempfile::tempdir().unwrap();
    let warm = Blobs::open(warm.path()).unwrap();
    let stored = fetch(&warm, &reference, Some(&v1), &Credentials::Anonymous)
        .await
        .unwrap();
    assert!(stored.pulled);

    // The tag now names other content; the pin still says v1.
    let v2 = weir_push("blog-v2.wasm", &reference);
    assert_ne!(v1, v2);
    let fresh = tempfile::tempdir().unwrap();
    let fresh = Blobs::open(fresh.path()).unwrap();
    let mut answers = Vec::new();
    for blobs in [&warm, &fresh] {
        let err = fetch(blobs, &reference, Some(&v1), &Credentials::Anonymous)
            .await
            .unwrap_err();
        let FetchError::Oci(OciError::DigestMismatch { pinned, found, .. }) = &err else {
            panic!("{err:?}")
        };
        assert_eq!((pinned, found), (&v1, &v2));
        answers.push((err.reason(), err.to_string()));
    }
    assert_eq!(
        answers[0], answers[1],
        "the warm and the fresh store answer differently"
    );
    assert_eq!(answers[0].0, "DigestMismatch");
}

#[tokio::test]
async fn a_store_removed_under_a_running_host_is_recreated_by_the_next_fetch() {
    let registry = LocalRegistry::start().unwrap();
    let reference = registry.reference("weir/blog", "1.0");
    let digest = weir_push("blog.wasm", &reference);
    let cache = tempfile::tempdir().unwrap();
    let store = cache.path().join("components-store");
    let blobs = Blobs::open(&store).unwrap();
    fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous)
        .await
        .unwrap();

    std::fs::remove_dir_all(&store).unwrap();
    let again = fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous)
        .await
        .unwrap();
    assert!(again.pulled, "the removed component was not pulled again");
    assert_eq!(
        std::fs::read(&again.component.path).unwrap(),
        std::fs::read(built("blog.wasm")).unwrap()
    );
    let third = fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!((third.pulled, third.component), (false, again.component));
}

#[tokio::test]
async fn a_registry_behind_basic_auth_is_read_with_the_pull_secret() {
    let env = TestEnv::start().await.unwrap();
    let registry = LocalRegistry::start_with_basic_auth("weir", "s3cret").unwrap();
    let reference = registry.reference("weir/blog", "1.0");
    let parsed = parse_reference(&reference).unwrap();
    let component = std::fs::read(built("blog.wasm")).unwrap();
    let refused = Registry::new(&parsed, &Credentials::Anonymous)
        .push(&component, &parsed)
        .await
        .unwrap_err();
    assert!(matches!(refused, OciError::Registry { .. }), "{refused:?}");
    let credentials = Credentials::Basic {
        username: "weir".into(),
        password: "s3cret".into(),
    };
    let digest = Registry::new(&parsed, &credentials)
        .push(&component, &parsed)
        .await
        .unwrap();

    let cache = tempfile::tempdir().unwrap();
    let blobs = Blobs::open(cache.path()).unwrap();
    let anonymous = fetch(&blobs, &reference, None, &Credentials::Anonymous).await;
    assert!(anonymous.is_err(), "an anonymous pull got through");

    let mut secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "regcred"},
        "type": "kubernetes.io/dockerconfigjson",
    }))
    .unwrap();
    let config = docker_config(&registry.addr, "weir", "s3cret");
    secret.data = Some(BTreeMap::from([(
        ".dockerconfigjson".to_owned(),
        ByteString(config.into_bytes()),
    )]));
    Api::<Secret>::namespaced(env.client.clone(), &env.namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let secret_ref = ObjectReference {
        namespace: env.namespace.clone(),
        name: "regcred".into(),
    };
    let from_secret = pull_credentials(&env.client, &secret_ref, &reference)
        .await
        .unwrap();
    let fetched = fetch(&blobs, &reference, Some(&digest), &from_secret)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&fetched.component.path).unwrap(), component);

    let missing = ObjectReference {
        namespace: env.namespace.clone(),
        name: "nothing".into(),
    };
    let err = pull_credentials(&env.client, &missing, &reference)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nothing"), "{err}");
}
