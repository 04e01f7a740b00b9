//! Registries the tests' docker-registry is not (it has no referrers API and answers 404, so the
//! end-to-end tests take the tag schema's path): a small fake registry that has the referrers
//! API, and one that answers it with 405 instead of 404. Each serves a referrer manifest and
//! its bundle.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::*;
use crate::cluster::oci::{Credentials, parse_reference};
use crate::trust::found::Envelope;
use crate::trust::{Policy, PrivateKey, Verdict, verify};

/// An answer of the fake registry: status, content type, body.
type Answer = (u16, String, Vec<u8>);

/// What a fake registry serves, and what it was asked.
#[derive(Default)]
struct Served {
    /// Path under `/v2/weir/blog/` → answer.
    answers: BTreeMap<String, Answer>,
    /// The paths asked for.
    asked: Vec<String>,
}

/// A fake registry.
#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Served>>);

impl Fake {
    fn put(&self, path: String, status: u16, content_type: &str, body: Vec<u8>) {
        if let Ok(mut fake) = self.0.lock() {
            fake.answers
                .insert(path, (status, content_type.to_owned(), body));
        }
    }

    fn asked(&self) -> Vec<String> {
        self.0.lock().map(|f| f.asked.clone()).unwrap_or_default()
    }

    /// Serves on loopback; returns a reference to `weir/blog:1.0` there.
    async fn start(&self) -> (Reference, tokio::task::JoinHandle<std::io::Result<()>>) {
        let app = Router::new()
            .route("/v2/weir/blog/{*rest}", get(serve))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let reference = parse_reference(&format!("127.0.0.1:{port}/weir/blog:1.0")).unwrap();
        (reference, server)
    }
}

async fn serve(State(fake): State<Fake>, Path(rest): Path<String>) -> Response {
    let Ok(mut fake) = fake.0.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    fake.asked.push(rest.clone());
    match fake.answers.get(&rest) {
        Some((status, content_type, body)) => (
            StatusCode::from_u16(*status).unwrap_or(StatusCode::OK),
            [(header::CONTENT_TYPE, content_type.clone())],
            body.clone(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}"#,
        )
            .into_response(),
    }
}

fn key() -> PrivateKey {
    PrivateKey::from_bytes(&[5; 32]).unwrap()
}

fn digest() -> String {
    format!("sha256:{}", "ab".repeat(32))
}

/// Serves a bundle of `digest` by [`key`] as a referrer; returns the referrers index listing it,
/// a referrer whose manifest the registry does not have, an attestation and an SBOM.
fn referrer(fake: &Fake) -> Vec<u8> {
    let digest = digest();
    let bundle = bundle::sign(&key(), &digest, &BTreeMap::new());
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_MEDIA_TYPE,
        "artifactType": bundle::MEDIA_TYPE,
        "config": {"mediaType": EMPTY_MEDIA_TYPE, "digest": sha256_digest(b"{}"), "size": 2},
        "layers": [{"mediaType": bundle::MEDIA_TYPE, "digest": sha256_digest(&bundle), "size": bundle.len()}],
        "subject": {"mediaType": OCI_IMAGE_MEDIA_TYPE, "digest": digest, "size": 10},
    }))
    .unwrap();
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_INDEX_MEDIA_TYPE,
        "manifests": [{
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "digest": sha256_digest(&manifest),
            "size": manifest.len(),
            "artifactType": bundle::MEDIA_TYPE,
        }, {
            // A bundle whose manifest the registry no longer has.
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "digest": sha256_digest(b"gone"),
            "size": 4,
            "artifactType": bundle::MEDIA_TYPE,
        }, {
            // An attestation, and an SBOM: not signatures, not fetched.
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "digest": sha256_digest(b"provenance"),
            "size": 10,
            "artifactType": bundle::MEDIA_TYPE,
            "annotations": {PREDICATE_ANNOTATION: "https://slsa.dev/provenance/v1"},
        }, {
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "digest": sha256_digest(b"sbom"),
            "size": 4,
            "artifactType": "application/spdx+json",
        }],
    }))
    .unwrap();
    let path = format!("manifests/{}", sha256_digest(&manifest));
    fake.put(path, 200, OCI_IMAGE_MEDIA_TYPE, manifest);
    let path = format!("blobs/{}", sha256_digest(&bundle));
    fake.put(path, 200, "application/octet-stream", bundle);
    index
}

/// Holds `found` to a policy of [`key`]: the bundle verifies, the unreadable referrer is
/// listed as refused and hides nothing, the attestation and the SBOM were not fetched.
fn assert_found(found: &[Found], asked: &[String]) {
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].format(), "bundle");
    assert!(
        matches!(&found[1].envelope, Envelope::Refused(why) if why.contains("cannot be read")),
        "{found:?}"
    );
    let pem: String = key()
        .public_pem()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let policy = Policy::parse(&format!(
        "apiVersion: v1\nallOf:\n  - kind: pubKey\n    name: platform\n    key: |\n{pem}"
    ))
    .unwrap();
    assert_eq!(
        verify(&policy, &digest(), found),
        Verdict::Verified {
            keys: vec!["platform".into()]
        }
    );
    for skipped in ["provenance", "sbom"] {
        let at = format!("manifests/{}", sha256_digest(skipped.as_bytes()));
        assert!(!asked.contains(&at), "{asked:?}");
    }
}

#[tokio::test]
async fn a_bundle_is_found_through_the_referrers_api_when_the_registry_has_one() {
    let fake = Fake::default();
    let index = referrer(&fake);
    let digest = digest();
    fake.put(
        format!("referrers/{digest}"),
        200,
        OCI_IMAGE_INDEX_MEDIA_TYPE,
        index,
    );
    let (reference, server) = fake.start().await;
    let registry = Registry::new(&reference, &Credentials::Anonymous);
    let found = registry.signatures(&reference, &digest).await.unwrap();
    server.abort();

    let asked = fake.asked();
    assert_found(&found, &asked);
    // The API answered: the tag schema's index was not asked for.
    assert!(asked.contains(&format!("referrers/{digest}")), "{asked:?}");
    let tag = format!("manifests/{}", digest.replace(':', "-"));
    assert!(!asked.contains(&tag), "{asked:?}");
}

#[tokio::test]
async fn a_registry_answering_the_referrers_api_with_405_has_its_tag_schema_read() {
    let fake = Fake::default();
    let index = referrer(&fake);
    let digest = digest();
    fake.put(format!("referrers/{digest}"), 405, "text/plain", Vec::new());
    let tag = format!("manifests/{}", digest.replace(':', "-"));
    fake.put(tag.clone(), 200, OCI_IMAGE_INDEX_MEDIA_TYPE, index);
    let (reference, server) = fake.start().await;
    let registry = Registry::new(&reference, &Credentials::Anonymous);
    let found = registry.signatures(&reference, &digest).await.unwrap();
    server.abort();

    let asked = fake.asked();
    assert_found(&found, &asked);
    assert!(asked.contains(&tag), "{asked:?}");
}
