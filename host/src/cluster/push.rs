//! `weir push PLUGIN.wasm REF [--sign KEY [--bundle]]`: put a component in a registry, in the
//! WebAssembly OCI layout, and sign it as `cosign sign --key` does: a tag signature as cosign v2
//! writes one (`crate::cluster::signatures`), or with `--bundle` a Sigstore bundle referrer as
//! cosign v3 does by default (`crate::cluster::referrers`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::oci::{Credentials, OciError, Registry, parse_reference};
use crate::trust::keys::KeyFileError;
use crate::trust::simple_signing::Payload;
use crate::trust::{PrivateKey, bundle};

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a WebAssembly component.
    #[error("{} is not a WebAssembly component (build with a component target such as wasm32-wasip2)", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
    },
    /// The registry refused it, or the reference is wrong.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The signing key could not be read.
    #[error(transparent)]
    Key(#[from] KeyFileError),
    /// An annotation is not `KEY=VALUE`.
    #[error("annotation {0:?} is not KEY=VALUE")]
    Annotation(String),
}

/// Arguments of `weir push`.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The component (`*.wasm`).
    pub plugin: PathBuf,
    /// Where to push it: `registry/repository:tag`.
    pub reference: String,
    /// User name for the registry (HTTP basic authentication).
    #[arg(long, env = "WEIR_REGISTRY_USERNAME")]
    pub username: Option<String>,
    /// Password for the registry.
    #[arg(long, env = "WEIR_REGISTRY_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Sign the pushed digest with this ECDSA P-256 private key (unencrypted PEM): a cosign
    /// signature in the `sha256-<hex>.sig` tag (or a bundle, with --bundle), in the format
    /// `cosign verify --key` reads (checked with openssl and PyPI `cryptography`, not with cosign
    /// itself).
    #[arg(long, value_name = "KEY.pem")]
    pub sign: Option<PathBuf>,
    /// An annotation of the signature's payload (`cosign sign -a`), with --sign. Repeatable.
    #[arg(
        short = 'a',
        long = "annotation",
        value_name = "KEY=VALUE",
        requires = "sign"
    )]
    pub annotations: Vec<String>,
    /// With --sign: store the signature as a Sigstore bundle referring to the artifact (OCI 1.1
    /// referrers, and the `sha256-<hex>` index of their tag schema; cosign v3's default)
    /// instead of in the `sha256-<hex>.sig` tag. Run twice, with and without, for both.
    #[arg(long, requires = "sign")]
    pub bundle: bool,
}

impl PushArgs {
    /// Pushes the component; returns the manifest digest (`sha256:…`) to pin in a Plugin.
    pub fn execute(&self) -> Result<String, PushError> {
        let component = std::fs::read(&self.plugin).map_err(|source| PushError::Read {
            path: self.plugin.clone(),
            source,
        })?;
        if !matches!(component.as_slice(), [0, b'a', b's', b'm', _, _, 1, 0, ..]) {
            return Err(PushError::NotAComponent {
                path: self.plugin.clone(),
            });
        }
        let signer = self.signer()?;
        let reference = parse_reference(&self.reference)?;
        let credentials = match (&self.username, &self.password) {
            (Some(username), password) => Credentials::Basic {
                username: username.clone(),
                password: password.clone().unwrap_or_default(),
            },
            (None, _) => Credentials::Anonymous,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PushError::Runtime)?;
        let registry = Registry::new(&reference, &credentials);
        let digest = runtime.block_on(async {
            let digest = registry.push(&component, &reference).await?;
            if let Some((key, annotations)) = &signer
                && self.bundle
            {
                let bundle = bundle::sign(key, &digest, annotations);
                let at = registry.push_bundle(&reference, &digest, &bundle).await?;
                eprintln!("signed: bundle {at}");
            } else if let Some((key, annotations)) = &signer {
                let repository = format!("{}/{}", reference.registry(), reference.repository());
                let payload = Payload::new(&repository, &digest, annotations).to_bytes();
                let signature = key.sign(&payload);
                let tag = registry
                    .push_signature(&reference, &digest, &payload, &signature)
                    .await?;
                eprintln!("signed: {tag}");
            }
            Ok::<_, OciError>(digest)
        })?;
        Ok(digest)
    }

    /// The signing key and the payload's annotations, when `--sign` is given.
    fn signer(&self) -> Result<Option<(PrivateKey, BTreeMap<String, String>)>, PushError> {
        let Some(path) = &self.sign else {
            return Ok(None);
        };
        let key = PrivateKey::read(path)?;
        let mut annotations = BTreeMap::new();
        for a in &self.annotations {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| PushError::Annotation(a.clone()))?;
            annotations.insert(k.to_owned(), v.to_owned());
        }
        Ok(Some((key, annotations)))
    }
}
