//! A plugin's description for unit tests: one parent kind and ConfigMap children.

use super::{PluginInfo, ResourceKind};

/// A namespaced `v1` kind.
pub(crate) fn namespaced(group: &str, kind: &str, plural: &str) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// Plugin `name` 0.1.0 reconciling `parent` and owning ConfigMaps, with nothing related.
pub(crate) fn owning_config_maps(name: &str, parent: ResourceKind) -> PluginInfo {
    PluginInfo {
        name: name.into(),
        version: "0.1.0".into(),
        parent,
        children: vec![namespaced("", "ConfigMap", "configmaps")],
        related: vec![],
        finalizer: None,
        crd: None,
    }
}
