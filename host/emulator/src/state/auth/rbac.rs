//! RBAC as kube-apiserver evaluates it: a request's attributes, the rules of the Roles,
//! ClusterRoles and bindings in the store (plus the built-in bootstrap policy), and the
//! message of a denial.

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef, Subject};
use serde::Deserialize;
use serde_json::Value;

use crate::kinds::resources::ResKey;
use crate::store::Store;
use crate::wire::http_util::{form_pairs, is_true};

use super::User;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// What a request asks for, as kube-apiserver's `RequestInfo` parses it from the URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; the
    /// lower-case HTTP method for a non-resource request.
    pub verb: String,
    /// The URL path.
    pub path: String,
    /// `None` for a non-resource request (`/api`, `/healthz`, ...).
    pub resource: Option<ResourceAttributes>,
}

/// The resource part of [`Attributes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// Empty for a cluster-scoped request.
    pub namespace: String,
    /// API group, empty for the core group.
    pub group: String,
    /// Resource (plural).
    pub resource: String,
    /// `status`, `scale`, `finalizers`, `token`, ...; empty if none.
    pub subresource: String,
    /// Object name; empty for a collection.
    pub name: String,
}

impl Attributes {
    /// Parse `method path?query` the way kube-apiserver's `RequestInfoFactory` does.
    pub fn of_request(method: &http::Method, path: &str, query: &str) -> Attributes {
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let non_resource = || Attributes {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
            resource: None,
        };
        let rest = match parts.as_slice() {
            ["api", _version, rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
            _ => return non_resource(),
        };
        let (group, mut rest) = rest;
        let mut verb = match *method {
            http::Method::POST => "create",
            http::Method::GET | http::Method::HEAD => "get",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
        let mut namespace = String::new();
        if rest[0] == "namespaces" && rest.len() > 1 {
            namespace = rest[1].to_string();
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        let at = |i: usize| rest.get(i).map(|s| s.to_string()).unwrap_or_default();
        let (resource, mut name, subresource) = (at(0), at(1), at(2));
        if name.is_empty() && verb == "get" {
            let query = form_pairs(query);
            let watch = query.iter().any(|(k, v)| k == "watch" && is_true(v));
            verb = if watch { "watch" } else { "list" }.to_string();
            if let Some((_, selector)) = query.iter().find(|(k, _)| k == "fieldSelector")
                && let Some(exact) = selector
                    .strip_prefix("metadata.name=")
                    .filter(|n| !n.contains(','))
            {
                name = exact.to_string();
            }
        }
        if name.is_empty() && verb == "delete" {
            verb = "deletecollection".to_string();
        }
        Attributes {
            verb,
            path: path.to_string(),
            resource: Some(ResourceAttributes {
                namespace,
                group: group.to_string(),
                resource,
                subresource,
                name,
            }),
        }
    }

    /// kube-apiserver's denial message: `User "U" cannot VERB resource "R" in API group "G" in
    /// the namespace "NS"` (or `at the cluster scope`), or `cannot VERB path "P"`.
    pub fn denial(&self, user: &str) -> String {
        let verb = &self.verb;
        let Some(r) = &self.resource else {
            return format!("User {user:?} cannot {verb} path {:?}", self.path);
        };
        let resource = r.combined();
        let group = &r.group;
        if r.namespace.is_empty() {
            format!(
                "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
            )
        } else {
            format!(
                "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
                r.namespace
            )
        }
    }
}

impl ResourceAttributes {
    /// `resource` or `resource/subresource`, as rules name it.
    pub fn combined(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// Whether `rule` allows `attrs` (kube's `RuleAllows`).
pub fn rule_allows(rule: &PolicyRule, attrs: &Attributes) -> bool {
    let any = |list: &[String], want: &str| list.iter().any(|x| x == "*" || x == want);
    if !any(&rule.verbs, &attrs.verb) {
        return false;
    }
    let Some(r) = &attrs.resource else {
        let urls = rule.non_resource_urls.as_deref().unwrap_or_default();
        return urls.iter().any(|u| {
            u == "*"
                || *u == attrs.path
                || u.strip_suffix('*')
                    .is_some_and(|prefix| attrs.path.starts_with(prefix))
        });
    };
    if !any(rule.api_groups.as_deref().unwrap_or_default(), &r.group) {
        return false;
    }
    let combined = r.combined();
    let resource_matches = rule
        .resources
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|x| {
            x == "*"
                || *x == combined
                || (!r.subresource.is_empty()
                    && x.strip_prefix("*/") == Some(r.subresource.as_str()))
        });
    let names = rule.resource_names.as_deref().unwrap_or_default();
    resource_matches && (names.is_empty() || names.iter().any(|n| *n == r.name))
}

/// The bootstrap policy every cluster has (kube-apiserver's `system:discovery`,
/// `system:public-info-viewer` and `system:basic-user`), built in rather than stored, and the
/// superuser group `system:masters`.
fn bootstrap_rules(user: &User) -> Vec<(&'static str, PolicyRule)> {
    let strings = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let non_resource = |urls: &[&str]| PolicyRule {
        verbs: vec!["get".into()],
        non_resource_urls: strings(urls),
        ..PolicyRule::default()
    };
    let mut rules = Vec::new();
    let public = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    rules.push(("system:public-info-viewer", non_resource(&public)));
    if user.in_group("system:masters") {
        let all = PolicyRule {
            verbs: vec!["*".into()],
            api_groups: strings(&["*"]),
            resources: strings(&["*"]),
            ..PolicyRule::default()
        };
        let urls = non_resource(&["*"]);
        rules.push(("cluster-admin", all));
        rules.push((
            "cluster-admin",
            PolicyRule {
                verbs: vec!["*".into()],
                ..urls
            },
        ));
    }
    if user.in_group("system:authenticated") {
        rules.push((
            "system:discovery",
            non_resource(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ]),
        ));
        for (group, resources) in [
            (
                "authorization.k8s.io",
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"][..],
            ),
            ("authentication.k8s.io", &["selfsubjectreviews"][..]),
        ] {
            rules.push((
                "system:basic-user",
                PolicyRule {
                    verbs: vec!["create".into()],
                    api_groups: strings(&[group]),
                    resources: strings(resources),
                    ..PolicyRule::default()
                },
            ));
        }
    }
    rules
}

/// The decision for one request: allowed, and by what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether some rule allows the request.
    pub allowed: bool,
    /// kube's reason: `RBAC: allowed by ClusterRoleBinding "B" of ClusterRole "R" to User "U"`;
    /// empty when denied.
    pub reason: String,
}

#[derive(Deserialize)]
struct Binding {
    #[serde(rename = "roleRef")]
    role_ref: RoleRef,
    #[serde(default)]
    subjects: Option<Vec<Subject>>,
}

#[derive(Deserialize)]
struct Role {
    #[serde(default)]
    rules: Option<Vec<PolicyRule>>,
}

/// One source of rules: a binding that applies to the user, and the rules of its role.
struct Grant {
    /// `ClusterRoleBinding "B" of ClusterRole "R"` or `RoleBinding "B/NS" of Role "R"`.
    origin: String,
    subject: String,
    rules: Vec<PolicyRule>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or_default()
}

/// The subject of `binding` that names `user`, described as kube's reason does.
fn matching_subject(binding: &Binding, binding_ns: &str, user: &User) -> Option<String> {
    binding.subjects.as_deref()?.iter().find_map(|s| {
        let ns = s
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(binding_ns);
        let matches = match s.kind.as_str() {
            "User" => user.name == s.name,
            "Group" => user.in_group(&s.name),
            "ServiceAccount" => user.name == format!("system:serviceaccount:{ns}:{}", s.name),
            _ => false,
        };
        matches.then(|| match s.kind.as_str() {
            "ServiceAccount" => format!("ServiceAccount \"{ns}/{}\"", s.name),
            kind => format!("{kind} {:?}", s.name),
        })
    })
}

fn role_rules(store: &Store, kind: &str, ns: &str, name: &str) -> Vec<PolicyRule> {
    let (plural, ns) = match kind {
        "ClusterRole" => ("clusterroles", ""),
        "Role" => ("roles", ns),
        _ => return Vec::new(),
    };
    let key = crate::store::ObjKey {
        res: ResKey {
            group: RBAC_GROUP.into(),
            plural: plural.into(),
        },
        ns: ns.into(),
        name: name.into(),
    };
    store
        .get(&key)
        .and_then(|obj| Role::deserialize(obj).ok())
        .and_then(|r| r.rules)
        .unwrap_or_default()
}

/// The grants that apply to `user` for requests in `namespace` (cluster-wide ones always).
fn grants(store: &Store, user: &User, namespace: &str) -> Vec<Grant> {
    let mut out: Vec<Grant> = bootstrap_rules(user)
        .into_iter()
        .map(|(role, rule)| Grant {
            origin: format!("the bootstrap ClusterRole {role:?}"),
            subject: format!("User {:?}", user.name),
            rules: vec![rule],
        })
        .collect();
    let res = |plural: &str| ResKey {
        group: RBAC_GROUP.into(),
        plural: plural.into(),
    };
    let cluster = store.list(&res("clusterrolebindings"), None);
    let local = if namespace.is_empty() {
        Vec::new()
    } else {
        store.list(&res("rolebindings"), Some(namespace))
    };
    for (obj, kind) in cluster
        .iter()
        .map(|o| (o.value(), "ClusterRoleBinding"))
        .chain(local.iter().map(|o| (o.value(), "RoleBinding")))
    {
        let obj = &obj;
        let Ok(binding) = Binding::deserialize(obj) else {
            continue;
        };
        let binding_ns = meta(obj, "namespace");
        let Some(subject) = matching_subject(&binding, binding_ns, user) else {
            continue;
        };
        let role = &binding.role_ref;
        let name = match kind {
            "RoleBinding" => format!("{}/{binding_ns}", meta(obj, "name")),
            _ => meta(obj, "name").to_string(),
        };
        out.push(Grant {
            origin: format!("{kind} {name:?} of {} {:?}", role.kind, role.name),
            subject,
            rules: role_rules(store, &role.kind, binding_ns, &role.name),
        });
    }
    out
}

/// Whether `user` may do what `attrs` asks, by the RBAC objects in `store`.
pub fn authorize(store: &Store, user: &User, attrs: &Attributes) -> Decision {
    let namespace = attrs
        .resource
        .as_ref()
        .map(|r| r.namespace.as_str())
        .unwrap_or_default();
    for grant in grants(store, user, namespace) {
        if grant.rules.iter().any(|rule| rule_allows(rule, attrs)) {
            return Decision {
                allowed: true,
                reason: format!("RBAC: allowed by {} to {}", grant.origin, grant.subject),
            };
        }
    }
    Decision {
        allowed: false,
        reason: String::new(),
    }
}

/// Every rule that applies to `user` in `namespace` (`SelfSubjectRulesReview`).
pub fn rules_for(store: &Store, user: &User, namespace: &str) -> Vec<PolicyRule> {
    grants(store, user, namespace)
        .into_iter()
        .flat_map(|g| g.rules)
        .collect()
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
