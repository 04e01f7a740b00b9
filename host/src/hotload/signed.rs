//! A directory's file held to the verification policy before anything of it runs: its detached
//! signature (`FILE.sig`) checked over the bytes the loader then compiles, at the policy's
//! `level.directory`.
//!
//! The bytes are read once and the same buffer is verified and compiled, so a file swapped
//! between the check and the compile cannot slip in unverified (the swap only has the outcome
//! thrown away, by the settle logic's stamp check). Under `enforce` a file that does not verify
//! is refused; under `audit` it loads, and why it would have been refused is logged; a
//! `trusted` directory is not checked, as the log says at start.

use std::path::Path;

use tracing::{info, warn};

use super::dir::FileRefusal;
use crate::trust::{Level, Policy, Verdict, blob};

/// Says at start how the files of `dir` are checked (nothing without a policy).
pub(super) fn announce(dir: &Path, policy: Option<&Policy>) {
    let Some(policy) = policy else {
        return;
    };
    match policy.level.directory.checked() {
        None => info!(dir = %dir.display(),
            "the verification policy trusts the plugins directory (level.directory: trusted): its files are not checked"),
        Some(level) => info!(dir = %dir.display(), ?level,
            "each plugin file is checked against the verification policy before it loads, with its signature FILE.sig"),
    }
}

/// Checks `bytes`, read from `file`, against `policy`: `Err` when it may not load.
pub(super) fn check(policy: Option<&Policy>, file: &Path, bytes: &[u8]) -> Result<(), FileRefusal> {
    let Some(policy) = policy else {
        return Ok(());
    };
    let Some(level) = policy.level.directory.checked() else {
        return Ok(());
    };
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let verdict = match blob::read(file) {
        Ok(signatures) => blob::verify(policy, &name, bytes, &signatures),
        Err(e) => Verdict::Refused {
            reason: "SignatureUnavailable",
            message: format!("cannot read {}: {e}", blob::signature_path(file).display()),
        },
    };
    match verdict {
        Verdict::Verified { keys } => {
            info!(file = %name, digest = %blob::digest(bytes), keys = %keys.join(", "), "signature verified");
            Ok(())
        }
        Verdict::Refused { reason, message } => match level {
            Level::Enforce => Err(FileRefusal::Unverified { reason, message }),
            Level::Audit => {
                warn!(file = %name, reason,
                    "served under audit, although it does not verify: {message}");
                Ok(())
            }
        },
    }
}
