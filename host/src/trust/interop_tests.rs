//! What Weir signs verifies under another implementation: the `openssl` command line checks the
//! ECDSA P-256 signatures of a tag signature's payload, a file's detached signature and a
//! bundle's DSSE envelope (over a pre-authentication encoding written here, not by Weir), with
//! the public key as Weir writes it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::keys::PrivateKey;
use super::simple_signing::Payload;
use super::{blob, bundle};

const DIGEST: &str = "sha256:5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";

/// Whether `openssl dgst -sha256 -verify` accepts `signature` (base64 of DER) over `message`
/// with the public key `public_pem`; panics if openssl cannot be run.
fn openssl_verifies(dir: &Path, public_pem: &str, message: &[u8], signature: &str) -> bool {
    let (key, data, sig) = (dir.join("key.pub"), dir.join("data"), dir.join("sig.der"));
    std::fs::write(&key, public_pem).unwrap();
    std::fs::write(&data, message).unwrap();
    std::fs::write(&sig, STANDARD.decode(signature.trim()).unwrap()).unwrap();
    let out = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(&key)
        .arg("-signature")
        .arg(&sig)
        .arg(&data)
        .output()
        .unwrap_or_else(|e| panic!("openssl (tests/run.sh installs it): {e}"));
    out.status.success()
}

/// DSSE's pre-authentication encoding, written from the DSSE spec for this test.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

#[test]
fn openssl_verifies_what_weir_signs_in_each_format_and_not_a_changed_message() {
    let dir = tempfile::tempdir().unwrap();
    let key = PrivateKey::from_bytes(&[7; 32]).unwrap();
    let public = key.public_pem();
    let annotations = BTreeMap::from([("team".to_owned(), "payments".to_owned())]);

    // A tag signature: the simple-signing payload, signed as `weir push --sign` signs it.
    let payload = Payload::new("registry.example/weir/blog", DIGEST, &annotations).to_bytes();
    let signature = key.sign(&payload);
    assert!(openssl_verifies(dir.path(), &public, &payload, &signature));
    let mut changed = payload.clone();
    changed.push(b' ');
    assert!(!openssl_verifies(dir.path(), &public, &changed, &signature));

    // A file's detached signature, as `weir sign` writes it.
    let bytes = b"\0asm\x0d\0\x01\0 a component".to_vec();
    let detached = blob::sign(&key, &bytes);
    assert!(openssl_verifies(dir.path(), &public, &bytes, &detached));

    // A bundle, as `weir push --sign --bundle` writes it: its DSSE signature is over the PAE.
    let written: serde_json::Value =
        serde_json::from_slice(&bundle::sign(&key, DIGEST, &annotations)).unwrap();
    let envelope = &written["dsseEnvelope"];
    let payload_type = envelope["payloadType"].as_str().unwrap();
    let statement = STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let sig = envelope["signatures"][0]["sig"].as_str().unwrap();
    assert!(openssl_verifies(
        dir.path(),
        &public,
        &pae(payload_type, &statement),
        sig
    ));
    assert!(
        !openssl_verifies(dir.path(), &public, &statement, sig),
        "the signature is over the PAE, not the bare statement"
    );
    let statement: serde_json::Value = serde_json::from_slice(&statement).unwrap();
    assert_eq!(statement["subject"][0]["digest"]["sha256"], &DIGEST[7..]);
}
