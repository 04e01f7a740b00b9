//! `weir sign --key KEY FILE`: a detached signature beside a file (`FILE.sig`), for a plugins
//! directory held to the verification policy; the key and the signing are `weir push --sign`'s.

use std::path::PathBuf;

use super::blob;
use super::keys::{KeyFileError, PrivateKey};

/// Why a file could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The key could not be read.
    #[error(transparent)]
    Key(#[from] KeyFileError),
    /// The file (or, with `--append`, its signature file) could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The signature file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The signature file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Arguments of `weir sign`.
#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The file to sign (a component, `*.wasm`); the signature goes to `FILE.sig`, in the format
    /// `cosign sign-blob --key` writes and `cosign verify-blob --key PUB --signature FILE.sig
    /// FILE` reads.
    pub file: PathBuf,
    /// The ECDSA P-256 private key (unencrypted PEM), as `weir push --sign` takes it.
    #[arg(long, value_name = "KEY.pem")]
    pub key: PathBuf,
    /// Add the signature as a new line of `FILE.sig` (another key's signatures stay), so that a
    /// policy's `allOf` of several keys can be met; without it `FILE.sig` is replaced.
    #[arg(long)]
    pub append: bool,
}

impl SignArgs {
    /// Signs the file; returns the signature file written.
    pub fn execute(&self) -> Result<PathBuf, SignError> {
        let key = PrivateKey::read(&self.key)?;
        let bytes = std::fs::read(&self.file).map_err(|source| SignError::Read {
            path: self.file.clone(),
            source,
        })?;
        let path = blob::signature_path(&self.file);
        let mut text = String::new();
        if self.append {
            match std::fs::read_to_string(&path) {
                Ok(before) => {
                    for line in before.split_whitespace() {
                        text += line;
                        text += "\n";
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(SignError::Read { path, source }),
            }
        }
        text += &blob::sign(&key, &bytes);
        text += "\n";
        crate::files::write_whole(&path, text.as_bytes()).map_err(|source| SignError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::{Policy, Verdict};

    #[test]
    fn weir_sign_writes_a_signature_the_policy_verifies_and_append_adds_another_key_s() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (
            PrivateKey::from_bytes(&[1; 32]).unwrap(),
            PrivateKey::from_bytes(&[2; 32]).unwrap(),
        );
        let key_file = |name: &str, key: &PrivateKey| {
            let path = tmp.path().join(name);
            std::fs::write(&path, key.to_pem()).unwrap();
            path
        };
        let file = tmp.path().join("blog.wasm");
        std::fs::write(&file, b"\0asm\r\0\x01\0 blog").unwrap();
        let sign = |key: PathBuf, append: bool| {
            SignArgs {
                file: file.clone(),
                key,
                append,
            }
            .execute()
            .unwrap()
        };
        assert_eq!(
            sign(key_file("a.key", &a), false),
            tmp.path().join("blog.wasm.sig")
        );
        let pem = |k: &PrivateKey| -> String {
            k.public_pem()
                .lines()
                .map(|l| format!("      {l}\n"))
                .collect()
        };
        let policy = Policy::parse(&format!(
            "apiVersion: v1\nallOf:\n  - kind: pubKey\n    name: a\n    key: |\n{}  - kind: pubKey\n    name: b\n    key: |\n{}",
            pem(&a),
            pem(&b)
        ))
        .unwrap();
        let judge = || {
            let bytes = std::fs::read(&file).unwrap();
            blob::verify(&policy, "blog.wasm", &bytes, &blob::read(&file).unwrap())
        };
        assert!(!judge().verified(), "b has not signed yet");
        sign(key_file("b.key", &b), true);
        assert_eq!(
            judge(),
            Verdict::Verified {
                keys: vec!["a".into(), "b".into()]
            }
        );
        sign(key_file("b.key", &b), false);
        assert!(!judge().verified(), "replaced: a's signature is gone");
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let missing = SignArgs {
            file: file.clone(),
            key: tmp.path().join("none.key"),
            append: false,
        };
        let err = missing.execute().unwrap_err().to_string();
        assert!(err.contains("none.key"), "{err}");
    }
}
