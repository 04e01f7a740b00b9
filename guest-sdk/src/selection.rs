//! What a plugin reads beyond its children: selections of related objects, by name or by labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Objects of one related kind a plugin wants to read for a parent (`Reconciler::select`).
///
/// The kind must be one the plugin declares in `Reconciler::related`; a
/// namespaced kind is read in the parent's namespace (the default), a
/// cluster-scoped one cluster-wide. The host refuses anything else on the parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// `apiVersion` of the kind.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// `None`: the parent's namespace (or none, for a cluster-scoped kind).
    pub namespace: Option<String>,
    /// `None`: the parent's cluster (contract 0.4.0).
    pub cluster: Option<String>,
    /// One object by name, or a set by labels.
    pub selector: Selector,
}

/// Which objects of a kind a [`Selection`] reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// The object with this name, whether or not it exists yet (its creation
    /// reconciles the parent again).
    Name(String),
    /// Every object whose labels match (Kubernetes' label selector; `operator`
    /// is `In`, `NotIn`, `Exists` or `DoesNotExist`).
    Labels(LabelSelector),
}

impl Selection {
    /// The object of type `K` called `name`.
    pub fn name<K: k8s_openapi::Resource>(name: impl Into<String>) -> Self {
        Self::of::<K>(Selector::Name(name.into()))
    }

    /// Every object of type `K` whose labels match `selector`.
    pub fn labels<K: k8s_openapi::Resource>(selector: LabelSelector) -> Self {
        Self::of::<K>(Selector::Labels(selector))
    }

    /// Every object of type `K` that carries all of `labels`.
    pub fn matching<K: k8s_openapi::Resource>(
        labels: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        let labels: BTreeMap<String, String> = labels
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        Self::labels::<K>(LabelSelector {
            match_labels: Some(labels),
            match_expressions: None,
        })
    }

    /// Reads in `namespace` explicitly (only the parent's is allowed).
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Reads in `cluster` (contract 0.4.0), not the parent's; the objects found are
    /// in `observed.related().in_cluster(cluster)`.
    pub fn in_cluster(mut self, cluster: impl Into<String>) -> Self {
        self.cluster = Some(cluster.into());
        self
    }

    fn of<K: k8s_openapi::Resource>(selector: Selector) -> Self {
        Self {
            api_version: K::API_VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            namespace: None,
            cluster: None,
            selector,
        }
    }
}
