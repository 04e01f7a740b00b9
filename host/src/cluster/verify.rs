//! `weir verify REF`: the signatures an artifact has in its registry, in either format (tag
//! signatures and Sigstore bundles, each listed with its format), what each vouches for, and
//! whether the verification policy (or any of the keys given) holds; `weir verify FILE`: the
//! same for a file and its detached signatures (`FILE.sig`, `crate::trust::blob`).

use std::fmt;
use std::path::{Path, PathBuf};

use super::oci::{Credentials, OciError, Registry, parse_reference};
use crate::trust::{Policy, PolicyError, PublicKey, Verdict, blob, verify};

/// Why `weir verify` could not say.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// Neither `--key` nor `--verification-policy` was given.
    #[error("give --key PUB.pem (any of them verifies) or --verification-policy FILE")]
    NoKey,
    /// A key file could not be read.
    #[error("cannot read the key {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A key or the policy is not valid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The registry could not be asked.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The file, or its signature file, could not be read.
    #[error("cannot read {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Arguments of `weir verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The artifact: `registry/repository:tag` or `…@sha256:…`; or a file, whose signatures
    /// are in `FILE.sig` beside it (`weir sign`).
    pub reference: String,
    /// A public key (PEM); any one of them verifying is enough. Repeatable.
    #[arg(long = "key", value_name = "PUB.pem")]
    pub keys: Vec<PathBuf>,
    /// Hold the signatures to this verification policy instead (as `weir run` does).
    #[arg(long, value_name = "FILE", conflicts_with = "keys")]
    pub verification_policy: Option<PathBuf>,
    /// User name for the registry.
    #[arg(long, env = "WEIR_REGISTRY_USERNAME")]
    pub username: Option<String>,
    /// Password for the registry.
    #[arg(long, env = "WEIR_REGISTRY_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
}

/// What `weir verify` found.
#[derive(Debug)]
pub struct Report {
    /// The reference asked about.
    pub reference: String,
    /// The manifest digest it names (a file's: the digest of its bytes).
    pub digest: String,
    /// Each signature, and which keys of the policy verify it.
    pub signatures: Vec<Checked>,
    /// The policy's verdict.
    pub verdict: Verdict,
}

/// One signature found, as `weir verify` tells it.
#[derive(Debug)]
pub struct Checked {
    /// Its format: `tag signature`, `bundle`, or a file's `signature`.
    pub format: &'static str,
    /// Where it was found.
    pub source: String,
    /// What its payload vouches for (or why it does not read); `None` for a file's detached
    /// signature, which signs the file's bytes.
    pub vouches: Option<String>,
    /// The keys of the policy that verify it.
    pub keys: Vec<String>,
}

impl VerifyArgs {
    /// Reads the keys or the policy, then the artifact's (or the file's) signatures, and holds
    /// them to it.
    pub fn execute(&self) -> Result<Report, VerifyError> {
        let policy = self.policy()?;
        if Path::new(&self.reference).is_file() {
            return file(&policy, Path::new(&self.reference));
        }
        let reference = parse_reference(&self.reference)?;
        let credentials = match &self.username {
            Some(username) => Credentials::Basic {
                username: username.clone(),
                password: self.password.clone().unwrap_or_default(),
            },
            None => Credentials::Anonymous,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(VerifyError::Runtime)?;
        let registry = Registry::new(&reference, &credentials);
        let (digest, found) = runtime.block_on(async {
            let digest = registry.resolve(&reference).await?;
            let found = registry.signatures(&reference, &digest).await?;
            Ok::<_, OciError>((digest, found))
        })?;
        let verdict = verify(&policy, &digest, &found);
        let signatures = found
            .iter()
            .map(|f| Checked {
                format: f.format(),
                source: f.source.clone(),
                vouches: Some(
                    f.digests()
                        .map_or_else(|e| e, |d| format!("vouches for {}", d.join(", "))),
                ),
                keys: verified_by(&policy, &f.signed(), &f.signature),
            })
            .collect();
        Ok(Report {
            reference: reference.whole(),
            digest,
            signatures,
            verdict,
        })
    }

    /// The policy given, or any one of the keys given.
    fn policy(&self) -> Result<Policy, VerifyError> {
        Ok(match &self.verification_policy {
            Some(path) => Policy::load(path)?,
            None if self.keys.is_empty() => return Err(VerifyError::NoKey),
            None => {
                let mut keys = Vec::new();
                for path in &self.keys {
                    let pem =
                        std::fs::read_to_string(path).map_err(|source| VerifyError::Read {
                            path: path.clone(),
                            source,
                        })?;
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    keys.push(
                        PublicKey::from_pem(name.as_deref(), &pem).map_err(PolicyError::Key)?,
                    );
                }
                Policy::any_of_keys(keys)
            }
        })
    }
}

/// The names of the keys of `policy` that verify `signature` over `message`.
fn verified_by(policy: &Policy, message: &[u8], signature: &str) -> Vec<String> {
    let keys = policy.all_of.iter().chain(&policy.any_of);
    keys.filter(|r| r.key.verifies(message, signature))
        .map(|r| r.key.name.clone())
        .collect()
}

/// `weir verify FILE`: the file's detached signatures held to `policy`.
fn file(policy: &Policy, path: &Path) -> Result<Report, VerifyError> {
    let read_err = |source| VerifyError::File {
        path: path.to_owned(),
        source,
    };
    let bytes = std::fs::read(path).map_err(read_err)?;
    let found = blob::read(path).map_err(|source| VerifyError::File {
        path: blob::signature_path(path),
        source,
    })?;
    let verdict = blob::verify(policy, &path.display().to_string(), &bytes, &found);
    let signatures = found
        .into_iter()
        .map(|d| Checked {
            format: "signature",
            keys: verified_by(policy, &bytes, &d.signature),
            source: d.source,
            vouches: None,
        })
        .collect();
    Ok(Report {
        reference: path.display().to_string(),
        digest: blob::digest(&bytes),
        signatures,
        verdict,
    })
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} is {}", self.reference, self.digest)?;
        if self.signatures.is_empty() {
            writeln!(f, "  no signature")?;
        }
        for checked in &self.signatures {
            let by = if checked.keys.is_empty() {
                "no key given verifies it".to_owned()
            } else {
                format!("verified by {}", checked.keys.join(", "))
            };
            match &checked.vouches {
                Some(vouches) => writeln!(
                    f,
                    "  {} {}: {vouches}; {by}",
                    checked.format, checked.source
                )?,
                None => writeln!(f, "  {} {}: {by}", checked.format, checked.source)?,
            }
        }
        match &self.verdict {
            Verdict::Verified { keys } => writeln!(f, "verified: signed by {}", keys.join(", ")),
            Verdict::Refused { reason, message } => {
                writeln!(f, "not verified ({reason}): {message}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::PrivateKey;

    #[test]
    fn weir_verify_of_a_file_reads_its_signature_beside_it_and_says_which_key_verifies_it() {
        let tmp = tempfile::tempdir().unwrap();
        let key = PrivateKey::from_bytes(&[4; 32]).unwrap();
        let public = tmp.path().join("weir.pub");
        std::fs::write(&public, key.public_pem()).unwrap();
        let file = tmp.path().join("blog.wasm");
        std::fs::write(&file, b"\0asm\r\0\x01\0 blog").unwrap();
        let args = VerifyArgs {
            reference: file.display().to_string(),
            keys: vec![public],
            verification_policy: None,
            username: None,
            password: None,
        };
        let unsigned = args.execute().unwrap();
        assert!(!unsigned.verdict.verified());
        assert!(unsigned.to_string().contains("no signature"), "{unsigned}");
        std::fs::write(
            blob::signature_path(&file),
            blob::sign(&key, &std::fs::read(&file).unwrap()),
        )
        .unwrap();
        let report = args.execute().unwrap();
        assert!(report.verdict.verified(), "{report}");
        let text = report.to_string();
        assert!(
            text.contains("signature blog.wasm.sig: verified by weir.pub"),
            "{text}"
        );
        assert!(
            text.contains(&blob::digest(b"\0asm\r\0\x01\0 blog")),
            "{text}"
        );
    }
}
