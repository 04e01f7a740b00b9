//! Small HTTP helpers every layer shares: JSON responses and query-string decoding.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::Value;

/// A JSON response with the given status.
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
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
