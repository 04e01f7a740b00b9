//! The runtime floor: informers, the packed cache, the work queue, the related-object index and
//! the echoes of the host's own writes, for one cluster connection.
//!
//! Nothing here knows a controller, a plugin's rollout, sharding or the command line; everything
//! above builds on it, as kube-runtime's `watcher`, `reflector` and `scheduler` stand below its
//! `Controller`. One instance serves one cluster connection (its client, its informer registry):
//! a second cluster is a second instance, not a mode of this one.
//!
//! Reading order: [`ObjectKey`] (what everything is keyed by), [`informers`] (one watch and one
//! store per kind, shared by every subscriber), [`cache`] (the packed store and its indexes),
//! [`cap`] (a bound on what one registry's stores hold together, and their refill),
//! [`queue`] (dedupe, backoff, the hot-loop guard), [`related`] (which parents selected an
//! object), [`echoes`] (a watch event that is only the echo of the host's own write).

pub mod cache;
pub mod cap;
pub mod echoes;
pub mod informers;
mod key;
pub mod queue;
pub mod related;
pub(crate) mod sweeps;

pub use self::cap::{Cap, Fill, Short, Stores};
pub use self::informers::{Informers, MapToParent, Narrowing, Route, Scope, Subscription, Target};
pub use self::key::ObjectKey;
pub use self::queue::{Cause, Finish, Queue, QueueConfig, TokenBucket};
