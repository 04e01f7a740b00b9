//! What a write request asks for beyond its body: field manager, `fieldValidation`, dry run, force.

/// How unknown fields are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validation {
    /// Unknown fields fail the request.
    Strict,
    /// Unknown fields are dropped with a warning.
    Warn,
    /// Unknown fields are dropped silently.
    Ignore,
}

/// Options every write carries.
#[derive(Clone, Debug)]
pub struct WriteOpts {
    /// The field manager recorded in `managedFields`.
    pub manager: String,
    /// The `fieldValidation` mode.
    pub validation: Validation,
    /// `dryRun=All`: compute the result but store nothing.
    pub dry_run: bool,
    /// `force` for server-side apply.
    pub force: bool,
}
