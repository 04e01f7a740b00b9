//! The emulator's public settings and the record of one served request.

use std::path::PathBuf;
use std::time::Duration;

use crate::state::faults::Faults;
use crate::wire::http_util::{form_pairs, is_true};

/// Workload simulation, the way KWOK fakes controllers and kubelets: Deployments, ReplicaSets,
/// Jobs, StatefulSets and DaemonSets get Pods, Services get Endpoints and EndpointSlices.
#[derive(Clone, Debug)]
pub struct WorkloadSimulation {
    /// How long a new Pod stays Pending before it is Running and Ready (one with
    /// `restartPolicy` `Never` or `OnFailure`: Succeeded);
    /// a Deployment is Available once its Pods are.
    pub ready_after: Duration,
}

/// How to start an emulator.
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// Workload simulation; `None` runs no controllers (no Pods, no status written).
    pub workloads: Option<WorkloadSimulation>,
    /// How many events the watch history keeps; older resourceVersions answer 410.
    pub watch_history: usize,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// How often watches with `allowWatchBookmarks=true` receive a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Fault rules (none by default); the handle stays live: [`crate::Emulator::faults`].
    pub faults: Faults,
    /// A state file: loaded at [`crate::Emulator::start`] when it exists, written by
    /// [`crate::Emulator::shutdown`], [`crate::Emulator::restart`] and [`crate::Emulator::save`]
    /// (not after every write). `None` keeps the state in memory only.
    pub state_file: Option<PathBuf>,
    /// Serve HTTPS with a CA generated at start, authenticate bearer tokens (a static admin
    /// token, ServiceAccount tokens from the TokenRequest API; a wrong one gets 401) and
    /// authorize every request by RBAC (403). Off: plain HTTP, and every caller is an admin.
    pub secure: bool,
    /// How many of the latest requests the request log keeps ([`crate::Emulator::requests`]);
    /// older ones are dropped. 0 keeps none.
    pub request_log: usize,
    /// Serve `shardSelector` on list and watch, as kube-apiserver does with its alpha
    /// `ShardedListAndWatch` feature gate on (see the crate's `shard_selector` module). Off by
    /// default, as the gate is: the parameter is then ignored.
    pub sharded_list_watch: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            workloads: None,
            watch_history: 10_000,
            port: 0,
            bookmark_interval: Duration::from_secs(1),
            faults: Faults::default(),
            state_file: None,
            secure: false,
            request_log: 100_000,
            sharded_list_watch: false,
        }
    }
}

/// One request the emulator served, for tests to assert on.
#[derive(Clone, Debug)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: http::Method,
    /// URL path.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// Response status code.
    pub status: u16,
    /// `fieldManager` query parameter, if given.
    pub field_manager: Option<String>,
    /// Request Content-Type, if given.
    pub content_type: Option<String>,
    /// `User-Agent` of the client: which host instance sent the request.
    pub user_agent: Option<String>,
    /// Who sent it (`system:serviceaccount:NS:NAME`, ...); `None` for a request that failed
    /// authentication.
    pub user: Option<String>,
    /// The message of a 401 or 403 answer (`... is forbidden: User "U" cannot list resource
    /// "configmaps" in API group "" in the namespace "default"`).
    pub denied: Option<String>,
}

impl RequestRecord {
    /// Whether the request could change state (POST, PUT, PATCH, DELETE).
    pub fn is_write(&self) -> bool {
        matches!(
            self.method,
            http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
        )
    }

    /// Whether the request opened a watch.
    pub fn is_watch(&self) -> bool {
        self.method == http::Method::GET
            && form_pairs(&self.query)
                .iter()
                .any(|(k, v)| k == "watch" && is_true(v))
    }
}
