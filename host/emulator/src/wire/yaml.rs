//! YAML bodies and files read one way: YAML 1.2 scalars (`yes` and `on` are strings, as the
//! host reads them), the parser's limits on depth and aliases, errors with line and column.

use serde::de::DeserializeOwned;

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        // One line (`… at line 3, column 7`): errors end up in logs, statuses and reports.
        with_snippet: false,
    }
}

/// One YAML (or JSON) document.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options())
}

/// One YAML (or JSON) document, from a request body.
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_slice_with_options(bytes, options())
}
