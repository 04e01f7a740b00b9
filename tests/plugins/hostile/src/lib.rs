//! A hostile plugin: everything a plugin author could try against the host, one attack per parent.
//!
//! The parent kind is `Attack` (`test.weir.dev/v1`); `spec.attack` picks the attack, `spec.target`
//! names what it aims at (an object name, a namespace, an address). Attacks that are a claim in
//! `describe()` are separate builds (cargo features, see [`describe`]). The host must contain
//! every one: refuse it, cap it, throttle it or stop it, and keep serving the other plugins.
//!
//! | `spec.attack`      | what `reconcile` (or `finalize`) does                                 |
//! |--------------------|-----------------------------------------------------------------------|
//! | `token-secret`     | asks for a `kubernetes.io/service-account-token` Secret               |
//! | `read-secret`      | owns a Secret; publishes whatever it observes of it in a ConfigMap and its status |
//! | `user-secret`      | asks for a Secret named `spec.target` (the user's), with its own data |
//! | `sleep`            | `thread::sleep` for a minute (blocks in WASI, not in wasm code)       |
//! | `spin`             | loops forever                                                         |
//! | `huge-error`       | fails with a 1 MiB message                                            |
//! | `log-flood`        | logs 20,000 lines of 1 KiB                                            |
//! | `log-forge`        | logs newlines followed by a line shaped like the host's own           |
//! | `stdio`            | writes 1 MiB to stdout and to stderr                                  |
//! | `requeue-zero`     | answers `after(0)` every time                                         |
//! | `requeue-now`      | answers `now` every time                                              |
//! | `finalize-zero`    | `finalize` answers `again-after(0)` every time                        |
//! | `churn`            | a ConfigMap of a new name on every call, requeue `after(0)`           |
//! | `huge-status`      | a 3.5 MB status                                                       |
//! | `huge-answer`      | a child of 8 MiB (over the response cap)                              |
//! | `conditions-flood` | 2,000 conditions in its status, one a forged `Ready` with a 64 KiB message |
//! | `child-finalizers` | a ConfigMap with a finalizer                                          |
//! | `forge-owner`      | a ConfigMap with a forged owner reference and parent-uid label        |
//! | `elsewhere`        | a ConfigMap in namespace `spec.target`                                |
//! | `adopt`            | a ConfigMap named `spec.target` (someone else's)                      |
//! | `duplicate`        | the same ConfigMap twice                                              |
//! | `invalid-name`     | a ConfigMap named `Not_A_Name`                                        |
//! | `many`             | 300 ConfigMaps                                                        |
//! | `invalid-json`     | a child that is not JSON                                              |
//! | `memory`           | allocates until allocation fails                                      |
//! | `trap`             | panics                                                                |
//! | `env`              | reads the environment and arguments; reports them in its status      |
//! | `fs`               | opens, lists and creates files; reports the outcomes in its status   |
//! | `net`              | connects to `spec.target` over TCP and binds UDP; reports the outcomes |
//!
//! Every attack that gets as far as an answer also asks for a ConfigMap `<name>` holding
//! `{attack: <attack>}`, unless the attack is about its children.

#![cfg(target_arch = "wasm32")] // a component only: natively the crate is empty

#[allow(
    unsafe_code,
    missing_docs,
    reason = "wit-bindgen generates unsafe FFI glue without docs"
)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit",
        world: "reconciler",
    });

    use super::Hostile;
    export!(Hostile);
}

mod attacks;
mod describe;
mod probes;

use bindings::weir::reconciler::types::ErrorKind;
use bindings::{
    FinalizeRequest, FinalizeResponse, Guest, PluginInfo, ReconcileError, ReconcileRequest,
    ReconcileResponse,
};
use serde_json::Value;

struct Hostile;

fn permanent(message: String) -> ReconcileError {
    ReconcileError {
        kind: ErrorKind::Permanent,
        message,
    }
}

fn parse(text: &str) -> Result<Value, ReconcileError> {
    serde_json::from_str(text).map_err(|e| permanent(format!("parent is not JSON: {e}")))
}

impl Guest for Hostile {
    fn describe() -> PluginInfo {
        describe::info()
    }

    fn reconcile(request: ReconcileRequest) -> Result<ReconcileResponse, ReconcileError> {
        let parent = parse(&request.parent)?;
        attacks::reconcile(&parent, &request.children)
    }

    fn finalize(request: FinalizeRequest) -> Result<FinalizeResponse, ReconcileError> {
        let parent = parse(&request.parent)?;
        Ok(match parent["spec"]["attack"].as_str() {
            Some("finalize-zero") => FinalizeResponse::AgainAfter(0),
            _ => FinalizeResponse::Complete,
        })
    }
}
