//! What the coordinator shows on `/metrics`: the members, the parents each owns, the moves.
//!
//! Only the leader places parents, so only the leader's values move; a replica that never led
//! shows zeros.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A member's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberLabels {
    /// The member's identity.
    pub member: String,
}

/// A move's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MoveLabels {
    /// `assigned` (an unowned parent, or one of a gone member) or `drained` (asked to let go).
    pub step: String,
}

/// The coordinator's metrics (cheap to clone: the values are shared).
#[derive(Clone, Debug, Default)]
pub struct ShardMetrics {
    members: Gauge,
    owned: Family<MemberLabels, Gauge>,
    moves: Family<MoveLabels, Counter>,
    /// The members `owned` has a series for.
    shown: Arc<Mutex<Vec<String>>>,
}

impl ShardMetrics {
    /// Adds these metrics to `registry` (the host's, prefixed `weir_`: `weir_shard_members`,
    /// `weir_shard_owned_parents{member}`, `weir_shard_moves_total{step}`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "shard_members",
            "Members (held, fresh shard Leases) at the coordinator's last pass",
            self.members.clone(),
        );
        registry.register(
            "shard_owned_parents",
            "Parents labelled for each member at the coordinator's last pass",
            self.owned.clone(),
        );
        registry.register(
            "shard_moves",
            "Parents the coordinator assigned, and parents it asked their owner to drain",
            self.moves.clone(),
        );
    }

    /// Shows one finished pass: the members and, by member, the parents it owns now.
    pub(super) fn passed(&self, members: usize, owned: &std::collections::BTreeMap<String, i64>) {
        self.members.set(i64::try_from(members).unwrap_or(i64::MAX));
        // Members gone since the last pass lose their series; the others are set in place (a
        // scrape meanwhile never sees a member missing).
        let mut shown = self.shown.lock().unwrap_or_else(PoisonError::into_inner);
        for gone in shown.iter().filter(|m| !owned.contains_key(*m)) {
            self.owned.remove(&MemberLabels {
                member: gone.clone(),
            });
        }
        *shown = owned.keys().cloned().collect();
        for (member, n) in owned {
            self.owned
                .get_or_create(&MemberLabels {
                    member: member.clone(),
                })
                .set(*n);
        }
    }

    /// Counts one move (`assigned` or `drained`).
    pub(super) fn moved(&self, step: &str) {
        self.moves
            .get_or_create(&MoveLabels { step: step.into() })
            .inc();
    }
}
