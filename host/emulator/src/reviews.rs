//! Self-reviews (`kubectl auth can-i`, `kubectl auth whoami`) answered for an emulator that has
//! no authentication and no authorization: every request is allowed, and the caller is an admin.

use serde_json::{Value, json};

/// The identity every caller has.
const USER: &str = "system:admin";

/// The answer to a `POST` of a review at `(group, plural)`, or `None` if it is not a review.
pub fn answer(group: &str, plural: &str, body: &[u8]) -> Option<Value> {
    let mut review: Value = serde_json::from_slice(body).unwrap_or_else(|_| json!({}));
    let (api_version, kind, status) = match (group, plural) {
        ("authorization.k8s.io", "selfsubjectaccessreviews") => (
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            json!({"allowed": true, "reason": "the Weir emulator has no authorization: every request is allowed"}),
        ),
        ("authorization.k8s.io", "selfsubjectrulesreviews") => (
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                   "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                   "incomplete": false}),
        ),
        ("authentication.k8s.io", "selfsubjectreviews") => (
            "authentication.k8s.io/v1",
            "SelfSubjectReview",
            json!({"userInfo": {"username": USER, "groups": ["system:masters", "system:authenticated"]}}),
        ),
        _ => return None,
    };
    if !review.is_object() {
        review = json!({});
    }
    review["apiVersion"] = json!(api_version);
    review["kind"] = json!(kind);
    if review.get("metadata").is_none() {
        review["metadata"] = json!({});
    }
    review["status"] = status;
    Some(review)
}
