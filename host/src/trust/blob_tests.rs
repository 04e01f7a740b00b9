use base64::Engine as _;

use super::*;
use crate::trust::keys::PrivateKey;

const FILE: &[u8] = b"\0asm\r\0\x01\0 the blog plugin";

fn key(n: u8) -> PrivateKey {
    PrivateKey::from_bytes(&[n; 32]).unwrap()
}

/// A `pubKey` entry for `k`, requiring `annotations` (`{a: b}`) when given.
fn entry(name: &str, pem: &str, annotations: Option<&str>) -> String {
    let pem: String = pem.lines().map(|l| format!("      {l}\n")).collect();
    let annotations = annotations.map_or_else(String::new, |a| format!("    annotations: {a}\n"));
    format!("  - kind: pubKey\n    name: {name}\n{annotations}    key: |\n{pem}")
}

fn all_of(entries: &[String]) -> Policy {
    Policy::parse(&format!("apiVersion: v1\nallOf:\n{}", entries.concat())).unwrap()
}

fn sig(signature: String) -> Vec<Detached> {
    parse("blog.wasm.sig", &signature)
}

fn refusal(verdict: Verdict) -> (&'static str, String) {
    match verdict {
        Verdict::Refused { reason, message } => (reason, message),
        Verdict::Verified { keys } => panic!("verified by {keys:?}"),
    }
}

#[test]
fn a_file_signed_by_the_policy_s_key_verifies_and_names_the_key() {
    let platform = key(1);
    let policy = all_of(&[entry("platform", &platform.public_pem(), None)]);
    let signatures = sig(sign(&platform, FILE));
    assert_eq!(
        verify(&policy, "blog.wasm", FILE, &signatures),
        Verdict::Verified {
            keys: vec!["platform".into()]
        }
    );
}

#[test]
fn a_file_changed_after_it_was_signed_is_refused() {
    let platform = key(1);
    let policy = all_of(&[entry("platform", &platform.public_pem(), None)]);
    let signatures = sig(sign(&platform, FILE));
    let mut tampered = FILE.to_vec();
    tampered.push(0);
    let (reason, message) = refusal(verify(&policy, "blog.wasm", &tampered, &signatures));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(
        message.contains("signature blog.wasm.sig: no key of the policy verifies it"),
        "{message}"
    );
    assert!(message.contains(&digest(&tampered)), "{message}");
}

#[test]
fn a_file_signed_by_another_key_is_refused_naming_the_key_that_did_not_sign() {
    let policy = all_of(&[entry("platform", &key(1).public_pem(), None)]);
    let (reason, message) = refusal(verify(
        &policy,
        "blog.wasm",
        FILE,
        &sig(sign(&key(2), FILE)),
    ));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(
        message.contains("allOf key platform signed no signature of it"),
        "{message}"
    );
    assert!(
        message.contains("no key of the policy verifies it"),
        "{message}"
    );
}

#[test]
fn a_file_without_a_signature_is_refused_as_unsigned_naming_where_it_was_looked_for() {
    let policy = all_of(&[entry("platform", &key(1).public_pem(), None)]);
    let (reason, message) = refusal(verify(&policy, "blog.wasm", FILE, &[]));
    assert_eq!(reason, "Unsigned");
    assert!(message.contains("blog.wasm.sig"), "{message}");
}

#[test]
fn a_signature_that_is_not_one_is_refused_as_such() {
    let policy = all_of(&[entry("platform", &key(1).public_pem(), None)]);
    let (_, message) = refusal(verify(
        &policy,
        "blog.wasm",
        FILE,
        &sig("bm90IGEgc2lnbmF0dXJl".into()),
    ));
    assert!(message.contains("not a signature"), "{message}");
}

#[test]
fn an_entry_that_requires_annotations_is_never_met_by_a_detached_signature_and_the_refusal_says_so()
{
    let payments = key(2);
    let policy = all_of(&[entry(
        "payments",
        &payments.public_pem(),
        Some("{team: payments}"),
    )]);
    let (reason, message) = refusal(verify(
        &policy,
        "blog.wasm",
        FILE,
        &sig(sign(&payments, FILE)),
    ));
    assert_eq!(reason, "SignatureUntrusted");
    assert!(
        message.contains("allOf key payments requires the annotations")
            && message.contains("cannot carry"),
        "{message}"
    );
    assert!(message.contains("key payments signed it, but"), "{message}");
    let any_of = Policy::parse(&format!(
        "apiVersion: v1\nanyOf:\n  signatures:\n{}",
        entry("payments", &payments.public_pem(), Some("{team: payments}"))
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect::<String>()
    ))
    .unwrap();
    let (_, message) = refusal(verify(
        &any_of,
        "blog.wasm",
        FILE,
        &sig(sign(&payments, FILE)),
    ));
    assert!(
        message.contains("anyOf key payments requires the annotations"),
        "{message}"
    );
}

#[test]
fn an_all_of_of_two_keys_is_met_by_two_lines_of_the_signature_file_and_not_by_one() {
    let (platform, payments) = (key(1), key(2));
    let policy = all_of(&[
        entry("platform", &platform.public_pem(), None),
        entry("payments", &payments.public_pem(), None),
    ]);
    let one = sig(sign(&platform, FILE));
    let (_, message) = refusal(verify(&policy, "blog.wasm", FILE, &one));
    assert!(
        message.contains("allOf key payments signed no signature"),
        "{message}"
    );
    let two = sig(format!(
        "{}\n{}\n",
        sign(&platform, FILE),
        sign(&payments, FILE)
    ));
    assert_eq!(two[1].source, "blog.wasm.sig line 2");
    assert_eq!(
        verify(&policy, "blog.wasm", FILE, &two),
        Verdict::Verified {
            keys: vec!["platform".into(), "payments".into()]
        }
    );
}

#[test]
fn the_signatures_are_read_from_beside_the_file_and_a_missing_one_is_none() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("blog.wasm");
    assert_eq!(signature_path(&file), tmp.path().join("blog.wasm.sig"));
    std::fs::write(&file, FILE).unwrap();
    assert_eq!(read(&file).unwrap(), []);
    let signature = sign(&key(1), FILE);
    // cosign writes the signature without a line end.
    std::fs::write(signature_path(&file), &signature).unwrap();
    assert_eq!(
        read(&file).unwrap(),
        [Detached {
            source: "blog.wasm.sig".into(),
            signature
        }]
    );
}

/// A signature made by another implementation (PyPI `cryptography`,
/// `testdata/make_blob_vector.py`).
#[test]
fn a_file_signature_made_by_another_implementation_verifies() {
    let vector: serde_json::Value =
        serde_json::from_str(include_str!("testdata/cryptography-blob-vector.json")).unwrap();
    let text = |k: &str| vector[k].as_str().unwrap().to_owned();
    let policy = all_of(&[entry("python", &text("public_key"), None)]);
    let blob = base64::engine::general_purpose::STANDARD
        .decode(text("blob"))
        .unwrap();
    let signatures = parse("vector.sig", &text("signature"));
    assert_eq!(
        verify(&policy, "vector", &blob, &signatures),
        Verdict::Verified {
            keys: vec!["python".into()]
        }
    );
    assert!(!verify(&policy, "vector", &blob[1..], &signatures).verified());
}
