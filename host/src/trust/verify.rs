//! A component's signatures held against the verification policy: which keys vouch for its
//! digest, and, when the policy is not met, why each signature found does not count.
//!
//! A signature counts for a policy entry when all of these hold: its payload is a cosign
//! simple-signing document (a tag signature) or cosign's signature statement (a bundle), it
//! names **this** manifest digest (a signature copied from another artifact names that one),
//! the entry's key verifies the signature over the bytes it covers (a changed payload, another
//! key), and it carries the entry's annotations ([`super::found`] says how each format does).
//! The policy holds when every `allOf` entry has a signature that counts and at least
//! `minimumMatches` `anyOf` entries do: an entry counts once however many of its signatures are
//! found, in whichever formats (a bundle and a tag signature by the same key are one match).

use std::collections::BTreeMap;

use serde_json::Value;

pub use super::found::Found;
use super::found::carries;
use super::policy::{Policy, Requirement};

/// What the policy made of an artifact's signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The policy holds; these keys' signatures counted.
    Verified {
        /// The names of the keys that verified it, in policy order.
        keys: Vec<String>,
    },
    /// The policy does not hold.
    Refused {
        /// `Unsigned` (no signature found) or `SignatureUntrusted`.
        reason: &'static str,
        /// Why: each signature's fault and each unmet part of the policy.
        message: String,
    },
}

impl Verdict {
    /// Whether it verified.
    pub fn verified(&self) -> bool {
        matches!(self, Verdict::Verified { .. })
    }
}

/// Holds `found`, the signatures of the artifact whose manifest digest is `digest`, against
/// `policy`.
pub fn verify(policy: &Policy, digest: &str, found: &[Found]) -> Verdict {
    if found.is_empty() {
        return Verdict::Refused {
            reason: "Unsigned",
            message: format!("{digest} has no signature"),
        };
    }
    // Each signature's annotations for this digest, or why it does not vouch for it.
    let parsed: Vec<Result<BTreeMap<String, Value>, String>> =
        found.iter().map(|f| f.vouches_for(digest)).collect();
    let counts = |entry: &Requirement| {
        found.iter().zip(&parsed).any(|(f, p)| {
            p.as_ref().is_ok_and(|annotations| {
                entry.key.verifies(&f.signed(), &f.signature)
                    && carries(annotations, &entry.annotations)
            })
        })
    };
    let mut why = match hold(policy, counts, unmet) {
        Ok(keys) => return Verdict::Verified { keys },
        Err(why) => why,
    };
    for (f, p) in found.iter().zip(&parsed) {
        let fault = match p {
            Err(e) => e.clone(),
            Ok(_) => {
                let keys = policy.all_of.iter().chain(&policy.any_of);
                let signed = f.signed();
                let mut verified_by = keys.filter(|e| e.key.verifies(&signed, &f.signature));
                match verified_by.next() {
                    Some(e) if !counts(e) => format!(
                        "key {} signed it without the annotations {:?}",
                        e.key.name, e.annotations
                    ),
                    Some(e) => format!("key {} signed it", e.key.name),
                    None => "no key of the policy verifies it (another key, or a changed payload)"
                        .to_owned(),
                }
            }
        };
        why.push(format!("{} {}: {fault}", f.format(), f.source));
    }
    Verdict::Refused {
        reason: "SignatureUntrusted",
        message: format!("{digest} does not meet the policy: {}", why.join("; ")),
    }
}

fn unmet(entry: &Requirement) -> String {
    if entry.annotations.is_empty() {
        "signed no signature of it".to_owned()
    } else {
        "signed no signature of it with the required annotations".to_owned()
    }
}

/// Holds the policy's rules, `counts` saying whether an entry has a signature that counts:
/// `Ok` with the names of the keys that verified (in policy order), else `Err` with each unmet
/// part of the policy (an `allOf` entry's told by `unmet`). Signatures of an artifact and of a
/// file (`super::blob`) are held alike.
pub(super) fn hold(
    policy: &Policy,
    counts: impl Fn(&Requirement) -> bool,
    unmet: impl Fn(&Requirement) -> String,
) -> Result<Vec<String>, Vec<String>> {
    let all_missing: Vec<&Requirement> = policy.all_of.iter().filter(|e| !counts(e)).collect();
    let any_matched: Vec<&Requirement> = policy.any_of.iter().filter(|e| counts(e)).collect();
    if all_missing.is_empty() && any_matched.len() >= policy.minimum_matches {
        return Ok(policy
            .all_of
            .iter()
            .chain(any_matched)
            .map(|e| e.key.name.clone())
            .collect());
    }
    let mut why: Vec<String> = Vec::new();
    for e in &all_missing {
        why.push(format!("allOf key {} {}", e.key.name, unmet(e)));
    }
    if any_matched.len() < policy.minimum_matches {
        why.push(format!(
            "anyOf: {} of its keys matched, {} required",
            any_matched.len(),
            policy.minimum_matches
        ));
    }
    Err(why)
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
