//! The live objects an answer is judged against: the controller's cache, or a fixture's observed objects.

use std::sync::Arc;

use kube::api::DynamicObject;

use crate::clusters::Labels;
use crate::plugin::LOCAL_CLUSTER;
use crate::runtime::ObjectKey;

/// The live objects the checks look a desired child's name up in (ownership of a name): the
/// controller's cache, or the observed objects of a `weir test` fixture.
pub trait LiveObjects {
    /// The object of this kind under this key, if one exists.
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>>;

    /// Whether the host has engaged `cluster`, so that a child may be placed there (contract
    /// 0.4.0). The default is the host's own cluster alone: the controller's cache until the
    /// host engages others; a fixture names its own.
    fn engaged(&self, cluster: &str) -> bool {
        cluster == LOCAL_CLUSTER
    }

    /// The cluster the parent lives in, where a child naming none belongs: the host's own by
    /// default; a fixture names its own.
    fn parent_cluster(&self) -> &str {
        LOCAL_CLUSTER
    }

    /// The labels of the engaged member `cluster`, which the policy may grant clusters by
    /// (`None`: not engaged, or no source of labels, as for a fixture).
    fn cluster_labels(&self, _cluster: &str) -> Option<Labels> {
        None
    }

    /// The object of this kind under this key in the engaged `cluster`: [`get`]'s in the
    /// parent's cluster, [`get_elsewhere`]'s in any other.
    ///
    /// [`get`]: LiveObjects::get
    /// [`get_elsewhere`]: LiveObjects::get_elsewhere
    fn get_in(
        &self,
        cluster: &str,
        api_version: &str,
        kind: &str,
        key: &ObjectKey,
    ) -> Option<Arc<DynamicObject>> {
        if cluster == self.parent_cluster() {
            self.get(api_version, kind, key)
        } else {
            self.get_elsewhere(cluster, api_version, kind, key)
        }
    }

    /// The object of this kind under this key in `cluster`, another than the parent's: nothing
    /// by default; the controller reads that member's cache, `weir test` a fixture's objects
    /// in that cluster.
    fn get_elsewhere(
        &self,
        _cluster: &str,
        _api_version: &str,
        _kind: &str,
        _key: &ObjectKey,
    ) -> Option<Arc<DynamicObject>> {
        None
    }
}

impl<T: LiveObjects + ?Sized> LiveObjects for Arc<T> {
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        (**self).get(api_version, kind, key)
    }

    fn engaged(&self, cluster: &str) -> bool {
        (**self).engaged(cluster)
    }

    fn parent_cluster(&self) -> &str {
        (**self).parent_cluster()
    }

    fn cluster_labels(&self, cluster: &str) -> Option<Labels> {
        (**self).cluster_labels(cluster)
    }

    fn get_elsewhere(
        &self,
        cluster: &str,
        api_version: &str,
        kind: &str,
        key: &ObjectKey,
    ) -> Option<Arc<DynamicObject>> {
        (**self).get_elsewhere(cluster, api_version, kind, key)
    }
}
