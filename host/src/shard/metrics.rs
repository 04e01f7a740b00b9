//! What sharding shows on `/metrics` and `/plugins`: the mode (`labels` or `server-side`), the
//! members, the parents each owns, the moves.
//!
//! Sharded by label, only the leader places parents, so only the leader's values move; a
//! replica that never led shows zeros on `/metrics`, and on `/plugins` only its own member name
//! and mode. Sharded server-side, every replica shows the members it sees.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};

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

/// A mode's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModeLabels {
    /// `labels` or `server-side`.
    pub mode: String,
}

/// The coordinator's metrics (cheap to clone: the values are shared).
#[derive(Clone, Debug, Default)]
pub struct ShardMetrics {
    mode: Family<ModeLabels, Gauge>,
    /// The mode `/plugins` shows.
    running: Arc<Mutex<Option<super::Mode>>>,
    members: Gauge,
    owned: Family<MemberLabels, Gauge>,
    moves: Family<MoveLabels, Counter>,
    /// The members `owned` has a series for.
    shown: Arc<Mutex<Vec<String>>>,
    /// This replica's last pass while it coordinates (`None`: it does not).
    last: Arc<Mutex<Option<LastPass>>>,
}

/// The members and, by parent kind (`Kind.group`) and member, the parents owned at a pass.
#[derive(Clone, Debug, Default)]
struct LastPass {
    members: Vec<String>,
    owned: BTreeMap<String, BTreeMap<String, i64>>,
}

/// Sharding as `/plugins` shows it for one plugin's parent kind (part of
/// [`crate::listing::Listed`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardStatus {
    /// This replica's member name.
    pub member: String,
    /// How it selects its share: `labels` or `server-side`.
    #[serde(default)]
    pub mode: String,
    /// Whether this replica coordinates (leads); the fields below are from its last pass.
    pub coordinating: bool,
    /// The members.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// The parents of this kind each member owns.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub owned_parents: BTreeMap<String, i64>,
    /// The moves this coordinator made (all kinds): `assigned`, `drained`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moves: BTreeMap<String, u64>,
}

impl ShardStatus {
    /// One line: `shard member weir-0 (labels), coordinating: weir-0 20, weir-1 21; moves: 41 assigned, 0 drained`.
    pub fn line(&self) -> String {
        let member = match self.mode.as_str() {
            "" => self.member.clone(),
            mode => format!("{} ({mode})", self.member),
        };
        if !self.coordinating {
            return format!("shard member {member}");
        }
        let owned: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{m} {}", self.owned_parents.get(m).copied().unwrap_or(0)))
            .collect();
        let moves: Vec<String> = self.moves.iter().map(|(s, n)| format!("{n} {s}")).collect();
        format!(
            "shard member {member}, coordinating: parents {}; moves: {}",
            owned.join(", "),
            moves.join(", ")
        )
    }
}

impl ShardMetrics {
    /// Adds these metrics to `registry` (the host's, prefixed `weir_`: `weir_shard_members`,
    /// `weir_shard_owned_parents{member}`, `weir_shard_moves_total{step}`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "shard_mode",
            "1 for the way this replica selects its share: labels (the coordinator labels parents) or server-side (shardSelector)",
            self.mode.clone(),
        );
        registry.register(
            "shard_members",
            "Members (held, fresh shard Leases) at the coordinator's last pass",
            self.members.clone(),
        );
        registry.register(
            "shard_owned_parents",
            "Parents labelled for each member: at the coordinator's last whole pass, plus those it assigned since",
            self.owned.clone(),
        );
        registry.register(
            "shard_moves",
            "Parents the coordinator assigned, and parents it asked their owner to drain",
            self.moves.clone(),
        );
    }

    /// Shows one finished pass: the members and, by member, the parents it owns now (in all,
    /// and by parent kind).
    pub(super) fn passed(
        &self,
        members: &[String],
        owned: &BTreeMap<String, i64>,
        by_kind: BTreeMap<String, BTreeMap<String, i64>>,
    ) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(LastPass {
            members: members.to_vec(),
            owned: by_kind,
        });
        self.members
            .set(i64::try_from(members.len()).unwrap_or(i64::MAX));
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

    /// Shows the way this replica shards.
    pub fn running(&self, mode: super::Mode) {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(mode);
        self.mode
            .get_or_create(&ModeLabels {
                mode: mode.as_str().into(),
            })
            .set(1);
    }

    /// Shows the members a server-side replica sees.
    pub(super) fn viewed(&self, members: &[String]) {
        self.members
            .set(i64::try_from(members.len()).unwrap_or(i64::MAX));
    }

    /// This replica stopped coordinating: `/plugins` no longer shows its last pass.
    pub(super) fn stopped_coordinating(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// What `/plugins` shows for parent kind `kind` (`Kind.group`) on the replica `member`.
    pub fn status(&self, member: &str, kind: &str) -> ShardStatus {
        let last = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let moves = match &last {
            Some(_) => ["assigned", "drained"]
                .into_iter()
                .map(|step| {
                    let n = self
                        .moves
                        .get_or_create(&MoveLabels { step: step.into() })
                        .get();
                    (step.to_owned(), n)
                })
                .collect(),
            None => BTreeMap::new(),
        };
        let last = last.unwrap_or_default();
        let mode = *self.running.lock().unwrap_or_else(PoisonError::into_inner);
        ShardStatus {
            member: member.to_owned(),
            mode: mode.unwrap_or(super::Mode::Labels).as_str().to_owned(),
            coordinating: !last.members.is_empty(),
            owned_parents: last.owned.get(kind).cloned().unwrap_or_default(),
            members: last.members,
            moves,
        }
    }

    /// Counts one move (`assigned` or `drained`).
    pub(super) fn moved(&self, step: &str) {
        self.moves
            .get_or_create(&MoveLabels { step: step.into() })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_shows_the_last_pass_of_a_coordinator_and_only_the_member_name_otherwise() {
        let metrics = ShardMetrics::default();
        let idle = metrics.status("weir-1", "Blog.weir.dev");
        assert!(!idle.coordinating && idle.members.is_empty() && idle.moves.is_empty());
        assert_eq!(idle.mode, "labels");
        metrics.running(crate::shard::Mode::ServerSide);
        assert_eq!(
            metrics.status("weir-1", "Blog.weir.dev").mode,
            "server-side"
        );
        metrics.moved("assigned");
        let members = vec!["weir-0".to_owned(), "weir-1".to_owned()];
        let owned = BTreeMap::from([("weir-0".to_owned(), 2), ("weir-1".to_owned(), 1)]);
        let by_kind = BTreeMap::from([("Blog.weir.dev".to_owned(), owned.clone())]);
        metrics.passed(&members, &owned, by_kind);
        let shown = metrics.status("weir-1", "Blog.weir.dev");
        assert!(shown.coordinating);
        assert_eq!(shown.members, members);
        assert_eq!(shown.owned_parents, owned);
        assert_eq!(shown.moves.get("assigned"), Some(&1));
        assert!(
            metrics
                .status("weir-1", "Other.example.com")
                .owned_parents
                .is_empty()
        );
        metrics.stopped_coordinating();
        assert!(!metrics.status("weir-1", "Blog.weir.dev").coordinating);
    }
}
