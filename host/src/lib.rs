//! Weir: a Kubernetes reconcile host whose reconcile logic comes as sandboxed
//! WebAssembly components.
//!
//! The host owns every conversation with the API server; a plugin only maps
//! *parent + observed children* to *desired children + status + requeue*.
//! For each plugin the data path is, in order (all wired in one function,
//! `Controller::reconcile` in [`reconcile`]):
//!
//! 1. [`reconcile::source`]: watch events on the parent kind (For) and on the
//!    child kinds (Owns, mapped to their controller owner) become keys.
//! 2. [`reconcile::queue`]: keys dedupe, never run twice at once, back off
//!    exponentially on errors, and a key that keeps writing is throttled as a
//!    hot loop.
//! 3. [`reconcile::cache`]: the parent and its children are read from the
//!    reflector stores, children through an owner-UID index (the seed's Indexer).
//! 4. [`reconcile::invoke`]: the plugin runs in a fresh [`plugin::Plugin`]
//!    instance under a CPU deadline and a memory cap, in its own span.
//! 5. [`answer::judge`] and [`reconcile::apply`]: the answer is judged, purely
//!    (declared kinds, the parent's namespace, nobody else's objects; children stamped,
//!    status merged), applied server-side only where it differs from the cache, and stale
//!    children pruned. `weir test`, `weir record` and the rollout's comparison call the same judge.
//! 6. [`reconcile::status`]: the merged status (`observedGeneration`, the `Ready` and
//!    `Reconciled` conditions) patched where it differs, finalizers and Events.
//!
//! Around it: [`manager`] is the one host every entry point starts (the informer
//! registry shared by all plugins, leader election with [`fence`] as its write-time
//! gate, [`shard`]ing across replicas, the operations server, the plugin source); [`plugin`] loads and sandboxes components, [`hotload`] follows
//! a plugins directory, [`cluster`] pulls components from OCI registries (the `Plugin`
//! resource, `weir push`), [`client`] builds the API client (rate limit, pushback),
//! [`run`] is `weir run`, [`dev`] is `weir dev` on the embedded emulator (crate
//! `weir-emulator`), [`fixtures`] is `weir test`, [`scaffold`] is `weir new`.

pub mod answer;
mod chain;
pub mod client;
pub mod cluster;
#[cfg(feature = "dev")]
pub mod dev;
pub mod fence;
pub mod fixtures;
pub mod hotload;
pub mod key;
pub mod leader;
pub mod listing;
pub mod manager;
pub mod metrics;
pub mod plugin;
pub mod policy;
pub mod rbac;
pub mod reconcile;
pub mod record;
pub mod rollout;
pub mod run;
pub mod scaffold;
pub mod server;
pub mod shard;
pub mod yaml;

// Property tests of answer validation, status merge and the fixture parser.
#[cfg(test)]
mod properties;

pub use manager::{Manager, ManagerConfig, PluginSource};
pub use plugin::{Engine, EngineConfig, Limits, Plugin};
pub use reconcile::{Controller, ControllerConfig};
