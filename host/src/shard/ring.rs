//! The consistent-hash ring: which member owns a parent, moving few parents when members change.
//!
//! Each member stands on the ring at a number of points (virtual nodes: [`LABELLED_VNODES`] for
//! the coordinator's labels, [`VNODES`] for `shardSelector` ranges), the hash of `member#i`; a
//! parent's key (its UID) belongs to the first point at or after the key's own hash, wrapping
//! around. Many points per member even out the shares; and since a member's points do not
//! depend on the other members, a member that joins takes parents only from the
//! others (about 1/N of them), and one that leaves gives only its own away.

use sha2::{Digest, Sha256};

/// Points per member of a ring served as `shardSelector` ranges ([`super::share`]): each point
/// is a range of the selector, so a few. At 256 a member's share is a third give or take about
/// 6% of it (one of `bench-0..2` gets 37%).
pub const VNODES: usize = 256;

/// Points per member of the ring the coordinator labels by ([`super::coordinator`]). It is
/// never written out as ranges, so more points cost only hashing them, once per change of the
/// members (a few milliseconds); at 4,096 a member's share is within about 3% of 1/N of the
/// hashes (the test below), where 256 left one of three replicas a fifth more parents than
/// another.
pub const LABELLED_VNODES: usize = 4096;

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
        self.owner_of_hash(hash(key))
    }

    /// The member owning the key whose hash is `h` (the first point at or after it, wrapping
    /// around); `None` on an empty ring.
    pub fn owner_of_hash(&self, h: u64) -> Option<&str> {
        let at = self.points.partition_point(|(p, _)| *p < h);
        let (_, member) = self.points.get(at).or_else(|| self.points.first())?;
        self.members.get(*member).map(String::as_str)
    }
}

impl Ring {
    /// The hashes [`Ring::owner_of_hash`] gives `member`, as half-open ranges `start..end`
    /// (`end` up to 2^64), sorted, adjacent ones merged: point `p` owns the hashes after the
    /// point before it, up to `p` included; the first point also owns those after the last.
    pub fn ranges(&self, member: &str) -> Vec<(u128, u128)> {
        let Some(index) = self.members.iter().position(|m| m == member) else {
            return Vec::new();
        };
        let mut owned: Vec<(u128, u128)> = Vec::new();
        let mut push = |start: u128, end: u128| match owned.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ if start < end => owned.push((start, end)),
            _ => {}
        };
        let mut after = 0u128;
        for (point, m) in &self.points {
            let end = u128::from(*point) + 1;
            if *m == index {
                push(after, end);
            }
            after = after.max(end);
        }
        if self.points.first().is_some_and(|(_, m)| *m == index) {
            push(after, 1 << 64);
        }
        owned
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
    fn the_members_ranges_cover_every_hash_once_and_agree_with_the_owner() {
        let ring = Ring::new(["a", "b", "c"], 16);
        let mut all: Vec<(u128, u128, &str)> = ring
            .members()
            .iter()
            .flat_map(|m| {
                ring.ranges(m)
                    .into_iter()
                    .map(move |(s, e)| (s, e, m.as_str()))
            })
            .collect();
        all.sort();
        assert_eq!(all.first().map(|r| r.0), Some(0));
        assert_eq!(all.last().map(|r| r.1), Some(1 << 64));
        for pair in all.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "no gap, no overlap: {pair:?}");
        }
        for (start, end, member) in &all {
            for h in [*start, (*start + *end) / 2, *end - 1] {
                let h = u64::try_from(h).unwrap_or(u64::MAX);
                assert_eq!(ring.owner_of_hash(h), Some(*member), "{h:x}");
            }
        }
        assert!(ring.ranges("absent").is_empty());
        assert_eq!(Ring::new(["solo"], 4).ranges("solo"), vec![(0, 1 << 64)]);
    }

    /// Each member's share of the hashes, exactly (from its ranges), as a fraction.
    fn shares(ring: &Ring) -> Vec<(String, f64)> {
        let whole = 2f64.powi(64);
        ring.members()
            .iter()
            .map(|m| {
                let owned: u128 = ring.ranges(m).iter().map(|(s, e)| e - s).sum();
                (m.clone(), owned as f64 / whole)
            })
            .collect()
    }

    #[test]
    fn the_labelled_ring_gives_each_member_its_share_within_three_percent_whatever_their_names() {
        for names in [
            &["bench-0", "bench-1", "bench-2"][..],
            &["weir-0", "weir-1", "weir-2"],
            &["a", "b", "c"],
            &["weir-7d9f-x1", "weir-7d9f-k2", "weir-7d9f-p3"],
            &["bench-0", "bench-1", "bench-2", "bench-3"],
            &["weir-0", "weir-1"],
        ] {
            let ideal = 1.0 / names.len() as f64;
            let labelled = shares(&Ring::new(names.iter().copied(), LABELLED_VNODES));
            for (member, share) in &labelled {
                assert!(
                    (share / ideal - 1.0).abs() <= 0.03,
                    "{member} of {names:?}: {share:.4} of the hashes, ideal {ideal:.4}"
                );
            }
        }
        // The reason for the many points: the selector ring's 256 leave these members 31-37%.
        let ranged = shares(&Ring::new(["bench-0", "bench-1", "bench-2"], VNODES));
        let most = ranged.iter().map(|(_, s)| *s).fold(0.0, f64::max);
        assert!(most > 0.36, "{ranged:?}");
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
