//! Kinds used across scenarios.

use weir::plugin::ResourceKind;

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// The Blog parent kind.
pub fn blog() -> ResourceKind {
    kind("weir.dev", "v1alpha1", "Blog", "blogs")
}

/// The scenario plugin's parent kind.
pub fn scenario() -> ResourceKind {
    kind("test.weir.dev", "v1", "Scenario", "scenarios")
}

/// The related test plugin's parent kind (contract 0.2.0).
pub fn mirror() -> ResourceKind {
    kind("test.weir.dev", "v1", "Mirror", "mirrors")
}

/// The Spread example's parent kind (contract 0.4.0: one Deployment per named cluster).
pub fn spread() -> ResourceKind {
    kind("weir.dev", "v1alpha1", "Spread", "spreads")
}

/// ConfigMap.
pub fn config_map() -> ResourceKind {
    kind("", "v1", "ConfigMap", "configmaps")
}

/// Deployment.
pub fn deployment() -> ResourceKind {
    kind("apps", "v1", "Deployment", "deployments")
}

/// Service.
pub fn service() -> ResourceKind {
    kind("", "v1", "Service", "services")
}
