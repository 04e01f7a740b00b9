//! Verdicts kept beside the stored components, by manifest digest and the policy in force: a
//! restart (or a registry outage) does not need the signatures fetched again.
//!
//! `DIR/verified/HEX-POLICY` holds the names of the keys that verified the manifest digest
//! `sha256:HEX` under the policy whose fingerprint is `POLICY`, one a line. Only what verified
//! is kept: a refusal is asked again (a signature may have been pushed since), and another
//! policy, or another digest, finds nothing. The file is written to a temporary file and
//! renamed, so it is whole or absent; it is as trusted as the components beside it.

use std::path::{Path, PathBuf};

/// The verdict cache under the component store.
#[derive(Clone, Debug)]
pub struct VerdictCache {
    dir: PathBuf,
}

impl VerdictCache {
    /// The cache under `store` (`store/verified`).
    pub fn new(store: &Path) -> VerdictCache {
        VerdictCache {
            dir: store.join("verified"),
        }
    }

    /// The keys that verified `digest` under the policy `fingerprint`, if that was recorded.
    pub fn get(&self, digest: &str, fingerprint: &str) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.path(digest, fingerprint)?).ok()?;
        let keys: Vec<String> = text.lines().map(str::to_owned).collect();
        (!keys.is_empty()).then_some(keys)
    }

    /// Records that `keys` verified `digest` under the policy `fingerprint`.
    pub fn put(&self, digest: &str, fingerprint: &str, keys: &[String]) -> std::io::Result<()> {
        let path = self
            .path(digest, fingerprint)
            .ok_or_else(|| std::io::Error::other(format!("{digest:?} is not a sha256 digest")))?;
        crate::files::write_whole(&path, keys.join("\n").as_bytes())
    }

    /// `None` for anything but `sha256:` and 64 hex digits, or a fingerprint that is not hex.
    fn path(&self, digest: &str, fingerprint: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        let hex_only = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
        (hex.len() == 64 && hex_only(hex) && !fingerprint.is_empty() && hex_only(fingerprint))
            .then(|| self.dir.join(format!("{hex}-{fingerprint}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_found_again_for_its_digest_and_policy_only() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = VerdictCache::new(tmp.path());
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(cache.get(&digest, "0123"), None);
        cache.put(&digest, "0123", &["platform".into()]).unwrap();
        let again = VerdictCache::new(tmp.path());
        assert_eq!(again.get(&digest, "0123"), Some(vec!["platform".into()]));
        assert_eq!(again.get(&digest, "4567"), None, "another policy");
        let other = format!("sha256:{}", "b".repeat(64));
        assert_eq!(again.get(&other, "0123"), None, "another digest");
        assert!(cache.put("sha256:../../x", "0123", &["k".into()]).is_err());
        assert!(cache.put(&digest, "../x", &["k".into()]).is_err());
    }
}
