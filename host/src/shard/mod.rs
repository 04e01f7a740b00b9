//! Sharding: the parents spread across every active replica, each caching and reconciling only its share.
//!
//! Off by default (`weir run --shard` turns it on); without it one replica, or the leader of
//! several, reconciles everything ([`crate::leader`]). With it, in four parts:
//!
//! 1. **Membership** ([`members`]): each replica holds its own Lease `weir-shard-<identity>` in
//!    the Lease namespace, with the leader election's code. The members are the shard Leases
//!    that are held and fresh; a stopping replica releases its Lease, a killed one's expires.
//! 2. **Assignment** ([`ring`], [`coordinator`]): a consistent-hash ring with virtual nodes
//!    over the members, keyed by the parent's UID. The leader (the existing election) is the
//!    coordinator: it labels each parent `shard.weir.dev/owner=<member>` when it has no owner,
//!    when its owner is gone, or (after a drain) when the ring moved it. The host stamps the
//!    same label on every child it writes ([`follow_parent`]), so children follow their parent.
//! 3. **Each replica watches only its share**: the parent and child informers list and watch
//!    with the label selector `shard.weir.dev/owner=<self>` ([`selector`]), so a replica's cache
//!    and queue hold about 1/N of the parents and their children. Related objects (read, never
//!    owned: a theme ConfigMap, posts selected by label) are not sharded: every replica watches
//!    them whole, in informers of their own (one per kind, shared by its plugins), since any
//!    parent may select any of them. Of a kind a plugin both owns and relates (the Blog owns
//!    its page ConfigMap and reads a theme ConfigMap), its related objects are those no parent
//!    owns, watched with the selector `!shard.weir.dev/owner` ([`unowned`]): another replica's
//!    children are cached by that replica alone, so a page is never read as another Blog's
//!    theme. This is the one thing a plugin reads differently when sharded by labels; unsharded
//!    (or by `shardSelector`), the kind is one informer that shows every object.
//! 4. **Handover without two writers**: the coordinator never moves a parent whose owner is
//!    alive directly. It adds `shard.weir.dev/drain`; the owner's queue reconciles the key
//!    after any reconcile of it in flight, and instead of reconciling it removes both labels
//!    ([`acknowledge_drain`], conditional on the `resourceVersion` it read), and from then on
//!    its informer no longer shows the parent. Only an unowned parent is assigned. A parent
//!    whose owner's Lease expired is assigned at once: the owner's writes go through a
//!    [`crate::fence::Fence`] on its *own* shard Lease, which closes before that Lease can
//!    expire, so it writes nothing once another replica may own the parent.
//!
//! Both modes move shares in one placement loop ([`placement`]): a pass every
//! [`ShardConfig::assign_every`], and one at the moment a member's Lease runs out. By labels the
//! pass is the coordinator's, run only while this replica leads; server-side it is each replica's
//! own ([`share::Follower`]).
//!
//! Server-side sharding (KEP-5866's `shardSelector`, alpha in Kubernetes 1.36) lets a replica
//! watch its share without the label: when [`server_side`] finds the API server offering it, no
//! coordinator runs and nothing is labelled; each replica computes the ring itself and watches
//! its parents by selector, handing parents over through views published on the shard Leases
//! ([`share`]). Its children are then watched whole. [`Mode`] says which way a replica runs.
//!
//! The coordinator's own writes go through the leader's fence. Known limits of this first
//! slice: children left behind by an old owner that the new owner no longer wants are not
//! pruned (the new owner's cache never shows them); the coordinator lists parents' metadata
//! rather than watching them (every parent when something may have moved one, at least every
//! 30 s; otherwise the parents without an owner). The leader's `/metrics` and `/plugins` show the
//! members, the parents each owns and the moves; every replica's `/plugins` names its member
//! ([`metrics`]).

pub mod coordinator;
pub mod gate;
pub mod members;
pub mod metrics;
mod parents;
pub mod placement;
pub mod ring;
pub mod server_side;
pub mod share;

use std::time::Duration;

use kube::Client;
use serde_json::{Value, json};

use crate::answer::DesiredChild;
use crate::plugin::ResourceKind;
use crate::runtime::Narrowing;
use crate::runtime::cache::CachedObject;

/// The label naming the member that owns a parent (and, stamped by it, the parent's children).
pub const OWNER_LABEL: &str = "shard.weir.dev/owner";
/// The label asking the owner of a parent to let go of it.
pub const DRAIN_LABEL: &str = "shard.weir.dev/drain";
/// The field manager of sharding's own writes: the coordinator's labels, a member's view.
pub const FIELD_MANAGER: &str = "weir-shard";

/// How a sharded replica selects its share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The coordinator labels parents with their owner; each replica watches its label.
    Labels,
    /// The API server filters by `shardSelector`; each replica watches its ring ranges
    /// ([`share`]), and nothing is labelled.
    ServerSide,
}

impl Mode {
    /// `labels` or `server-side`, as `/metrics` and `/plugins` show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Labels => "labels",
            Mode::ServerSide => "server-side",
        }
    }
}

/// How this replica takes part in sharding.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// This replica's member name (its Lease holder identity and its owner label value).
    pub identity: String,
    /// Namespace of the shard Leases.
    pub namespace: String,
    /// Seconds a shard Lease is valid after its last renewal.
    pub duration_secs: u64,
    /// Seconds before expiry at which its holder renews it.
    pub grace_secs: u64,
    /// How often the coordinator places parents.
    pub assign_every: Duration,
}

impl ShardConfig {
    /// The leader Lease's defaults (15 s, renewed 5 s before expiry), a pass every second.
    pub fn new(identity: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            namespace: namespace.into(),
            duration_secs: 15,
            grace_secs: 5,
            assign_every: Duration::from_secs(1),
        }
    }

    /// This configuration with a shard Lease of `duration_secs`, renewed as
    /// [`crate::leader::lease_grace`] says, and a placement pass every eighth of it (between 200 ms
    /// and a second), so a killed member's parents are placed soon after its Lease runs out.
    #[must_use]
    pub fn with_lease_duration(self, duration_secs: u64) -> Self {
        let eighth = Duration::from_millis(duration_secs.saturating_mul(125));
        Self {
            duration_secs,
            grace_secs: crate::leader::lease_grace(duration_secs),
            assign_every: eighth.clamp(Duration::from_millis(200), Duration::from_secs(1)),
            ..self
        }
    }
}

/// The identity cannot name a member.
#[derive(Debug, thiserror::Error)]
#[error(
    "the identity {0:?} cannot be a shard owner label value (at most 63 letters, digits, '-', '_', '.', starting and ending alphanumeric)"
)]
pub struct IdentityError(pub String);

/// Checks that `identity` can be the value of [`OWNER_LABEL`].
pub fn check_identity(identity: &str) -> Result<(), IdentityError> {
    let bytes = identity.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    let ok = !bytes.is_empty()
        && bytes.len() <= 63
        && edge(bytes.first())
        && edge(bytes.last())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(IdentityError(identity.to_owned()))
    }
}

/// The label selector of `identity`'s share.
pub fn selector(identity: &str) -> String {
    format!("{OWNER_LABEL}={identity}")
}

/// The label selector of the objects no member owns: neither a parent placed on a replica nor a
/// child stamped by its parent's owner.
pub fn unowned() -> String {
    format!("!{OWNER_LABEL}")
}

/// A sharded replica's gate: by labels, or (with `share`, sharded server-side) by the served ranges.
pub fn gate(share: Option<&share::Share>) -> std::sync::Arc<dyn crate::reconcile::gate::Gate> {
    match share {
        None => std::sync::Arc::new(gate::Labels),
        Some(share) => std::sync::Arc::new(gate::Ranges(share.clone())),
    }
}

/// How `identity`'s informers narrow its parents and children to its share: by its owner label,
/// or (sharded server-side) through `share`'s selecting client.
pub fn narrowing(identity: &str, share: Option<&share::Share>, client: &kube::Client) -> Narrowing {
    match share {
        Some(share) => Narrowing::Client {
            client: share.client(client),
            changes: share.changes(),
        },
        None => Narrowing::Labels {
            mine: selector(identity),
            unowned: unowned(),
        },
    }
}

/// Stamps the parent's owner label on every child, so the child lands in the same share (and a
/// child still labelled for the previous owner is rewritten by the new one).
pub fn follow_parent(children: &mut [DesiredChild], parent: &CachedObject) {
    let Some(owner) = parent.label(OWNER_LABEL) else {
        return;
    };
    for child in children {
        let Some(meta) = child
            .manifest
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(OWNER_LABEL.into(), json!(owner));
        }
    }
}

/// Whether the coordinator asked this replica to let go of `parent`.
pub fn is_draining(parent: &CachedObject) -> bool {
    parent.label(DRAIN_LABEL).is_some()
}

/// Lets go of a drained parent: removes its owner and drain labels, only if it is still as
/// cached (a `409` means it changed since, and a later event says how).
pub async fn acknowledge_drain(
    client: &Client,
    kind: &ResourceKind,
    parent: &CachedObject,
) -> Result<(), kube::Error> {
    let meta = kube::api::ObjectMeta {
        name: Some(parent.name().to_owned()),
        namespace: parent.namespace().map(str::to_owned),
        resource_version: parent.resource_version().map(str::to_owned),
        ..Default::default()
    };
    let labels = json!({OWNER_LABEL: null, DRAIN_LABEL: null});
    parents::relabel(client, kind, &meta, labels).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_must_fit_a_label_value() {
        for good in ["weir-0", "weir-7c9f8d-x2k4p", "a", "a.b_c"] {
            assert!(check_identity(good).is_ok(), "{good}");
        }
        for bad in ["", "-weir", "weir-", "weir/0", &"x".repeat(64)] {
            assert!(check_identity(bad).is_err(), "{bad}");
        }
    }

    fn parent(labels: Value) -> CachedObject {
        let obj: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "weir.dev/v1", "kind": "Blog",
            "metadata": {"name": "b", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "labels": labels}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
    }

    fn child(manifest: Value) -> DesiredChild {
        DesiredChild {
            kind: ResourceKind {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
                namespaced: true,
            },
            key: crate::runtime::ObjectKey {
                namespace: Some("ns".into()),
                name: "b-page".into(),
            },
            manifest,
            live: None,
            cluster: None,
        }
    }

    #[test]
    fn children_carry_their_parents_owner_label_beside_their_own_labels() {
        let mut children = vec![
            child(json!({"metadata": {"name": "b-page", "labels": {"app": "b"}}})),
            child(json!({"metadata": {"name": "b"}})),
        ];
        follow_parent(&mut children, &parent(json!({OWNER_LABEL: "weir-1"})));
        assert_eq!(
            children[0].manifest["metadata"]["labels"],
            json!({"app": "b", OWNER_LABEL: "weir-1"})
        );
        assert_eq!(
            children[1].manifest["metadata"]["labels"],
            json!({OWNER_LABEL: "weir-1"})
        );
    }

    #[test]
    fn an_unassigned_parent_stamps_nothing_and_a_drain_label_is_seen() {
        let mut children = vec![child(json!({"metadata": {"name": "b"}}))];
        follow_parent(&mut children, &parent(json!({})));
        assert!(children[0].manifest["metadata"].get("labels").is_none());
        assert!(!is_draining(&parent(json!({OWNER_LABEL: "weir-1"}))));
        assert!(is_draining(&parent(
            json!({OWNER_LABEL: "weir-1", DRAIN_LABEL: "true"})
        )));
    }

    #[test]
    fn the_selector_names_the_owner_label() {
        assert_eq!(selector("weir-1"), "shard.weir.dev/owner=weir-1");
    }
}
