//! Plugins delivered through a registry: `weir push`, pulls pinned by digest, the local store
//! that spares a restart the pull, and a registry behind basic auth read with a pull Secret.
//! Each test starts a real registry on loopback (`tests/setup-registry.sh` installs it).
//! [`through_the_host`]: the same, end to end, with the host following Plugin objects.

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
use weir_e2e::registry::{LocalRegistry, docker_config};
use weir_e2e::{TestEnv, built, engine};

pub(crate) mod through_the_host;

/// `weir push` of the shipped binary (built by `cargo build -p weir --bin weir`, as tests/run.sh does).
pub(crate) fn weir_push(component: &str, reference: &str) -> String {
    let weir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/weir");
    let out = Command::new(&weir)
        .args(["push", built(component).to_str().unwrap(), reference])
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
async fn a_pushed_component_is_pulled_by_digest_and_a_second_fetch_asks_the_registry_nothing() {
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

    // Pinned and on disk: served without a single request (a restart, a second replica).
    let reads = registry.reads();
    assert!(reads > 0, "the registry's access log is not counted");
    let again = fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!((again.pulled, &again.component), (false, &first.component));
    assert_eq!(registry.reads(), reads, "the registry was asked again");

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
