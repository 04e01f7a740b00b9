//! Where the objects of a call live (contract 0.4.0): the cluster names a request carries.
//!
//! A 0.4.0 plugin is told the cluster of its parent, of each observed child and of each related
//! object, and its answer names the cluster of each desired child
//! ([`super::ReconcileResponse::clusters`]). An older plugin is served on the host's own
//! cluster only: it is given the objects in its parent's cluster and its children stay there.

/// The name of the host's own cluster, the one its kubeconfig (or in-cluster service account)
/// points at: the cluster every parent lives in until the host engages others.
pub const LOCAL_CLUSTER: &str = "local";

/// The cluster of each object of a request. Empty names (the `Default`) are the host's own
/// cluster for the parent and the parent's cluster for the others, so a request built without
/// clusters puts everything in [`LOCAL_CLUSTER`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clusters {
    /// The parent's cluster; empty: [`LOCAL_CLUSTER`].
    pub parent: String,
    /// The cluster of each observed child, in the request's `children` order; a name left
    /// empty or out: the parent's cluster.
    pub children: Vec<String>,
    /// The cluster of each related object, in the request's `related` order; a name left empty
    /// or out: the parent's cluster.
    pub related: Vec<String>,
}

impl Clusters {
    /// The parent's cluster.
    pub fn parent(&self) -> &str {
        named(&self.parent).unwrap_or(LOCAL_CLUSTER)
    }

    /// The cluster of observed child `index`.
    pub fn child(&self, index: usize) -> &str {
        self.of(&self.children, index)
    }

    /// The cluster of related object `index`.
    pub fn related(&self, index: usize) -> &str {
        self.of(&self.related, index)
    }

    fn of<'a>(&'a self, names: &'a [String], index: usize) -> &'a str {
        names
            .get(index)
            .and_then(|n| named(n))
            .unwrap_or_else(|| self.parent())
    }

    /// `objects` (the request's children or related objects, whose clusters `cluster_of` names)
    /// without those outside the parent's cluster: what a plugin older than 0.4.0 is given.
    pub(super) fn in_parent_cluster(
        &self,
        objects: Vec<String>,
        cluster_of: impl Fn(&Self, usize) -> &str,
    ) -> Vec<String> {
        objects
            .into_iter()
            .enumerate()
            .filter(|(i, _)| cluster_of(self, *i) == self.parent())
            .map(|(_, o)| o)
            .collect()
    }
}

fn named(name: &str) -> Option<&str> {
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_built_without_clusters_is_all_in_the_local_cluster() {
        let clusters = Clusters::default();
        assert_eq!(clusters.parent(), LOCAL_CLUSTER);
        assert_eq!(clusters.child(3), LOCAL_CLUSTER);
        assert_eq!(clusters.related(0), LOCAL_CLUSTER);
    }

    #[test]
    fn an_older_plugin_is_given_only_the_objects_in_its_parents_cluster() {
        let clusters = Clusters {
            parent: "hub".into(),
            children: vec!["member-a".into(), String::new(), "hub".into()],
            related: Vec::new(),
        };
        assert_eq!(
            clusters.child(1),
            "hub",
            "an empty name is the parent's cluster"
        );
        let kept = clusters.in_parent_cluster(
            vec!["a".into(), "b".into(), "c".into(), "d".into()],
            Clusters::child,
        );
        assert_eq!(kept, ["b", "c", "d"]);
    }
}
