//! Fault injection: rules that make chosen requests fail, stall, lose their connection or their watch.
//!
//! A [`Rule`] picks requests by verb and resource and fires with a probability; its [`Fault`] is
//! what the client then sees: an error `Status` (500, 503, 409, ...), `429` with `Retry-After`,
//! added latency, a connection reset, a watch closed mid-stream, or a forced compaction (`410
//! Expired`). Tests drive the rules through [`crate::Emulator::faults`]; `weir emulator --faults
//! FILE` reads them from a YAML list ([`Faults::from_yaml`]). The middleware [`inject`] sits
//! inside the request log, so the log shows the status the client received. Faults are answers
//! only: the store is not touched (a 409 or 503 stored nothing, a 410 forgot nothing).
//!
//! One fault is not a rule, because no request triggers it: a restart of the whole emulator,
//! [`crate::Emulator::restart`], which ends every watch and connection, refuses connections for
//! a while, then serves the kept objects again on the same address with an empty watch history
//! (resuming a watch from before it answers 410). The rules and their counts survive it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::wire::apierror::ApiError;
use crate::wire::http_util::{form_pairs, is_true, json_response};

/// A fault file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FaultsError {
    /// The YAML is not a list of rules.
    #[error("fault rules are not a YAML list of rules")]
    Parse(#[source] serde_saphyr::Error),
    /// A rule's probability is outside `0..=1`.
    #[error("rule #{index}: probability {probability} is not between 0 and 1")]
    Probability {
        /// Position of the rule in the list.
        index: usize,
        /// The probability given.
        probability: f64,
    },
}

/// What the API server would be asked: kube-apiserver's request verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH (server-side apply included).
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    Deletecollection,
}

/// What a matching request gets instead of (or on top of) its normal answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Fault {
    /// An error `Status` with this code (500, 503, 409 Conflict, ...); nothing is stored.
    Status {
        /// The HTTP status code.
        code: u16,
    },
    /// `429 TooManyRequests` with `Retry-After: seconds`.
    TooManyRequests {
        /// The `Retry-After` header and `details.retryAfterSeconds`.
        retry_after_secs: u64,
    },
    /// The request is served after this delay.
    Latency {
        /// Added delay, in milliseconds.
        millis: u64,
    },
    /// The connection is closed before a whole response is sent.
    Reset,
    /// A watch is served, then its connection is cut after this delay (watches only).
    CloseWatch {
        /// How long the stream runs first, in milliseconds.
        after_millis: u64,
    },
    /// The request answers `410 Expired`, as after etcd compaction: the client must re-list
    /// (watches and lists only; a watch gets it in the stream, as from kube-apiserver).
    Expired,
}

impl Fault {
    /// The name counted in [`Faults::injected`].
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Status { .. } => "status",
            Fault::TooManyRequests { .. } => "too-many-requests",
            Fault::Latency { .. } => "latency",
            Fault::Reset => "reset",
            Fault::CloseWatch { .. } => "close-watch",
            Fault::Expired => "expired",
        }
    }

    fn applies_to(&self, verb: Verb) -> bool {
        match self {
            Fault::CloseWatch { .. } => verb == Verb::Watch,
            Fault::Expired => matches!(verb, Verb::Watch | Verb::List),
            _ => true,
        }
    }
}

fn always() -> f64 {
    1.0
}

/// One fault rule: which requests, how often, what happens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// Verbs it applies to; empty means every verb.
    #[serde(default)]
    pub verbs: Vec<Verb>,
    /// Resource (plural, e.g. `configmaps`, or `blogs/status` for a subresource); `None` means any.
    #[serde(default)]
    pub resource: Option<String>,
    /// Only requests whose `User-Agent` contains this (one host instance among several);
    /// `None` means any client.
    #[serde(default)]
    pub client: Option<String>,
    /// Chance that a matching request gets the fault, `0..=1` (default 1).
    #[serde(default = "always")]
    pub probability: f64,
    /// Fire at most this many times; `None` means no limit.
    #[serde(default)]
    pub times: Option<u64>,
    /// What happens.
    pub fault: Fault,
}

impl Rule {
    /// A rule that always fires `fault` on `verbs` of `resource`.
    pub fn new(verbs: &[Verb], resource: Option<&str>, fault: Fault) -> Self {
        Rule {
            verbs: verbs.to_vec(),
            resource: resource.map(str::to_owned),
            client: None,
            probability: 1.0,
            times: None,
            fault,
        }
    }

    /// The same rule firing with probability `p`.
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = p;
        self
    }

    /// The same rule for requests of one client only (see [`Rule::client`]).
    pub fn client(mut self, user_agent: &str) -> Self {
        self.client = Some(user_agent.to_owned());
        self
    }

    fn matches(&self, verb: Verb, resource: &str, subresource: Option<&str>, agent: &str) -> bool {
        let resource_ok = match (&self.resource, subresource) {
            (None, _) => true,
            (Some(r), None) => r == resource,
            (Some(r), Some(sub)) => r.split_once('/') == Some((resource, sub)),
        };
        resource_ok
            && self.client.as_deref().is_none_or(|c| agent.contains(c))
            && (self.verbs.is_empty() || self.verbs.contains(&verb))
            && self.fault.applies_to(verb)
            && self.times != Some(0)
    }
}

struct Inner {
    rules: Vec<Rule>,
    rng: StdRng,
    injected: BTreeMap<&'static str, u64>,
}

/// The fault rules of one emulator; cloning shares them.
#[derive(Clone)]
pub struct Faults {
    state: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("rules", &self.lock().rules)
            .finish()
    }
}

impl Default for Faults {
    fn default() -> Self {
        Faults::new(Vec::new())
    }
}

impl Faults {
    /// These rules, with a random seed.
    pub fn new(rules: Vec<Rule>) -> Self {
        Self::seeded(rules, rand::rng().random())
    }

    /// These rules, with the random choices reproducible from `seed`.
    pub fn seeded(rules: Vec<Rule>, seed: u64) -> Self {
        Faults {
            state: Arc::new(Mutex::new(Inner {
                rules,
                rng: StdRng::seed_from_u64(seed),
                injected: BTreeMap::new(),
            })),
        }
    }

    /// Rules from a YAML list (the `weir emulator --faults FILE` format).
    pub fn from_yaml(text: &str) -> Result<Vec<Rule>, FaultsError> {
        let rules: Vec<Rule> = crate::wire::yaml::from_str(text).map_err(FaultsError::Parse)?;
        for (index, r) in rules.iter().enumerate() {
            if !(0.0..=1.0).contains(&r.probability) {
                return Err(FaultsError::Probability {
                    index,
                    probability: r.probability,
                });
            }
        }
        Ok(rules)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the rules (counts of injected faults are kept).
    pub fn set(&self, rules: Vec<Rule>) {
        self.lock().rules = rules;
    }

    /// Removes every rule: requests are served normally from now on.
    pub fn clear(&self) {
        self.lock().rules.clear();
    }

    /// How many faults were injected so far, by [`Fault::name`].
    pub fn injected(&self) -> BTreeMap<&'static str, u64> {
        self.lock().injected.clone()
    }

    /// The fault for this request, if a rule fires (the first matching rule decides).
    fn pick(
        &self,
        verb: Verb,
        resource: &str,
        subresource: Option<&str>,
        agent: &str,
    ) -> Option<Fault> {
        let mut state = self.lock();
        let Inner {
            rules,
            rng,
            injected,
        } = &mut *state;
        let rule = rules
            .iter_mut()
            .find(|r| r.matches(verb, resource, subresource, agent))?;
        if rule.probability < 1.0 && rng.random::<f64>() >= rule.probability {
            return None;
        }
        if let Some(n) = &mut rule.times {
            *n -= 1;
        }
        *injected.entry(rule.fault.name()).or_default() += 1;
        Some(rule.fault.clone())
    }
}

/// The verb, resource and subresource of a resource request; `None` for discovery and the rest.
fn classify(
    method: &http::Method,
    path: &str,
    query: &str,
) -> Option<(Verb, String, Option<String>)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return None,
    };
    let (resource, name, sub) = match rest {
        ["namespaces", _ns, resource, tail @ ..] if !resource.is_empty() => {
            (*resource, tail.first(), tail.get(1))
        }
        [resource, tail @ ..] if !resource.is_empty() => (*resource, tail.first(), tail.get(1)),
        _ => return None,
    };
    let watch = || {
        form_pairs(query)
            .iter()
            .any(|(k, v)| k == "watch" && is_true(v))
    };
    let verb = match *method {
        http::Method::GET if name.is_some() => Verb::Get,
        http::Method::GET if watch() => Verb::Watch,
        http::Method::GET => Verb::List,
        http::Method::POST => Verb::Create,
        http::Method::PUT => Verb::Update,
        http::Method::PATCH => Verb::Patch,
        http::Method::DELETE if name.is_some() => Verb::Delete,
        http::Method::DELETE => Verb::Deletecollection,
        _ => return None,
    };
    Some((verb, resource.to_owned(), sub.map(|s| (*s).to_owned())))
}

fn reason_of(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

fn io_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionReset, "injected fault")
}

fn expired() -> ApiError {
    ApiError::new(
        410,
        "Expired",
        "too old resource version (injected compaction)",
    )
}

/// The middleware: serves a request normally unless a fault rule fires for it.
pub async fn inject(State(faults): State<Faults>, req: Request, next: Next) -> Response {
    let Some((verb, resource, sub)) = classify(
        req.method(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
    ) else {
        return next.run(req).await;
    };
    let agent = req
        .headers()
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(fault) = faults.pick(verb, &resource, sub.as_deref(), agent) else {
        return next.run(req).await;
    };
    tracing::debug!(?verb, %resource, ?fault, "injecting a fault");
    match fault {
        Fault::Status { code } => {
            let reason = reason_of(code);
            ApiError::new(code, reason, format!("injected fault: {reason}")).into_response()
        }
        Fault::TooManyRequests { retry_after_secs } => {
            let status = ApiError::new(429, "TooManyRequests", "injected fault: slow down")
                .with_details(json!({"retryAfterSeconds": retry_after_secs}));
            let mut resp = status.into_response();
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, retry_after_secs.into());
            resp
        }
        Fault::Latency { millis } => {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            next.run(req).await
        }
        Fault::Reset => {
            // Headers go out, then the body fails: hyper closes the connection mid-response.
            let body = futures::stream::once(async { Err::<bytes::Bytes, _>(io_error()) });
            Response::builder()
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Body::from_stream(body))
                .unwrap_or_else(|_| Response::new(Body::empty()))
        }
        Fault::CloseWatch { after_millis } => {
            let (parts, body) = next.run(req).await.into_parts();
            let cut = tokio::time::sleep(Duration::from_millis(after_millis));
            let stream = body
                .into_data_stream()
                .take_until(cut)
                .chain(futures::stream::once(async {
                    Err(axum::Error::new(io_error()))
                }));
            Response::from_parts(parts, Body::from_stream(stream))
        }
        Fault::Expired => {
            if verb == Verb::Watch {
                // kube-apiserver answers a watch from a compacted revision in the stream.
                let event = json!({"type": "ERROR", "object": expired().to_status()});
                json_response(http::StatusCode::OK, &event)
            } else {
                expired().into_response()
            }
        }
    }
}

#[cfg(test)]
#[path = "faults_tests.rs"]
mod tests;
