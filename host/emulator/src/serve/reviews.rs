//! Self-reviews (`kubectl auth can-i`, `kubectl auth whoami`): answered from the RBAC rules when
//! [`crate::EmulatorConfig::secure`] is on; without it every request is allowed and the caller
//! is an admin.

use k8s_openapi::api::authorization::v1::{NonResourceAttributes, ResourceAttributes};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::auth::User;
use crate::state::auth::rbac::{self, Attributes};
use crate::state::shared::Shared;

/// The answer to a `POST` of a review at `(group, plural)` by `user`, or `None` if it is not a
/// review.
pub fn answer(
    shared: &Shared,
    user: &User,
    group: &str,
    plural: &str,
    body: &[u8],
) -> Option<Value> {
    let mut review = body_json(body);
    let secure = shared.auth.is_some();
    let (api_version, kind, status) = match (group, plural) {
        ("authorization.k8s.io", "selfsubjectaccessreviews") => {
            let status = if secure {
                let decision = rbac::authorize(&shared.lock(), user, &access_attributes(&review));
                json!({"allowed": decision.allowed, "reason": decision.reason})
            } else {
                json!({"allowed": true, "reason": "the Weir emulator has no authorization: every request is allowed"})
            };
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview", status)
        }
        ("authorization.k8s.io", "selfsubjectrulesreviews") => {
            let status = if secure {
                let namespace = review["spec"]["namespace"].as_str().unwrap_or_default();
                rules_review(&rbac::rules_for(&shared.lock(), user, namespace))
            } else {
                json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                       "incomplete": false})
            };
            ("authorization.k8s.io/v1", "SelfSubjectRulesReview", status)
        }
        ("authentication.k8s.io", "selfsubjectreviews") => (
            "authentication.k8s.io/v1",
            "SelfSubjectReview",
            json!({"userInfo": {"username": user.name, "groups": user.groups}}),
        ),
        _ => return None,
    };
    review["apiVersion"] = json!(api_version);
    review["kind"] = json!(kind);
    if review.get("metadata").is_none() {
        review["metadata"] = json!({});
    }
    review["status"] = status;
    Some(review)
}

/// A review's body as JSON: kubectl sends protobuf (a `k8s\0` envelope), other clients JSON.
fn body_json(body: &[u8]) -> Value {
    if let Ok(review) = crate::wire::protobuf::decode(body) {
        return review;
    }
    serde_json::from_slice(body)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The attributes a `SelfSubjectAccessReview`'s spec asks about.
fn access_attributes(review: &Value) -> Attributes {
    let spec = &review["spec"];
    if let Ok(r) = ResourceAttributes::deserialize(&spec["resourceAttributes"]) {
        let s = |v: Option<String>| v.unwrap_or_default();
        return Attributes {
            verb: s(r.verb),
            path: String::new(),
            resource: Some(rbac::ResourceAttributes {
                namespace: s(r.namespace),
                group: s(r.group),
                resource: s(r.resource),
                subresource: s(r.subresource),
                name: s(r.name),
            }),
        };
    }
    let r = NonResourceAttributes::deserialize(&spec["nonResourceAttributes"]).unwrap_or_default();
    Attributes {
        verb: r.verb.unwrap_or_default(),
        path: r.path.unwrap_or_default(),
        resource: None,
    }
}

/// A `SelfSubjectRulesReview` status listing `rules`.
fn rules_review(rules: &[k8s_openapi::api::rbac::v1::PolicyRule]) -> Value {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules {
        if let Some(urls) = rule.non_resource_urls.as_ref().filter(|u| !u.is_empty()) {
            non_resource_rules.push(json!({"verbs": rule.verbs, "nonResourceURLs": urls}));
        } else {
            let mut r = json!({"verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources});
            if let Some(names) = &rule.resource_names {
                r["resourceNames"] = json!(names);
            }
            resource_rules.push(r);
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}
