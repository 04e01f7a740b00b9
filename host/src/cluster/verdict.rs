//! What a version's signatures came to under the verification policy: the one verdict the Plugin's conditions and the load paths share.

/// What the signatures of a version (the one serving, or its candidate) came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signature {
    /// The verification policy holds; these keys verified it.
    Verified {
        /// The policy's names of the keys.
        keys: Vec<String>,
    },
    /// It does not verify, and serves because the level is `audit`.
    Audited {
        /// CamelCase reason (`Unsigned`, `SignatureUntrusted`, `SignatureUnavailable`).
        reason: &'static str,
        /// Why.
        message: String,
    },
}
