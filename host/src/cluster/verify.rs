//! `weir verify REF`: the signatures an artifact has in its registry, in either format (tag
//! signatures and Sigstore bundles, each listed with its format), what each vouches for, and
//! whether the verification policy (or any of the keys given) holds.

use std::fmt;
use std::path::PathBuf;

use super::oci::{Credentials, OciError, Registry, parse_reference};
use crate::trust::{Found, Policy, PolicyError, PublicKey, Verdict, verify};

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
}

/// Arguments of `weir verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The artifact: `registry/repository:tag` or `…@sha256:…`.
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
    /// The manifest digest it names.
    pub digest: String,
    /// Each signature, and which keys of the policy verify it.
    pub signatures: Vec<(Found, Vec<String>)>,
    /// The policy's verdict.
    pub verdict: Verdict,
}

impl VerifyArgs {
    /// Reads the keys or the policy, then the artifact's signatures, and holds them to it.
    pub fn execute(&self) -> Result<Report, VerifyError> {
        let policy = match &self.verification_policy {
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
        };
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
        let keys = policy.all_of.iter().chain(&policy.any_of);
        let signatures = found
            .into_iter()
            .map(|f| {
                let by = keys
                    .clone()
                    .filter(|r| r.key.verifies(&f.signed(), &f.signature))
                    .map(|r| r.key.name.clone())
                    .collect();
                (f, by)
            })
            .collect();
        Ok(Report {
            reference: reference.whole(),
            digest,
            signatures,
            verdict,
        })
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} is {}", self.reference, self.digest)?;
        if self.signatures.is_empty() {
            writeln!(f, "  no signature")?;
        }
        for (found, keys) in &self.signatures {
            let vouches = found
                .digests()
                .map_or_else(|e| e, |d| format!("vouches for {}", d.join(", ")));
            let by = if keys.is_empty() {
                "no key given verifies it".to_owned()
            } else {
                format!("verified by {}", keys.join(", "))
            };
            writeln!(f, "  {} {}: {vouches}; {by}", found.format(), found.source)?;
        }
        match &self.verdict {
            Verdict::Verified { keys } => writeln!(f, "verified: signed by {}", keys.join(", ")),
            Verdict::Refused { reason, message } => {
                writeln!(f, "not verified ({reason}): {message}")
            }
        }
    }
}
