//! Deployment and ReplicaSet defaults.

use serde_json::{Value, json};

use super::{object_at, pod, set_if_empty};

/// `SetDefaults_Deployment` (`pkg/apis/apps/v1/defaults.go`): replicas 1, strategy
/// `RollingUpdate` with 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600; the pod
/// template through [`pod::template`]. A new Deployment's status is `{}` until the controller writes it.
pub fn deployment(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let spec = object_at(m, "spec");
    set_if_empty(spec, "replicas", json!(1));
    let strategy = object_at(spec, "strategy");
    set_if_empty(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = object_at(strategy, "rollingUpdate");
        set_if_empty(rolling, "maxUnavailable", json!("25%"));
        set_if_empty(rolling, "maxSurge", json!("25%"));
    }
    set_if_empty(spec, "revisionHistoryLimit", json!(10));
    set_if_empty(spec, "progressDeadlineSeconds", json!(600));
    pod::template(object_at(spec, "template"));
    object_at(m, "status");
}

/// `SetDefaults_ReplicaSet` (`pkg/apis/apps/v1/defaults.go`): replicas 1; the pod template.
pub fn replica_set(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let spec = object_at(m, "spec");
    set_if_empty(spec, "replicas", json!(1));
    pod::template(object_at(spec, "template"));
    let status = object_at(m, "status");
    set_if_empty(status, "replicas", json!(0));
}
