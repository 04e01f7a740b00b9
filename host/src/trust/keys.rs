//! Keys that sign and verify plugins: ECDSA P-256 over SHA-256, as cosign's key-based signatures.
//!
//! A public key is PEM (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo), as `cosign
//! generate-key-pair` writes `cosign.pub` and `openssl ec -pubout` writes one. A private key is
//! unencrypted PEM, PKCS#8 (`BEGIN PRIVATE KEY`) or SEC1 (`BEGIN EC PRIVATE KEY`), as openssl
//! writes them; cosign's own encrypted key files are refused with how to make one Weir reads.
//! Signatures are base64 of ASN.1 DER (what cosign writes); 64 raw bytes (r‖s) are read too.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use sha2::{Digest, Sha256};

/// Why a key could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Not a PEM ECDSA P-256 public key.
    #[error("key {name}: not a PEM ECDSA P-256 public key (-----BEGIN PUBLIC KEY-----)")]
    Public {
        /// How the policy names the key.
        name: String,
    },
    /// A cosign key file, encrypted with a password.
    #[error(
        "an encrypted cosign private key: Weir reads unencrypted PEM keys (make one with `openssl \
         ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt`; `cosign \
         import-key-pair` makes a cosign key of the same key)"
    )]
    Encrypted,
    /// Not a PEM ECDSA P-256 private key.
    #[error("not a PEM ECDSA P-256 private key (PKCS#8 or SEC1)")]
    Private,
}

/// Why a private key file could not be used to sign.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the signing key {}", path.display())]
pub struct KeyFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it: an I/O error or a [`KeyError`].
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// A public key of the verification policy, with the name status and logs give it.
#[derive(Clone, Debug)]
pub struct PublicKey {
    /// The policy's name for the key (its fingerprint when the policy gives none).
    pub name: String,
    key: VerifyingKey,
}

impl PublicKey {
    /// Reads a PEM public key; `name` defaults to its fingerprint.
    pub fn from_pem(name: Option<&str>, pem: &str) -> Result<PublicKey, KeyError> {
        let key = VerifyingKey::from_public_key_pem(pem.trim()).map_err(|_| KeyError::Public {
            name: name.unwrap_or("(unnamed)").to_owned(),
        })?;
        let mut public = PublicKey {
            name: String::new(),
            key,
        };
        public.name = name.map_or_else(|| public.fingerprint(), str::to_owned);
        Ok(public)
    }

    /// `sha256:` and the first 16 hex digits of the sha256 of the key's DER form (as `openssl
    /// ec -pubin -outform DER | sha256sum` prints it, shortened).
    pub fn fingerprint(&self) -> String {
        let der = self
            .key
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default();
        format!("sha256:{}", &hex::encode(Sha256::digest(der))[..16])
    }

    /// Whether `signature` (base64, DER or raw r‖s) is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        decode(signature).is_some_and(|signature| self.key.verify(message, &signature).is_ok())
    }
}

/// Whether `signature` reads as an ECDSA P-256 signature (base64 of DER, or of raw r‖s),
/// whoever made it and over whatever.
pub fn well_formed(signature: &str) -> bool {
    decode(signature).is_some()
}

fn decode(signature: &str) -> Option<Signature> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .ok()?;
    Signature::from_der(&bytes)
        .or_else(|_| Signature::from_slice(&bytes))
        .ok()
}

/// A private key that signs plugins.
pub struct PrivateKey(SigningKey);

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(***)")
    }
}

impl PrivateKey {
    /// Reads an unencrypted PEM private key (PKCS#8 or SEC1).
    pub fn from_pem(pem: &str) -> Result<PrivateKey, KeyError> {
        if pem.contains("ENCRYPTED") {
            return Err(KeyError::Encrypted);
        }
        if let Ok(key) = SigningKey::from_pkcs8_pem(pem.trim()) {
            return Ok(PrivateKey(key));
        }
        p256::SecretKey::from_sec1_pem(pem.trim())
            .map(|secret| PrivateKey(secret.into()))
            .map_err(|_| KeyError::Private)
    }

    /// Reads an unencrypted PEM private key file (`weir push --sign`, `weir sign --key`).
    pub fn read(path: &Path) -> Result<PrivateKey, KeyFileError> {
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| KeyFileError {
            path: path.to_owned(),
            source,
        };
        let pem = std::fs::read_to_string(path).map_err(|e| fail(Box::new(e)))?;
        PrivateKey::from_pem(&pem).map_err(|e| fail(Box::new(e)))
    }

    /// The key of 32 secret bytes (tests make their keys so).
    pub fn from_bytes(secret: &[u8; 32]) -> Result<PrivateKey, KeyError> {
        SigningKey::from_bytes(secret.into())
            .map(PrivateKey)
            .map_err(|_| KeyError::Private)
    }

    /// The signature of `message` (ECDSA P-256 over its SHA-256, RFC 6979), base64 of DER.
    pub fn sign(&self, message: &[u8]) -> String {
        let signature: Signature = self.0.sign(message);
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    }

    /// The key as unencrypted PKCS#8 PEM (what `weir push --sign` reads).
    pub fn to_pem(&self) -> String {
        use p256::pkcs8::EncodePrivateKey;
        self.0
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .map(|pem| pem.to_string())
            .unwrap_or_default()
    }

    /// The public key, as PEM (what the policy lists).
    pub fn public_pem(&self) -> String {
        self.0
            .verifying_key()
            .to_public_key_pem(p256::pkcs8::LineEnding::LF)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_under_its_key_only_and_over_its_message_only() {
        let key = PrivateKey::from_bytes(&[7; 32]).unwrap();
        let other = PrivateKey::from_bytes(&[8; 32]).unwrap();
        let public = PublicKey::from_pem(Some("team"), &key.public_pem()).unwrap();
        let signature = key.sign(b"payload");
        assert!(public.verifies(b"payload", &signature));
        assert!(!public.verifies(b"payload!", &signature));
        assert!(!public.verifies(b"payload", &other.sign(b"payload")));
        assert!(!public.verifies(b"payload", "not base64 !"));
        assert_eq!(public.name, "team");
        let unnamed = PublicKey::from_pem(None, &key.public_pem()).unwrap();
        assert_eq!(unnamed.name, unnamed.fingerprint());
        assert!(unnamed.name.starts_with("sha256:") && unnamed.name.len() == 23);
    }

    #[test]
    fn keys_are_read_as_openssl_writes_them_and_encrypted_cosign_keys_are_refused_with_a_way_out() {
        let key = PrivateKey::from_bytes(&[9; 32]).unwrap();
        let again = PrivateKey::from_pem(&key.to_pem()).unwrap();
        assert_eq!(again.public_pem(), key.public_pem());
        let pem = key.public_pem();
        assert!(PrivateKey::from_pem(&pem).is_err(), "a public key signed");
        let encrypted = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nxx\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
        let err = PrivateKey::from_pem(encrypted).unwrap_err();
        assert!(err.to_string().contains("openssl"), "{err}");
        assert!(PublicKey::from_pem(Some("k"), "garbage").is_err());
    }
}
