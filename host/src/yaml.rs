//! YAML in and out, read one way everywhere: YAML 1.2 scalars, errors that name line and column.
//!
//! Every YAML file a user hands the host (fixtures, `weir dev --apply` manifests, policies,
//! plugins' CRDs) goes through [`from_str`] or [`from_documents`]. YAML 1.2 is what the files
//! were written for: `yes`, `on` and `y` are strings, not booleans (YAML 1.1 would make
//! `title: yes` a boolean). The parser's own limits (nesting depth, alias expansion, document
//! count) hold for every file.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a text is not the YAML asked for; its message names the line and column.
pub type Error = serde_saphyr::Error;

/// Why a value could not be written as YAML.
pub type SerializeError = serde_saphyr::SerializeError;

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        // One line (`… at line 3, column 7`): errors end up in logs, statuses and reports.
        with_snippet: false,
    }
}

/// One YAML document (JSON is YAML too).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_saphyr::from_str_with_options(text, options())
}

/// Every document of a `---` separated stream, empty ones left out.
pub fn from_documents<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, Error> {
    serde_saphyr::from_multiple_with_options(text, options())
}

/// `value` as one YAML document (block style; multi-line strings as literal blocks).
pub fn to_string<T: Serialize>(value: &T) -> Result<String, SerializeError> {
    serde_saphyr::to_string(value)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn yes_and_on_stay_strings_as_in_yaml_1_2() {
        let value: Value = from_str("a: yes\nb: on\nc: true\n").unwrap();
        assert_eq!(value, json!({"a": "yes", "b": "on", "c": true}));
    }

    #[test]
    fn an_error_names_the_line_and_the_column() {
        let err = from_str::<Value>("a: 1\nb: [2\nc: 3\n").unwrap_err();
        let location = err.location().unwrap();
        assert_eq!(location.line(), 3, "{err}");
        assert!(err.to_string().contains("line 3"), "{err}");
    }

    #[test]
    fn a_stream_is_read_document_by_document_without_the_empty_ones() {
        let docs: Vec<Value> = from_documents("---\na: 1\n---\n---\nb: 2\n").unwrap();
        assert_eq!(docs, [json!({"a": 1}), json!({"b": 2})]);
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let value = json!({"page": "<h1>A</h1>\n<p>b</p>\n", "list": [1, "yes"], "empty": {}});
        let text = to_string(&value).unwrap();
        assert_eq!(from_str::<Value>(&text).unwrap(), value, "{text}");
    }
}
