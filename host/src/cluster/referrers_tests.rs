//! The referrers API path, against a registry that has one (the tests' docker-registry has
//! none, so the end-to-end tests take the tag schema's path): a small fake serving the
//! referrers index, the referrer manifest and the bundle, and a tag schema index that must not
//! be read when the API answers.

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

/// What the fake registry serves: path under `/v2/weir/blog/` → (content type, body).
type Served = Arc<Mutex<(BTreeMap<String, (String, Vec<u8>)>, Vec<String>)>>;

async fn serve(State(served): State<Served>, Path(rest): Path<String>) -> Response {
    let Ok(mut served) = served.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    served.1.push(rest.clone());
    match served.0.get(&rest) {
        Some((content_type, body)) => {
            ([(header::CONTENT_TYPE, content_type.clone())], body.clone()).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}"#,
        )
            .into_response(),
    }
}

#[tokio::test]
async fn a_bundle_is_found_through_the_referrers_api_when_the_registry_has_one() {
    let key = PrivateKey::from_bytes(&[5; 32]).unwrap();
    let digest = format!("sha256:{}", "ab".repeat(32));
    let bundle = bundle::sign(&key, &digest, &BTreeMap::new());
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
    let mut paths = BTreeMap::new();
    paths.insert(
        format!("referrers/{digest}"),
        (OCI_IMAGE_INDEX_MEDIA_TYPE.to_owned(), index),
    );
    paths.insert(
        format!("manifests/{}", sha256_digest(&manifest)),
        (OCI_IMAGE_MEDIA_TYPE.to_owned(), manifest),
    );
    paths.insert(
        format!("blobs/{}", sha256_digest(&bundle)),
        ("application/octet-stream".to_owned(), bundle),
    );
    let served: Served = Arc::new(Mutex::new((paths, Vec::new())));
    let app = Router::new()
        .route("/v2/weir/blog/{*rest}", get(serve))
        .with_state(served.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let reference = parse_reference(&format!("127.0.0.1:{port}/weir/blog:1.0")).unwrap();
    let registry = Registry::new(&reference, &Credentials::Anonymous);
    let found = registry.signatures(&reference, &digest).await.unwrap();
    server.abort();

    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].format(), "bundle");
    // The unreadable one is listed as refused and does not hide the other.
    assert!(
        matches!(&found[1].envelope, Envelope::Refused(why) if why.contains("cannot be read")),
        "{found:?}"
    );
    let pem: String = key
        .public_pem()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let policy = Policy::parse(&format!(
        "apiVersion: v1\nallOf:\n  - kind: pubKey\n    name: platform\n    key: |\n{pem}"
    ))
    .unwrap();
    assert_eq!(
        verify(&policy, &digest, &found),
        Verdict::Verified {
            keys: vec!["platform".into()]
        }
    );
    // The API answered: the tag schema's index was not asked for.
    let asked = served.lock().unwrap().1.clone();
    let tag = format!("manifests/{}", digest.replace(':', "-"));
    assert!(asked.contains(&format!("referrers/{digest}")), "{asked:?}");
    assert!(!asked.contains(&tag), "{asked:?}");
    for skipped in ["provenance", "sbom"] {
        let at = format!("manifests/{}", sha256_digest(skipped.as_bytes()));
        assert!(!asked.contains(&at), "{asked:?}");
    }
}
