//! How many changes the store took, by resource and by what happened (created, modified,
//! deleted): what a benchmark reads as the writes a run cost, whoever made them.

use std::collections::HashMap;

use crate::kinds::resources::ResKey;
use crate::store::EventType;

/// The changes stored so far, by resource: created, modified, deleted.
#[derive(Debug, Default)]
pub struct Writes(HashMap<ResKey, [u64; 3]>);

/// The changes one resource took of one kind, a line of [`Writes::counts`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredWrites {
    /// The resource's API group (empty for the core group).
    pub group: String,
    /// The resource's plural.
    pub resource: String,
    /// What happened: `ADDED`, `MODIFIED` or `DELETED`, as a watch names it.
    pub change: &'static str,
    /// How many times.
    pub count: u64,
}

const KINDS: [EventType; 3] = [EventType::Added, EventType::Modified, EventType::Deleted];

impl Writes {
    /// Counts one change of `kind` to an object of `res`.
    pub fn count(&mut self, res: &ResKey, kind: EventType) {
        let slot = KINDS.iter().position(|k| *k == kind).unwrap_or(0);
        match self.0.get_mut(res) {
            Some(counts) => counts[slot] += 1,
            None => {
                let mut counts = [0; 3];
                counts[slot] = 1;
                self.0.insert(res.clone(), counts);
            }
        }
    }

    /// Every count above zero, most first (ties in resource order).
    pub fn counts(&self) -> Vec<StoredWrites> {
        let mut out: Vec<StoredWrites> = self
            .0
            .iter()
            .flat_map(|(res, counts)| {
                KINDS
                    .iter()
                    .zip(counts)
                    .filter(|(_, n)| **n > 0)
                    .map(|(kind, n)| StoredWrites {
                        group: res.group.clone(),
                        resource: res.plural.clone(),
                        change: kind.as_str(),
                        count: *n,
                    })
            })
            .collect();
        out.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| {
                (&a.group, &a.resource, a.change).cmp(&(&b.group, &b.resource, b.change))
            })
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(group: &str, plural: &str) -> ResKey {
        ResKey {
            group: group.into(),
            plural: plural.into(),
        }
    }

    #[test]
    fn counts_each_resource_and_change_apart_most_first() {
        let mut writes = Writes::default();
        let pods = res("", "pods");
        let sets = res("apps", "replicasets");
        writes.count(&pods, EventType::Added);
        writes.count(&pods, EventType::Modified);
        writes.count(&pods, EventType::Modified);
        writes.count(&sets, EventType::Deleted);
        let line = |resource: &str, change, count| StoredWrites {
            group: if resource == "pods" { "" } else { "apps" }.into(),
            resource: resource.into(),
            change,
            count,
        };
        assert_eq!(
            writes.counts(),
            vec![
                line("pods", "MODIFIED", 2),
                line("pods", "ADDED", 1),
                line("replicasets", "DELETED", 1),
            ]
        );
    }
}
