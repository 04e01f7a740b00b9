//! Sigstore bundles cross between Weir and sigstore-js (npm `@sigstore/verify`, `@sigstore/sign`),
//! offline and key-based: sigstore-js verifies the bundle Weir writes for a digest with the
//! public key as its only trust, and refuses it changed; Weir verifies, against its policy, the
//! bundle sigstore-js signs with a local key. sigstore-js's side is
//! `testdata/sigstore-js/interop.cjs`; `testdata/sigstore-js/setup.sh` installs the pinned
//! packages (tests/run.sh runs it), and its README says what each side checks and what not.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::*;

/// The node_modules `testdata/sigstore-js/setup.sh` installs.
fn node_modules() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/sigstore-js/node_modules");
    assert!(
        path.join("@sigstore/verify").exists(),
        "{} is missing: run host/src/trust/testdata/sigstore-js/setup.sh (tests/run.sh does)",
        path.display()
    );
    path
}

/// `node interop.cjs ARGS…` with the pinned sigstore-js.
fn sigstore_js(args: &[&OsStr]) -> Output {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/trust/testdata/sigstore-js/interop.cjs");
    Command::new("node")
        .arg(script)
        .args(args)
        .env("NODE_PATH", node_modules())
        .output()
        .unwrap_or_else(|e| panic!("node (Node.js 20+, as the README says): {e}"))
}

/// sigstore-js's verdict on the bundle `bytes` under `public_pem` alone: the statement's
/// payload type and subjects, or its error.
fn js_verifies(dir: &Path, bytes: &[u8], public_pem: &str) -> Result<serde_json::Value, String> {
    let (bundle, key) = (dir.join("bundle.json"), dir.join("key.pub"));
    std::fs::write(&bundle, bytes).unwrap();
    std::fs::write(&key, public_pem).unwrap();
    let out = sigstore_js(&["verify".as_ref(), bundle.as_ref(), key.as_ref()]);
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn sigstore_js_verifies_the_bundle_weir_writes_offline_and_refuses_it_changed_or_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let platform = key(31);
    let bytes = bundle_of(&platform, A, &[("team", "payments")]);

    let seen = js_verifies(dir.path(), &bytes, &platform.public_pem()).unwrap();
    assert_eq!(seen["payloadType"], IN_TOTO_PAYLOAD_TYPE);
    assert_eq!(seen["subjects"][0]["digest"]["sha256"], &A[7..]);
    assert_eq!(seen["subjects"][0]["annotations"]["team"], "payments");

    // One byte of the statement flipped (its digest now names B's first character): the
    // signature no longer verifies.
    let mut json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let mut statement = STANDARD
        .decode(json["dsseEnvelope"]["payload"].as_str().unwrap())
        .unwrap();
    let at = statement
        .windows(A.len() - 7)
        .position(|w| w == &A.as_bytes()[7..])
        .unwrap();
    statement[at] = b'b';
    json["dsseEnvelope"]["payload"] = STANDARD.encode(&statement).into();
    let error = js_verifies(
        dir.path(),
        json.to_string().as_bytes(),
        &platform.public_pem(),
    )
    .unwrap_err();
    assert!(error.starts_with("SIGNATURE_ERROR"), "{error}");

    // Under another key, the bundle's hint names no key sigstore-js was given.
    let error = js_verifies(dir.path(), &bytes, &key(32).public_pem()).unwrap_err();
    assert!(
        error.starts_with("PUBLIC_KEY_ERROR: key not found"),
        "{error}"
    );
}

#[test]
fn weir_verifies_a_bundle_sigstore_js_signs_with_a_local_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = sigstore_js(&["sign".as_ref(), A.as_ref(), dir.path().as_ref()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(dir.path().join("bundle.json")).unwrap();
    let public_pem = std::fs::read_to_string(dir.path().join("key.pub")).unwrap();

    let signed = found(&bytes);
    assert_eq!(signed.len(), 1);
    assert_eq!(signed[0].format(), "bundle");
    assert_eq!(signed[0].digests(), Ok(vec![A.to_owned()]));
    let policy = all_of(&[entry("sigstore-js", &public_pem, "team: payments")]);
    assert_eq!(
        verify(&policy, A, &signed),
        Verdict::Verified {
            keys: vec!["sigstore-js".into()]
        }
    );
    // For another digest, or under another key: refused.
    let message = refusal(verify(&policy, B, &signed));
    assert!(message.contains("another artifact"), "{message}");
    let stranger = all_of(&[entry("platform", &key(1).public_pem(), "")]);
    let message = refusal(verify(&stranger, A, &signed));
    assert!(
        message.contains("no key of the policy verifies it"),
        "{message}"
    );
}
