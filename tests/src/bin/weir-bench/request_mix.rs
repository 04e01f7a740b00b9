//! The emulator's requests over a stretch of a bench, counted by verb, resource and namespace.

use std::collections::BTreeMap;

use weir_emulator::RequestRecord;

/// One request's verb (`watch` for a watch, else the HTTP method), resource (with its
/// subresource, `blogs/status`) and namespace (`-` for a cluster-scoped path), from its path.
fn class(r: &RequestRecord) -> (String, String, String) {
    let verb = if r.is_watch() {
        "WATCH".to_string()
    } else {
        r.method.to_string()
    };
    let segments: Vec<&str> = r.path.split('/').filter(|s| !s.is_empty()).collect();
    // `/api/v1/...` or `/apis/GROUP/VERSION/...`: what follows the group version.
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    };
    let Some(rest) = rest.filter(|r| !r.is_empty()) else {
        return (verb, r.path.clone(), "-".to_string());
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, resource, tail @ ..] => (*ns, [&[*resource][..], tail].concat()),
        _ => ("-", rest.to_vec()),
    };
    let resource = match rest.as_slice() {
        [resource, _name, sub, ..] => format!("{resource}/{sub}"),
        [resource, ..] => (*resource).to_string(),
        [] => String::new(),
    };
    (verb, resource, ns.to_string())
}

/// The requests of `records` counted by [`class`], most first (ties in name order).
pub(super) fn count(records: &[RequestRecord]) -> Vec<((String, String, String), usize)> {
    let mut counts: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for r in records {
        *counts.entry(class(r)).or_default() += 1;
    }
    let mut sorted: Vec<_> = counts.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: http::Method, path: &str, query: &str) -> RequestRecord {
        RequestRecord {
            method,
            path: path.into(),
            query: query.into(),
            status: 200,
            field_manager: None,
            content_type: None,
            user_agent: None,
            user: None,
            denied: None,
        }
    }

    fn key(verb: &str, resource: &str, ns: &str) -> (String, String, String) {
        (verb.into(), resource.into(), ns.into())
    }

    #[test]
    fn requests_are_counted_by_verb_resource_and_namespace_most_first() {
        let records = [
            request(
                http::Method::PATCH,
                "/apis/test.weir.dev/v1/namespaces/team-b/attacks/churn-1/status",
                "",
            ),
            request(
                http::Method::PATCH,
                "/apis/test.weir.dev/v1/namespaces/team-b/attacks/churn-2/status",
                "",
            ),
            request(
                http::Method::GET,
                "/api/v1/namespaces/team-a/configmaps",
                "watch=true",
            ),
            request(http::Method::POST, "/api/v1/namespaces/team-b/events", ""),
            request(http::Method::GET, "/apis/weir.dev/v1/blogs", ""),
            request(http::Method::GET, "/version", ""),
        ];
        assert_eq!(
            count(&records),
            [
                (key("PATCH", "attacks/status", "team-b"), 2),
                (key("GET", "/version", "-"), 1),
                (key("GET", "blogs", "-"), 1),
                (key("POST", "events", "team-b"), 1),
                (key("WATCH", "configmaps", "team-a"), 1),
            ]
        );
    }
}
