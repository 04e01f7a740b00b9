//! Who is calling and what they may do, when [`crate::EmulatorConfig::secure`] is on: HTTPS with
//! a generated CA, bearer tokens (a static admin token, ServiceAccount tokens from the
//! TokenRequest API) and RBAC.
//!
//! `tls` makes the certificates and the listener, `rbac` parses a request's attributes and
//! evaluates the Roles and bindings in the store; this file keeps the tokens and turns one into
//! a [`User`].

pub mod rbac;
pub mod tls;

use std::collections::HashMap;
use std::sync::Mutex;

use rand::RngExt;
use serde_json::{Value, json};

use crate::kinds::resources::ResKey;
use crate::store::{ObjKey, Store};

pub use tls::{Certificates, TlsError, TlsListener};

/// An authenticated (or anonymous) caller, as kube-apiserver's `user.Info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// `system:serviceaccount:NS:NAME`, the admin's name, or `system:anonymous`.
    pub name: String,
    /// Groups: `system:authenticated`, `system:serviceaccounts:NS`, `system:masters`, ...
    pub groups: Vec<String>,
}

/// The admin user of the static token, in the superuser group.
pub const ADMIN: &str = "system:admin";

impl User {
    /// The emulator's admin: what every caller is without [`crate::EmulatorConfig::secure`].
    pub fn admin() -> User {
        User {
            name: ADMIN.into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    /// A request without credentials.
    pub fn anonymous() -> User {
        User {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    fn service_account(namespace: &str, name: &str) -> User {
        User {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// What a ServiceAccount token stands for.
#[derive(Clone, Debug)]
struct Issued {
    namespace: String,
    name: String,
    /// The ServiceAccount's uid when issued: a token dies with its account, as a bound token does.
    uid: String,
    expires: k8s_openapi::jiff::Timestamp,
}

/// The emulator's certificates and tokens.
pub struct Auth {
    /// The CA and serving certificate.
    pub certificates: Certificates,
    admin_token: String,
    issued: Mutex<HashMap<String, Issued>>,
}

fn random_token(prefix: &str) -> String {
    let bytes: [u8; 24] = rand::rng().random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

/// Lifetime of a requested token without `spec.expirationSeconds` (kube-apiserver: 1 h).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime kube-apiserver issues (10 min).
const MIN_EXPIRATION_SECONDS: i64 = 600;

impl Auth {
    /// New certificates and a new admin token.
    pub fn new() -> Result<Auth, TlsError> {
        Ok(Auth {
            certificates: Certificates::generate()?,
            admin_token: random_token("weir-admin-"),
            issued: Mutex::new(HashMap::new()),
        })
    }

    /// The static token of [`User::admin`].
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The user a bearer token stands for, or `None` for a token this emulator did not issue,
    /// one that expired, or one whose ServiceAccount is gone.
    pub fn authenticate(&self, token: &str, store: &Store) -> Option<User> {
        if token == self.admin_token {
            return Some(User::admin());
        }
        let issued = self
            .issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .cloned()?;
        if issued.expires < k8s_openapi::jiff::Timestamp::now() {
            return None;
        }
        let account = store.get(&service_account_key(&issued.namespace, &issued.name))?;
        (account["metadata"]["uid"].as_str() == Some(issued.uid.as_str()))
            .then(|| User::service_account(&issued.namespace, &issued.name))
    }

    /// Answer `POST .../namespaces/NS/serviceaccounts/NAME/token`: a `TokenRequest` with a new
    /// token in its status, or `None` if the ServiceAccount does not exist.
    pub fn token_request(
        &self,
        store: &Store,
        namespace: &str,
        name: &str,
        body: &[u8],
    ) -> Option<Value> {
        let account = store.get(&service_account_key(namespace, name))?;
        let uid = account["metadata"]["uid"].as_str().unwrap_or_default();
        let mut request: Value = serde_json::from_slice(body).unwrap_or_else(|_| json!({}));
        if !request.is_object() {
            request = json!({});
        }
        let seconds = request["spec"]["expirationSeconds"]
            .as_i64()
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS)
            .max(MIN_EXPIRATION_SECONDS);
        let expires = k8s_openapi::jiff::Timestamp::now()
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(k8s_openapi::jiff::Timestamp::MAX);
        let token = random_token("weir-sa-");
        self.issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                token.clone(),
                Issued {
                    namespace: namespace.into(),
                    name: name.into(),
                    uid: uid.into(),
                    expires,
                },
            );
        request["apiVersion"] = json!("authentication.k8s.io/v1");
        request["kind"] = json!("TokenRequest");
        request["metadata"] = json!({"name": name, "namespace": namespace, "creationTimestamp": crate::wire::object::now_rfc3339()});
        request["spec"]["expirationSeconds"] = json!(seconds);
        if request["spec"].get("audiences").is_none() {
            request["spec"]["audiences"] = json!(["https://kubernetes.default.svc.cluster.local"]);
        }
        request["status"] = json!({
            "token": token,
            "expirationTimestamp": format!("{}", expires.strftime("%Y-%m-%dT%H:%M:%SZ")),
        });
        Some(request)
    }
}

fn service_account_key(namespace: &str, name: &str) -> ObjKey {
    ObjKey {
        res: ResKey {
            group: String::new(),
            plural: "serviceaccounts".into(),
        },
        ns: namespace.into(),
        name: name.into(),
    }
}
