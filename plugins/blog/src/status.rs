//! The Blog's status: which generation was seen and whether enough pods are ready.

use serde::Deserialize;
use weir_guest_sdk::Condition;

use crate::{Blog, BlogStatus};

/// What the status reads of the observed Deployment. Decoding only this, not a whole
/// `Deployment`, keeps the decoders of every Pod field out of the component: a third of its
/// size, and of the compiled code the host keeps per plugin.
#[derive(Debug, Deserialize)]
pub struct Readiness {
    status: Option<ReadyReplicas>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadyReplicas {
    ready_replicas: Option<i32>,
}

/// The status for `blog` given its observed Deployment (none before it is created) and, if its
/// theme is missing, why: that takes precedence over the replicas.
pub fn of(
    blog: &Blog,
    deployment: Option<&Readiness>,
    theme_missing: Option<String>,
) -> BlogStatus {
    let ready = deployment
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    let wanted = blog.spec.replicas;
    let replicas = format!("{ready} of {wanted} replicas ready");
    let (holds, reason, message) = match theme_missing {
        Some(message) => (false, "ThemeNotFound", message),
        None if ready >= wanted => (true, "ReplicasReady", replicas),
        None => (false, "ReplicasNotReady", replicas),
    };
    BlogStatus {
        observed_generation: blog.metadata.generation,
        ready_replicas: ready,
        conditions: vec![Condition::new("Ready", holds, reason, message)],
    }
}
