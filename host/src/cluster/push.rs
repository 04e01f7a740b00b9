//! `weir push PLUGIN.wasm REF`: put a component in a registry, in the WebAssembly OCI layout.

use std::path::PathBuf;

use super::oci::{Credentials, OciError, Registry, parse_reference};

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
        let digest = runtime.block_on(registry.push(&component, &reference))?;
        Ok(digest)
    }
}
