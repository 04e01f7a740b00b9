use std::collections::BTreeMap;

use base64::Engine as _;

use super::*;
use crate::trust::found::Envelope;
use crate::trust::keys::PrivateKey;
use crate::trust::simple_signing::Payload;

const A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn key(n: u8) -> PrivateKey {
    PrivateKey::from_bytes(&[n; 32]).unwrap()
}

fn entry(name: &str, k: &PrivateKey, annotations: &[(&str, &str)]) -> String {
    let pem: String = k
        .public_pem()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let annotations: Vec<String> = annotations
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!(
        "  - kind: pubKey\n    name: {name}\n    annotations: {{{}}}\n    key: |\n{pem}",
        annotations.join(", ")
    )
}

fn policy(all_of: &[String], any_of: &[String], minimum: usize) -> Policy {
    let mut text = String::from("apiVersion: v1\n");
    if !all_of.is_empty() {
        text += &format!("allOf:\n{}", all_of.concat());
    }
    if !any_of.is_empty() {
        let indented: String = any_of
            .concat()
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect();
        text += &format!("anyOf:\n  minimumMatches: {minimum}\n  signatures:\n{indented}");
    }
    Policy::parse(&text).unwrap()
}

fn signed(k: &PrivateKey, digest: &str, annotations: &[(&str, &str)]) -> Found {
    let annotations: BTreeMap<String, String> = annotations
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let payload = Payload::new("registry.example/weir/blog", digest, &annotations).to_bytes();
    Found {
        source: "test".into(),
        envelope: Envelope::SimpleSigning,
        signature: k.sign(&payload),
        payload,
    }
}

fn refusal(verdict: Verdict) -> (&'static str, String) {
    match verdict {
        Verdict::Refused { reason, message } => (reason, message),
        Verdict::Verified { keys } => panic!("verified by {keys:?}"),
    }
}

#[test]
fn a_signature_by_the_policy_s_key_over_this_digest_verifies_and_names_the_key() {
    let platform = key(1);
    let policy = policy(&[entry("platform", &platform, &[])], &[], 0);
    let verdict = verify(&policy, A, &[signed(&platform, A, &[])]);
    assert_eq!(
        verdict,
        Verdict::Verified {
            keys: vec!["platform".into()]
        }
    );
}

#[test]
fn an_unsigned_artifact_is_refused_as_unsigned() {
    let policy = policy(&[entry("platform", &key(1), &[])], &[], 0);
    let (reason, message) = refusal(verify(&policy, A, &[]));
    assert_eq!(reason, "Unsigned");
    assert!(message.contains(A), "{message}");
}

#[test]
fn a_signature_by_an_unknown_key_is_refused_and_says_no_key_verifies_it() {
    let policy = policy(&[entry("platform", &key(1), &[])], &[], 0);
    let (reason, message) = refusal(verify(&policy, A, &[signed(&key(2), A, &[])]));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(
        message.contains("no key of the policy verifies it"),
        "{message}"
    );
    assert!(message.contains("allOf key platform"), "{message}");
}

#[test]
fn a_tampered_payload_is_refused() {
    let platform = key(1);
    let policy = policy(&[entry("platform", &platform, &[])], &[], 0);
    let mut found = signed(&platform, A, &[("team", "search")]);
    found.payload = String::from_utf8(found.payload)
        .unwrap()
        .replace("search", "payments")
        .into_bytes();
    let (reason, message) = refusal(verify(&policy, A, &[found]));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(message.contains("changed payload"), "{message}");
}

#[test]
fn a_payload_naming_another_digest_is_refused_even_when_signed_by_the_policy_s_key() {
    let platform = key(1);
    let policy = policy(&[entry("platform", &platform, &[])], &[], 0);
    let (reason, message) = refusal(verify(&policy, A, &[signed(&platform, B, &[])]));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(
        message.contains(&format!("vouches for {B}, not {A}")),
        "{message}"
    );
}

#[test]
fn a_signature_moved_from_another_artifact_does_not_verify_this_one() {
    // B's genuine signature (payload and signature together) attached to A.
    let platform = key(1);
    let policy = policy(&[entry("platform", &platform, &[])], &[], 0);
    let of_b = signed(&platform, B, &[]);
    assert!(verify(&policy, B, std::slice::from_ref(&of_b)).verified());
    let (reason, message) = refusal(verify(&policy, A, &[of_b]));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(message.contains("another artifact"), "{message}");
}

#[test]
fn required_annotations_and_minimum_matches_are_held_as_kubewarden_holds_them() {
    let (platform, payments, search) = (key(1), key(2), key(3));
    let policy = policy(
        &[entry("platform", &platform, &[])],
        &[
            entry("payments", &payments, &[("team", "payments")]),
            entry("search", &search, &[]),
        ],
        2,
    );
    let base = signed(&platform, A, &[]);
    let both = [
        base.clone(),
        signed(&payments, A, &[("team", "payments")]),
        signed(&search, A, &[]),
    ];
    assert_eq!(
        verify(&policy, A, &both),
        Verdict::Verified {
            keys: vec!["platform".into(), "payments".into(), "search".into()]
        }
    );
    // The payments key signed without its annotation: one anyOf match of two required.
    let unannotated = [
        base.clone(),
        signed(&payments, A, &[]),
        signed(&search, A, &[]),
    ];
    let (_, message) = refusal(verify(&policy, A, &unannotated));
    assert!(
        message.contains("1 of its keys matched, 2 required"),
        "{message}"
    );
    assert!(message.contains("without the annotations"), "{message}");
    // anyOf met, allOf not.
    let (_, message) = refusal(verify(&policy, A, &both[1..]));
    assert!(
        message.contains("allOf key platform signed no signature"),
        "{message}"
    );
}

/// A signature made by another implementation (PyPI `cryptography`, `testdata/make_vector.py`).
#[test]
fn a_signature_made_by_another_implementation_verifies() {
    let vector: serde_json::Value =
        serde_json::from_str(include_str!("testdata/cryptography-vector.json")).unwrap();
    let text = |k: &str| vector[k].as_str().unwrap().to_owned();
    let pem: String = text("public_key")
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let policy = Policy::parse(&format!(
        "apiVersion: v1\nallOf:\n  - kind: pubKey\n    name: python\n    annotations: {{team: payments}}\n    key: |\n{pem}"
    ))
    .unwrap();
    let found = Found {
        source: "cryptography-vector.json".into(),
        envelope: Envelope::SimpleSigning,
        payload: base64::engine::general_purpose::STANDARD
            .decode(text("payload"))
            .unwrap(),
        signature: text("signature"),
    };
    let digest = text("digest");
    assert_eq!(
        verify(&policy, &digest, std::slice::from_ref(&found)),
        Verdict::Verified {
            keys: vec!["python".into()]
        }
    );
    assert!(!verify(&policy, A, &[found]).verified());
}
