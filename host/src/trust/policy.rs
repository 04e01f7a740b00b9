//! The verification policy: which keys must have signed a plugin, in the shape Kubewarden's
//! `verification-config` has (`allOf`, `anyOf` with `minimumMatches`, `pubKey` entries with
//! required annotations), and how strictly each plugin source is held to it.
//!
//! ```yaml
//! apiVersion: v1
//! level: {cluster: enforce, directory: audit}   # enforce (default) | audit, per source;
//!                                               # the directory may be `trusted` (not checked)
//! allOf:                                        # every entry must match a signature
//!   - kind: pubKey
//!     name: platform                            # how status and logs name the key
//!     key: |
//!       -----BEGIN PUBLIC KEY-----
//!       …
//!       -----END PUBLIC KEY-----
//! anyOf:                                        # at least minimumMatches entries (default 1)
//!   minimumMatches: 1
//!   signatures:
//!     - kind: pubKey
//!       name: team-payments
//!       key: "…"
//!       annotations: {team: payments}           # the signature must carry these
//! ```
//! Only `pubKey` entries are read: keyless entries (`genericIssuer`, `githubAction`, …) need a
//! trust root fetched online, which a host that verifies offline does not do, so a policy that
//! names one is refused at start rather than half applied. `enforce` refuses what does not
//! verify; `audit` serves it and logs why it would have been refused. The plugins directory's
//! files are signed by a detached signature beside each (`crate::trust::blob`), which has no
//! payload: an entry that requires annotations is never met by one, so a directory held to a
//! policy naming only such entries serves nothing (`trusted` says it is not checked at all).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::keys::{KeyError, PublicKey};

/// Why a policy file was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read the verification policy {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a policy.
    #[error("the verification policy is not valid: {0}")]
    Invalid(String),
    /// A key does not read.
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// How strictly a source is held to the policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// What does not verify is refused; nothing unverified runs.
    #[default]
    Enforce,
    /// What does not verify is served, and why it would be refused is logged and on its status.
    Audit,
}

/// How strictly the plugins directory is held to the policy: a level, or not at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectoryLevel {
    /// A file whose signature does not verify is refused; what served before keeps serving.
    #[default]
    Enforce,
    /// A file whose signature does not verify is served, and why it would be refused is logged.
    Audit,
    /// The directory is trusted: its files are not checked (said in the log at start). Only the
    /// directory has this level: its files come from the host's own volume, where a `Plugin`
    /// names a registry.
    Trusted,
}

impl DirectoryLevel {
    /// The level its files are held to; `None` when the directory is trusted.
    pub fn checked(self) -> Option<Level> {
        match self {
            DirectoryLevel::Enforce => Some(Level::Enforce),
            DirectoryLevel::Audit => Some(Level::Audit),
            DirectoryLevel::Trusted => None,
        }
    }
}

/// The level of each plugin source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Levels {
    /// `Plugin` objects and their candidates.
    #[serde(default)]
    pub cluster: Level,
    /// The plugins directory (and its `candidates/`), each file signed by `FILE.sig`.
    #[serde(default)]
    pub directory: DirectoryLevel,
}

/// One entry as written (fields of other kinds are kept, to be refused by name).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryDoc {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// Kubewarden's free-text owner, kept for the reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnyOfDoc {
    #[serde(default = "one")]
    minimum_matches: usize,
    signatures: Vec<EntryDoc>,
}

fn one() -> usize {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyDoc {
    api_version: String,
    #[serde(default)]
    level: Levels,
    #[serde(default)]
    all_of: Vec<EntryDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    any_of: Option<AnyOfDoc>,
}

/// One key the policy trusts, and what its signature must carry.
#[derive(Clone, Debug)]
pub struct Requirement {
    /// The key.
    pub key: PublicKey,
    /// Annotations its signature must carry, with these values (a tag signature's payload
    /// `optional`, a bundle's statement subject `annotations`: where `cosign sign -a` puts them).
    pub annotations: BTreeMap<String, String>,
}

/// A verification policy, its keys read.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Each source's level.
    pub level: Levels,
    /// Every one must match.
    pub all_of: Vec<Requirement>,
    /// At least `minimum_matches` of `any_of` must match.
    pub any_of: Vec<Requirement>,
    /// See `any_of`.
    pub minimum_matches: usize,
    fingerprint: String,
}

impl Policy {
    /// Reads the policy file.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_owned(),
            source,
        })?;
        Policy::parse(&text)
    }

    /// Reads a policy from YAML (or JSON).
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let doc: PolicyDoc =
            crate::yaml::from_str(text).map_err(|e| PolicyError::Invalid(e.to_string()))?;
        if doc.api_version != "v1" {
            return Err(PolicyError::Invalid(format!(
                "apiVersion {:?}: only v1 is known",
                doc.api_version
            )));
        }
        let any_of = doc.any_of.clone();
        let all_of = entries(&doc.all_of)?;
        let (any_of, minimum_matches) = match &any_of {
            Some(any) => (entries(&any.signatures)?, any.minimum_matches),
            None => (Vec::new(), 0),
        };
        if all_of.is_empty() && any_of.is_empty() {
            return Err(PolicyError::Invalid(
                "it names no key: give allOf or anyOf".into(),
            ));
        }
        if minimum_matches > any_of.len() {
            return Err(PolicyError::Invalid(format!(
                "anyOf.minimumMatches is {minimum_matches} but anyOf lists {} keys",
                any_of.len()
            )));
        }
        // What the verdict depends on (not the levels): the cache of verdicts is keyed by it.
        let level = doc.level;
        let mut what = doc;
        what.level = Levels::default();
        let canonical = serde_json::to_vec(&what).unwrap_or_default();
        Ok(Policy {
            level,
            all_of,
            any_of,
            minimum_matches,
            fingerprint: hex::encode(Sha256::digest(canonical))[..16].to_owned(),
        })
    }

    /// Any one of `keys`, without required annotations, enforced (`weir verify --key`).
    pub fn any_of_keys(keys: Vec<PublicKey>) -> Policy {
        let names: Vec<String> = keys.iter().map(PublicKey::fingerprint).collect();
        Policy {
            level: Levels::default(),
            all_of: Vec::new(),
            minimum_matches: usize::from(!keys.is_empty()),
            any_of: keys
                .into_iter()
                .map(|key| Requirement {
                    key,
                    annotations: BTreeMap::new(),
                })
                .collect(),
            fingerprint: hex::encode(Sha256::digest(names.join(",")))[..16].to_owned(),
        }
    }

    /// Identifies what a verdict depends on (keys, annotations, matches; not the levels).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

fn entries(docs: &[EntryDoc]) -> Result<Vec<Requirement>, PolicyError> {
    docs.iter()
        .map(|doc| {
            if doc.kind != "pubKey" {
                return Err(PolicyError::Invalid(format!(
                    "kind {:?}: only pubKey entries are verified (keyless kinds need a trust \
                     root fetched online; Weir verifies offline)",
                    doc.kind
                )));
            }
            if let Some(field) = doc.other.keys().next() {
                return Err(PolicyError::Invalid(format!(
                    "a pubKey entry has no field {field:?} (kind, name, owner, key, annotations)"
                )));
            }
            let key = doc
                .key
                .as_deref()
                .ok_or_else(|| PolicyError::Invalid("a pubKey entry without a key".to_owned()))?;
            Ok(Requirement {
                key: PublicKey::from_pem(doc.name.as_deref(), key)?,
                annotations: doc.annotations.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::keys::PrivateKey;

    fn indented(pem: &str) -> String {
        pem.lines().map(|l| format!("      {l}\n")).collect()
    }

    #[test]
    fn a_kubewarden_shaped_policy_reads_with_its_levels_outside_its_fingerprint() {
        let a = PrivateKey::from_bytes(&[1; 32]).unwrap().public_pem();
        let b = PrivateKey::from_bytes(&[2; 32]).unwrap().public_pem();
        let text = |level: &str| {
            format!(
                "apiVersion: v1\nlevel: {{cluster: {level}}}\nallOf:\n  - kind: pubKey\n    name: platform\n    key: |\n{}anyOf:\n  minimumMatches: 1\n  signatures:\n  - kind: pubKey\n    owner: payments team\n    annotations: {{team: payments}}\n    key: |\n{}",
                indented(&a),
                indented(&b)
            )
        };
        let enforce = Policy::parse(&text("enforce")).unwrap();
        let audit = Policy::parse(&text("audit")).unwrap();
        assert_eq!(enforce.level.cluster, Level::Enforce);
        assert_eq!(audit.level.cluster, Level::Audit);
        assert_eq!(
            audit.level.directory,
            DirectoryLevel::Enforce,
            "enforce by default"
        );
        assert_eq!(enforce.fingerprint(), audit.fingerprint());
        assert_eq!(enforce.all_of[0].key.name, "platform");
        assert_eq!(enforce.any_of[0].annotations["team"], "payments");
        assert_eq!(enforce.minimum_matches, 1);
        let trusted = text("enforce").replace("{cluster: enforce}", "{directory: trusted}");
        let trusted = Policy::parse(&trusted).unwrap();
        assert_eq!(trusted.level.directory.checked(), None);
        assert_eq!(trusted.fingerprint(), enforce.fingerprint());
        let err = Policy::parse(&text("trusted")).unwrap_err().to_string();
        assert!(
            err.contains("trusted"),
            "only the directory may be trusted: {err}"
        );
        let other = Policy::parse(&text("enforce").replace("payments}", "search}")).unwrap();
        assert_ne!(other.fingerprint(), enforce.fingerprint());
    }

    #[test]
    fn keyless_entries_empty_policies_and_impossible_matches_are_refused() {
        let keyless = "apiVersion: v1\nallOf:\n  - kind: genericIssuer\n    issuer: https://token.actions.githubusercontent.com\n";
        let err = Policy::parse(keyless).unwrap_err().to_string();
        assert!(
            err.contains("genericIssuer") && err.contains("offline"),
            "{err}"
        );
        let typo = "apiVersion: v1\nallOf:\n  - kind: pubKey\n    key: x\n    annotation: {a: b}\n";
        let err = Policy::parse(typo).unwrap_err().to_string();
        assert!(err.contains("annotation"), "{err}");
        let empty = Policy::parse("apiVersion: v1\n").unwrap_err().to_string();
        assert!(empty.contains("no key"), "{empty}");
        let key = indented(&PrivateKey::from_bytes(&[3; 32]).unwrap().public_pem());
        let two = format!(
            "apiVersion: v1\nanyOf:\n  minimumMatches: 2\n  signatures:\n  - kind: pubKey\n    key: |\n{key}"
        );
        let err = Policy::parse(&two).unwrap_err().to_string();
        assert!(err.contains("minimumMatches is 2"), "{err}");
    }
}
