//! Files written whole: through a hidden temporary beside them, renamed over them.
//!
//! A reader (the hot loader watching a directory, a host reading its stores after a crash) sees
//! the old content or the new, never half of it, and the temporary's name starts with `.`, which
//! the directory watchers skip.

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to `path` whole, creating its directory if it is missing (a cache volume wiped
/// under the running host heals itself).
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::Builder::new().prefix(".weir-").tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_data()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
