//! The consistent-hash ring: which member owns a parent, moving few parents when members change.
//!
//! Each member stands on the ring at [`VNODES`] points (virtual nodes), the hash of
//! `member#i`; a parent's key (its UID) belongs to the first point at or after the key's own
//! hash, wrapping around. Many points per member even out the shares; and since a member's
//! points do not depend on the other members, a member that joins takes parents only from the
//! others (about 1/N of them), and one that leaves gives only its own away.

use sha2::{Digest, Sha256};

/// Points per member. 256 keeps three members' shares within a few percent of a third.
pub const VNODES: usize = 256;

/// The ring over a set of members.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    /// `(hash, member index)`, sorted.
    points: Vec<(u64, usize)>,
    members: Vec<String>,
}

/// The first eight bytes of SHA-256: stable across processes, versions and platforms, which
/// every replica computing the same owner needs.
fn hash(text: &str) -> u64 {
    let digest = Sha256::digest(text.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

impl Ring {
    /// A ring of `members` (duplicates count once), each at `vnodes` points.
    pub fn new<I, S>(members: I, vnodes: usize) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut members: Vec<String> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        let mut points: Vec<(u64, usize)> = members
            .iter()
            .enumerate()
            .flat_map(|(i, m)| (0..vnodes).map(move |v| (hash(&format!("{m}#{v}")), i)))
            .collect();
        // Ties (astronomically rare) break by member name, the same on every replica.
        points.sort_unstable();
        Self { points, members }
    }

    /// The members, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// Whether `member` is on the ring.
    pub fn contains(&self, member: &str) -> bool {
        self.members
            .binary_search_by(|m| m.as_str().cmp(member))
            .is_ok()
    }

    /// The member owning `key`; `None` on an empty ring.
    pub fn owner(&self, key: &str) -> Option<&str> {
        let h = hash(key);
        let at = self.points.partition_point(|(p, _)| *p < h);
        let (_, member) = self.points.get(at).or_else(|| self.points.first())?;
        self.members.get(*member).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("6f1c2a4e-0000-4000-8000-{i:012}"))
            .collect()
    }

    fn owners(ring: &Ring, keys: &[String]) -> Vec<String> {
        keys.iter()
            .map(|k| ring.owner(k).unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn an_empty_ring_owns_nothing_and_one_member_owns_everything() {
        assert_eq!(Ring::new(Vec::<String>::new(), VNODES).owner("uid"), None);
        let ring = Ring::new(["a"], VNODES);
        assert!(keys(100).iter().all(|k| ring.owner(k) == Some("a")));
    }

    #[test]
    fn three_members_each_own_about_a_third_of_30000_parents() {
        let ring = Ring::new(["weir-0", "weir-1", "weir-2"], VNODES);
        let keys = keys(30_000);
        let mut counts: HashMap<String, usize> = HashMap::new();
        for owner in owners(&ring, &keys) {
            *counts.entry(owner).or_default() += 1;
        }
        assert_eq!(counts.len(), 3, "{counts:?}");
        for (member, n) in &counts {
            let share = *n as f64 / keys.len() as f64;
            assert!(
                (0.28..0.39).contains(&share),
                "{member}: {share:.3} of {counts:?}"
            );
        }
    }

    #[test]
    fn every_replica_computes_the_same_owner_whatever_the_order_it_lists_members_in() {
        let a = Ring::new(["x", "y", "z"], VNODES);
        let b = Ring::new(["z", "x", "y", "x"], VNODES);
        assert_eq!(b.members(), ["x", "y", "z"]);
        let keys = keys(1000);
        assert_eq!(owners(&a, &keys), owners(&b, &keys));
    }

    #[test]
    fn a_joining_member_takes_about_a_quarter_and_only_for_itself() {
        let before = Ring::new(["a", "b", "c"], VNODES);
        let after = Ring::new(["a", "b", "c", "d"], VNODES);
        let keys = keys(20_000);
        let (old, new) = (owners(&before, &keys), owners(&after, &keys));
        let moved: Vec<(&String, &String)> = old.iter().zip(&new).filter(|(o, n)| o != n).collect();
        assert!(
            moved.iter().all(|(_, to)| *to == "d"),
            "a move between old members"
        );
        let share = moved.len() as f64 / keys.len() as f64;
        assert!((0.18..0.32).contains(&share), "moved {share:.3}");
    }

    #[test]
    fn a_leaving_member_gives_away_only_its_own_parents() {
        let before = Ring::new(["a", "b", "c"], VNODES);
        let after = Ring::new(["a", "c"], VNODES);
        let keys = keys(20_000);
        for (old, new) in owners(&before, &keys).iter().zip(owners(&after, &keys)) {
            if *old != "b" {
                assert_eq!(*old, new, "a parent of a staying member moved");
            } else {
                assert_ne!(new, "b");
            }
        }
        assert!(after.contains("a") && !after.contains("b"));
    }
}
