use std::collections::BTreeMap;

use super::*;
use crate::trust::simple_signing::Payload;
use crate::trust::{Policy, Verdict, verify};

/// The same bundles written and read by sigstore-js.
#[path = "sigstore_js_tests.rs"]
mod sigstore_js;

const A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn key(n: u8) -> PrivateKey {
    PrivateKey::from_bytes(&[n; 32]).unwrap()
}

/// A policy entry for `public_pem`, with required annotations.
fn entry(name: &str, public_pem: &str, annotations: &str) -> String {
    let pem: String = public_pem.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "  - kind: pubKey\n    name: {name}\n    annotations: {{{annotations}}}\n    key: |\n{pem}"
    )
}

fn all_of(entries: &[String]) -> Policy {
    Policy::parse(&format!("apiVersion: v1\nallOf:\n{}", entries.concat())).unwrap()
}

fn any_of(entries: &[String], minimum: usize) -> Policy {
    let indented: String = entries
        .concat()
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect();
    Policy::parse(&format!(
        "apiVersion: v1\nanyOf:\n  minimumMatches: {minimum}\n  signatures:\n{indented}"
    ))
    .unwrap()
}

fn bundle_of(k: &PrivateKey, digest: &str, annotations: &[(&str, &str)]) -> Vec<u8> {
    let annotations: BTreeMap<String, String> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    sign(k, digest, &annotations)
}

fn found(bytes: &[u8]) -> Vec<Found> {
    read("registry.example/weir/blog@sha256:0001", bytes)
}

fn tag_signature(k: &PrivateKey, digest: &str) -> Found {
    let payload = Payload::new("registry.example/weir/blog", digest, &BTreeMap::new()).to_bytes();
    Found {
        source: "tag".into(),
        envelope: Envelope::SimpleSigning,
        signature: k.sign(&payload),
        payload,
    }
}

fn refusal(verdict: Verdict) -> String {
    match verdict {
        Verdict::Refused { reason, message } => {
            assert_eq!(reason, "SignatureUntrusted", "{message}");
            message
        }
        Verdict::Verified { keys } => panic!("verified by {keys:?}"),
    }
}

#[test]
fn pae_is_the_dsse_specification_s_encoding() {
    // The DSSE protocol's own example.
    assert_eq!(
        pae("http://example.com/HelloWorld", b"hello world"),
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    );
    // Lengths count bytes, not characters, and an empty payload is encoded too.
    assert_eq!(pae("t/é", b""), "DSSEv1 4 t/é 0 ".as_bytes());
}

#[test]
fn a_bundle_signed_by_the_policy_s_key_over_this_digest_verifies_with_its_subject_s_annotations() {
    let platform = key(1);
    let policy = all_of(&[entry("platform", &platform.public_pem(), "team: blog")]);
    let bytes = bundle_of(&platform, A, &[("team", "blog")]);
    let found = found(&bytes);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].format(), "bundle");
    assert_eq!(found[0].digests(), Ok(vec![A.to_owned()]));
    assert_eq!(
        verify(&policy, A, &found),
        Verdict::Verified {
            keys: vec!["platform".into()]
        }
    );
    // The signature is over the PAE, not the statement's bytes.
    let public = crate::trust::PublicKey::from_pem(None, &platform.public_pem()).unwrap();
    assert!(public.verifies(&found[0].signed(), &found[0].signature));
    assert!(!public.verifies(&found[0].payload, &found[0].signature));

    // Without the annotation the policy requires: refused, and said so.
    let bare = bundle_of(&platform, A, &[]);
    let message = refusal(verify(&policy, A, &read("r", &bare)));
    assert!(message.contains("without the annotations"), "{message}");
}

#[test]
fn a_bundle_whose_statement_was_changed_is_refused() {
    let platform = key(1);
    let policy = all_of(&[entry("platform", &platform.public_pem(), "")]);
    let bytes = bundle_of(&platform, A, &[("team", "search")]);
    let mut json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let payload = json["dsseEnvelope"]["payload"].as_str().unwrap();
    let statement = String::from_utf8(STANDARD.decode(payload).unwrap()).unwrap();
    let changed = statement.replace("search", "payments");
    assert_ne!(statement, changed);
    json["dsseEnvelope"]["payload"] = STANDARD.encode(changed).into();
    let message = refusal(verify(&policy, A, &found(json.to_string().as_bytes())));
    assert!(message.contains("changed payload"), "{message}");
    assert!(
        message.starts_with(&format!("{A} does not meet")),
        "{message}"
    );
    assert!(message.contains("bundle registry.example"), "{message}");
}

#[test]
fn a_bundle_naming_another_digest_is_refused_as_another_artifact_s_signature() {
    let platform = key(1);
    let policy = all_of(&[entry("platform", &platform.public_pem(), "")]);
    let of_b = found(&bundle_of(&platform, B, &[]));
    assert!(verify(&policy, B, &of_b).verified());
    let message = refusal(verify(&policy, A, &of_b));
    assert!(
        message.contains(&format!(
            "vouches for {B}, not {A} (a signature of another artifact)"
        )),
        "{message}"
    );
}

#[test]
fn a_bundle_signed_by_another_key_is_refused() {
    let policy = all_of(&[entry("platform", &key(1).public_pem(), "")]);
    let message = refusal(verify(&policy, A, &found(&bundle_of(&key(2), A, &[]))));
    assert!(
        message.contains("no key of the policy verifies it"),
        "{message}"
    );
}

#[test]
fn a_message_signature_an_attestation_and_garbage_vouch_for_no_artifact() {
    let platform = key(1);
    let policy = all_of(&[entry("platform", &platform.public_pem(), "")]);
    // What `cosign sign-blob --bundle` writes: a signature over a digest of bytes.
    let blob = serde_json::json!({
        "mediaType": MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": ""}},
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": STANDARD.encode([0xaa; 32])},
            "signature": platform.sign(&[0xaa; 32]),
        },
    });
    let message = refusal(verify(&policy, A, &found(blob.to_string().as_bytes())));
    assert!(message.contains("message signature"), "{message}");

    // The key's attestation (another predicate) over this very digest is not a signature.
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": &A[7..]}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {},
    })
    .to_string();
    let attestation = serde_json::json!({
        "mediaType": MEDIA_TYPE,
        "dsseEnvelope": {
            "payload": STANDARD.encode(&statement),
            "payloadType": IN_TOTO_PAYLOAD_TYPE,
            "signatures": [{"sig": platform.sign(&pae(IN_TOTO_PAYLOAD_TYPE, statement.as_bytes()))}],
        },
    });
    let message = refusal(verify(
        &policy,
        A,
        &found(attestation.to_string().as_bytes()),
    ));
    assert!(message.contains("an attestation"), "{message}");

    // A signature statement whose subject names no sha256 digest.
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha512": "aa"}}],
        "predicateType": SIGN_PREDICATE,
        "predicate": {},
    })
    .to_string();
    let unnamed = serde_json::json!({
        "mediaType": MEDIA_TYPE,
        "dsseEnvelope": {
            "payload": STANDARD.encode(&statement),
            "payloadType": IN_TOTO_PAYLOAD_TYPE,
            "signatures": [{"sig": platform.sign(&pae(IN_TOTO_PAYLOAD_TYPE, statement.as_bytes()))}],
        },
    });
    let unnamed = found(unnamed.to_string().as_bytes());
    assert_eq!(
        unnamed[0].digests(),
        Err("its statement names no sha256 digest".into())
    );
    let message = refusal(verify(&policy, A, &unnamed));
    assert!(message.contains("names no sha256 digest"), "{message}");

    let message = refusal(verify(&policy, A, &found(b"not json")));
    assert!(message.contains("not a Sigstore bundle"), "{message}");
}

#[test]
fn a_bundle_and_a_tag_signature_are_each_found_and_one_key_counts_once() {
    let (platform, payments) = (key(1), key(2));
    let policy = any_of(
        &[
            entry("platform", &platform.public_pem(), ""),
            entry("payments", &payments.public_pem(), ""),
        ],
        2,
    );
    // The same key in both formats: one match of two required.
    let mut same = found(&bundle_of(&platform, A, &[]));
    same.push(tag_signature(&platform, A));
    let message = refusal(verify(&policy, A, &same));
    assert!(
        message.contains("1 of its keys matched, 2 required"),
        "{message}"
    );
    assert!(message.contains("bundle registry.example"), "{message}");
    assert!(
        message.contains("tag signature tag: key platform signed it"),
        "{message}"
    );
    // A bundle by one key and a tag signature by the other: both count.
    let mut both = found(&bundle_of(&payments, A, &[]));
    both.push(tag_signature(&platform, A));
    assert_eq!(
        verify(&policy, A, &both),
        Verdict::Verified {
            keys: vec!["platform".into(), "payments".into()]
        }
    );
}

/// A bundle made by another implementation (PyPI `cryptography`, `testdata/make_bundle.py`).
#[test]
fn a_bundle_made_by_another_implementation_verifies() {
    let vector: serde_json::Value =
        serde_json::from_str(include_str!("testdata/cryptography-bundle.json")).unwrap();
    let text = |k: &str| vector[k].as_str().unwrap().to_owned();
    let policy = all_of(&[entry("python", &text("public_key"), "team: payments")]);
    let bundle = serde_json::to_vec(&vector["bundle"]).unwrap();
    let digest = text("digest");
    assert_eq!(
        verify(&policy, &digest, &found(&bundle)),
        Verdict::Verified {
            keys: vec!["python".into()]
        }
    );
    let message = refusal(verify(&policy, A, &found(&bundle)));
    assert!(message.contains("another artifact"), "{message}");
}
