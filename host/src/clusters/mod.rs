//! Member clusters engaged beside the host's own: a live source of kubeconfigs, a runtime per cluster.
//!
//! The host's own cluster is `local` ([`crate::plugin::LOCAL_CLUSTER`]): its parents live there.
//! `weir run --clusters DIR` adds member clusters, one kubeconfig file each, named by the file's
//! stem ([`dir`]); `weir run --cluster-secrets SELECTOR` adds one per Secret of the host's
//! namespace the selector matches, named by the Secret and labelled with its labels
//! ([`secrets`]). Either way [`seen`] turns what the source holds into changes. A cluster is
//! engaged when it appears and released when it goes ([`source`]): engaged, it has its own client (its own rate limit) and its own runtime
//! instance ([`engaged`]: an informer registry over that client, watching only the kinds the
//! served plugins may place there, on the same packed cache); released, its watches stop and
//! its cache is freed. [`gauges`] shows them on `/metrics`.
//!
//! What crosses into the controller is one handle, [`Engaged`]: the judge asks it whether a
//! child's cluster is engaged and reads a member's live object of a child's name; a parent's
//! reconcile reads its children in each member from it (found by [`PARENT_UID_LABEL`]), hands
//! them to a 0.4.0 plugin with their cluster and writes them through the member's client
//! (`crate::reconcile::members`); a controller listens to its child kinds in every member, so
//! that a change of a marked child there enqueues its parent ([`Engaged::listen`]).
//!
//! A 0.4.0 plugin's selection may read related objects in a member
//! (`crate::reconcile::related`): its related kinds are watched in each engaged member the
//! policy grants it (the grant that lets it place children there, by name or by the member's
//! labels; a relabelled member is heard again or no longer), on the member's runtime instance
//! and packed cache ([`Engaged::listen_in`]); a selection is read from that cache,
//! Secrets as at home, and a change there enqueues the parents that selected it, through the
//! kind's related index keyed with the cluster.
//!
//! What a member's kubeconfig may say: [`kubeconfig`] (inline credentials only; no `exec`, no
//! `auth-provider`, no file paths).
//!
//! A changed kubeconfig for the same server rotates the cluster's credentials in place
//! ([`crate::client::Rotating`]): its watches resume from their resourceVersion under the new
//! credentials, and nothing is listed again.

pub mod dir;
pub mod engaged;
pub mod gauges;
pub mod kubeconfig;
pub mod secrets;
pub mod seen;
pub mod source;

pub use self::engaged::{ClusterRow, Engaged, Listening, MemberObject, PARENT_UID_LABEL, RouteIn};
pub use self::gauges::ClusterGauges;
pub use self::secrets::SecretsConfig;
pub use self::seen::Labels;
pub use self::source::{Config, Members, SourceError, Watched};
