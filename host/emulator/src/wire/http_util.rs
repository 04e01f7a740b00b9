//! Small HTTP helpers every layer shares: JSON responses and query-string decoding.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::Value;

/// A JSON response with the given status.
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    raw_json_response(code, body.to_string().into_bytes())
}

/// A response with the given status whose body is JSON text already written.
pub fn raw_json_response(code: StatusCode, body: Vec<u8>) -> Response {
    Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Decode `a=b&c=d` (percent-decoding included).
pub fn form_pairs(query: &str) -> Vec<(String, String)> {
    let Ok(uri) = format!("/?{query}").parse::<http::Uri>() else {
        return Vec::new();
    };
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// A boolean query parameter as kube-apiserver reads it (Go's `strconv.ParseBool`): `1`, `t`,
/// `T`, `TRUE`, `true` and `True` are true. The Python client sends `watch=True`, `force=True`.
pub fn is_true(value: &str) -> bool {
    matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_read_as_go_parses_them() {
        for v in ["1", "t", "T", "TRUE", "true", "True"] {
            assert!(is_true(v), "{v}");
        }
        for v in ["0", "f", "false", "False", "", "yes", "tRUE"] {
            assert!(!is_true(v), "{v}");
        }
    }
}

/// Sends each write at once, as kube-apiserver does (Go sets `TCP_NODELAY` on every
/// connection). Without it a watch event written right after another small write on the
/// connection waits for the client's delayed ACK, about 40 ms on Linux: a controller's cache
/// then lags its own creates by that much, and its next reconcile writes them again.
pub(crate) fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY not set");
    }
}
