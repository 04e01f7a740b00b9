//! What the cluster admin's policy lets a plugin's answer carry beyond the fixed rules.

/// The default Secret types: the ones whose content the writer supplies in full.
pub const DEFAULT_SECRET_TYPES: &[&str] = &[
    "Opaque",
    "kubernetes.io/tls",
    "kubernetes.io/basic-auth",
    "kubernetes.io/ssh-auth",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/dockercfg",
];

/// What the host lets a plugin's answer carry, from the cluster admin's policy
/// ([`crate::policy::Policy::validation`]); `Default` is the default policy's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationPolicy {
    /// The `type`s a desired Secret may have (none: `Opaque`); any other is refused with
    /// [`super::Refusal::SecretType`]. The one rule for credential-bearing Secrets: by default
    /// ([`DEFAULT_SECRET_TYPES`]) it leaves out [`super::SERVICE_ACCOUNT_TOKEN_TYPE`],
    /// which the API server's token controller fills with a token of whichever ServiceAccount
    /// its annotation names (a credential the plugin was never given), and
    /// `bootstrap.kubernetes.io/token`. The allowed types hold only what the plugin wrote.
    pub secret_types: Vec<String>,
}

impl Default for ValidationPolicy {
    fn default() -> Self {
        Self {
            secret_types: DEFAULT_SECRET_TYPES
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
        }
    }
}

impl ValidationPolicy {
    /// Whether a desired Secret of `secret_type` may be written.
    pub fn allows_secret_type(&self, secret_type: &str) -> bool {
        self.secret_types.iter().any(|t| t == secret_type)
    }
}
