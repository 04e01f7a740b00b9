//! Failures answered to clients as Kubernetes `Status` objects.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

/// One failure of an API request, rendered as a `metav1.Status` body.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    /// HTTP status code, repeated in the body's `code`.
    pub code: u16,
    /// Machine-readable reason such as `NotFound` or `Conflict`.
    pub reason: String,
    /// Human-readable message that kubectl prints.
    pub message: String,
    /// The `details` object (name, group, kind, causes).
    pub details: Option<Value>,
}

/// The `resource.group` form kube-apiserver names objects by; core resources have no group suffix.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    /// A failure with an arbitrary code and reason.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    /// `404 NotFound` for a named object of a resource.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified(group, resource);
        ApiError::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
            .with_details(json!({"name": name, "group": group, "kind": resource}))
    }

    /// `409 AlreadyExists` on create of an existing name.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified(group, resource);
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{qualified} \"{name}\" already exists"),
        )
        .with_details(json!({"name": name, "group": group, "kind": resource}))
    }

    /// `409 Conflict` unless the write's `resourceVersion` is empty ("unconditional") or the
    /// stored one: kube-apiserver's optimistic concurrency.
    pub fn check_resource_version(
        group: &str,
        resource: &str,
        name: &str,
        requested: &str,
        stored: &str,
    ) -> Result<(), Self> {
        if requested.is_empty() || requested == stored {
            return Ok(());
        }
        Err(Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ))
    }

    /// `409 Conflict`, e.g. a stale resourceVersion or a failed precondition.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = qualified(group, resource);
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"),
        )
        .with_details(json!({"name": name, "group": group, "kind": resource}))
    }

    /// `400 BadRequest` for a malformed request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// `422 Invalid` with one cause per offending field.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<(String, String)>) -> Self {
        let qualified = qualified(group, kind);
        let summary: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let causes: Vec<Value> = causes
            .iter()
            .map(|(f, m)| json!({"reason": "FieldValueInvalid", "message": m, "field": f}))
            .collect();
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {}", summary.join(", ")),
        )
        .with_details(json!({"name": name, "group": group, "kind": kind, "causes": causes}))
    }

    /// `405 MethodNotAllowed`.
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// `415 UnsupportedMediaType` for an unknown patch type.
    pub fn unsupported_media(ct: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct})"
            ),
        )
    }

    /// Attach a `details` object.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        crate::wire::http_util::json_response(code, &self.to_status())
    }
}

/// Result of an API operation.
pub type ApiResult<T> = Result<T, ApiError>;
