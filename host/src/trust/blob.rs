//! Detached signatures of a file, as `cosign sign-blob --key` writes them: `FILE.sig` beside
//! `FILE`, held against the verification policy.
//!
//! A signature is ECDSA P-256 over the SHA-256 of the file's bytes, ASN.1 DER, base64-encoded:
//! what `cosign sign-blob --key KEY --output-signature FILE.sig FILE` and `weir sign --key KEY
//! FILE` write and `cosign verify-blob --key PUB --signature FILE.sig FILE` reads. `FILE.sig`
//! may hold several signatures, one a line (`weir sign --append`), so that an `allOf` of two
//! keys can be met. There is no payload: nothing but the bytes is signed, so a policy entry that
//! requires annotations is never met by a detached signature, and the refusal says so.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::keys::{PrivateKey, well_formed};
use super::policy::{Policy, Requirement};
use super::verify::{Verdict, hold};

/// One signature found beside a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detached {
    /// Where it was found, for people (`blog.wasm.sig`, `blog.wasm.sig line 2`).
    pub source: String,
    /// The signature (base64).
    pub signature: String,
}

/// Where the signatures of `file` are: `FILE.sig`.
pub fn signature_path(file: &Path) -> PathBuf {
    let mut path = file.as_os_str().to_owned();
    path.push(".sig");
    PathBuf::from(path)
}

/// A signature of `bytes` by `key`, as a line of `FILE.sig` holds it.
pub fn sign(key: &PrivateKey, bytes: &[u8]) -> String {
    key.sign(bytes)
}

/// The signatures `text` (the content of `FILE.sig`, named `source`) holds, one a line.
pub fn parse(source: &str, text: &str) -> Vec<Detached> {
    let lines: Vec<&str> = text.split_whitespace().collect();
    let several = lines.len() > 1;
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| Detached {
            source: if several {
                format!("{source} line {}", i + 1)
            } else {
                source.to_owned()
            },
            signature: line.to_owned(),
        })
        .collect()
}

/// The signatures beside `file` (none when `FILE.sig` does not exist).
pub fn read(file: &Path) -> std::io::Result<Vec<Detached>> {
    let path = signature_path(file);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let source = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(parse(&source, &text))
}

/// The digest the messages name a file's bytes by (`sha256:…`).
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Holds `signatures`, found beside the file `name` whose content is `bytes`, against `policy`:
/// the same `allOf` / `anyOf` / `minimumMatches` rules as an artifact's signatures.
pub fn verify(policy: &Policy, name: &str, bytes: &[u8], signatures: &[Detached]) -> Verdict {
    let what = format!("{name} ({})", digest(bytes));
    if signatures.is_empty() {
        return Verdict::Refused {
            reason: "Unsigned",
            message: format!(
                "{what} has no signature ({} beside it)",
                signature_path(Path::new(name)).display()
            ),
        };
    }
    let signed_by = |entry: &Requirement| {
        signatures
            .iter()
            .any(|s| entry.key.verifies(bytes, &s.signature))
    };
    let counts = |entry: &Requirement| entry.annotations.is_empty() && signed_by(entry);
    let mut why = match hold(policy, counts, unmet) {
        Ok(keys) => return Verdict::Verified { keys },
        Err(why) => why,
    };
    if policy.any_of.iter().filter(|e| counts(e)).count() < policy.minimum_matches {
        for entry in policy.any_of.iter().filter(|e| !e.annotations.is_empty()) {
            why.push(format!("anyOf key {} {}", entry.key.name, unmet(entry)));
        }
    }
    for s in signatures {
        let keys = policy.all_of.iter().chain(&policy.any_of);
        let mut verified_by = keys.filter(|e| e.key.verifies(bytes, &s.signature));
        let fault = match verified_by.next() {
            _ if !well_formed(&s.signature) => {
                "not a signature (base64 of an ECDSA P-256 signature)".to_owned()
            }
            Some(e) if !e.annotations.is_empty() => format!(
                "key {} signed it, but its entry requires annotations, which a detached \
                 signature cannot carry",
                e.key.name
            ),
            Some(e) => format!("key {} signed it", e.key.name),
            None => "no key of the policy verifies it (another key, or the file changed since \
                     it was signed)"
                .to_owned(),
        };
        why.push(format!("signature {}: {fault}", s.source));
    }
    Verdict::Refused {
        reason: "SignatureUntrusted",
        message: format!("{what} does not meet the policy: {}", why.join("; ")),
    }
}

fn unmet(entry: &Requirement) -> String {
    if entry.annotations.is_empty() {
        "signed no signature of it".to_owned()
    } else {
        format!(
            "requires the annotations {:?}, which a detached signature cannot carry (it signs \
             the file's bytes, no payload)",
            entry.annotations
        )
    }
}

#[cfg(test)]
#[path = "blob_tests.rs"]
mod tests;
