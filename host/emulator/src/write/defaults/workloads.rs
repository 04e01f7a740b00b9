//! Defaults of the workload kinds besides Deployment: StatefulSet, DaemonSet, Job, CronJob.

use serde_json::{Value, json};

use super::{object_at, pod, set_if_empty};

/// `SetDefaults_StatefulSet` (`pkg/apis/apps/v1/defaults.go`): podManagementPolicy
/// `OrderedReady`, updateStrategy `RollingUpdate` with partition 0, replicas 1,
/// revisionHistoryLimit 10, persistentVolumeClaimRetentionPolicy `Retain`/`Retain`; the template.
pub fn stateful_set(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let spec = object_at(m, "spec");
    set_if_empty(spec, "podManagementPolicy", json!("OrderedReady"));
    let strategy = object_at(spec, "updateStrategy");
    set_if_empty(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        set_if_empty(object_at(strategy, "rollingUpdate"), "partition", json!(0));
    }
    set_if_empty(spec, "replicas", json!(1));
    set_if_empty(spec, "revisionHistoryLimit", json!(10));
    let retention = object_at(spec, "persistentVolumeClaimRetentionPolicy");
    set_if_empty(retention, "whenDeleted", json!("Retain"));
    set_if_empty(retention, "whenScaled", json!("Retain"));
    pod::template(object_at(spec, "template"));
    let status = object_at(m, "status");
    set_if_empty(status, "replicas", json!(0));
    set_if_empty(status, "availableReplicas", json!(0));
}

/// `SetDefaults_DaemonSet` (`pkg/apis/apps/v1/defaults.go`): updateStrategy `RollingUpdate`
/// with maxUnavailable 1 and maxSurge 0, revisionHistoryLimit 10; the template.
pub fn daemon_set(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let spec = object_at(m, "spec");
    let strategy = object_at(spec, "updateStrategy");
    set_if_empty(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = object_at(strategy, "rollingUpdate");
        set_if_empty(rolling, "maxUnavailable", json!(1));
        set_if_empty(rolling, "maxSurge", json!(0));
    }
    set_if_empty(spec, "revisionHistoryLimit", json!(10));
    pod::template(object_at(spec, "template"));
    let status = object_at(m, "status");
    for field in [
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
    ] {
        set_if_empty(status, field, json!(0));
    }
}

/// `SetDefaults_Job` (`pkg/apis/batch/v1/defaults.go`): completions and parallelism 1 when
/// both are unset, backoffLimit 6, completionMode `NonIndexed`, suspend false,
/// podReplacementPolicy `TerminatingOrFailed`; the template. Then the Job strategy's
/// `generateSelector` (`pkg/registry/batch/job/strategy.go`): unless `manualSelector`, the
/// selector and the template's labels name the Job's uid and name.
pub fn job(obj: &mut Value) {
    let uid = crate::wire::object::uid(obj).to_string();
    let name = crate::wire::object::name(obj).to_string();
    let Some(m) = obj.as_object_mut() else { return };
    job_spec(object_at(m, "spec"), Some((&uid, &name)));
}

fn job_spec(spec: &mut serde_json::Map<String, Value>, identity: Option<(&str, &str)>) {
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_if_empty(spec, "parallelism", json!(1));
    set_if_empty(spec, "backoffLimit", json!(6));
    set_if_empty(spec, "completionMode", json!("NonIndexed"));
    set_if_empty(spec, "suspend", json!(false));
    set_if_empty(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    let manual = spec.get("manualSelector") == Some(&json!(true));
    if let Some((uid, name)) = identity.filter(|(uid, _)| !manual && !uid.is_empty()) {
        let selector = object_at(spec, "selector");
        if selector.get("matchLabels").is_none() && selector.get("matchExpressions").is_none() {
            selector.insert(
                "matchLabels".into(),
                json!({"batch.kubernetes.io/controller-uid": uid}),
            );
        }
        let template = object_at(spec, "template");
        let labels = object_at(object_at(template, "metadata"), "labels");
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", uid),
            ("batch.kubernetes.io/job-name", name),
            ("controller-uid", uid),
            ("job-name", name),
        ] {
            set_if_empty(labels, k, json!(v));
        }
    }
    pod::template(object_at(spec, "template"));
}

/// `SetDefaults_CronJob` (`pkg/apis/batch/v1/defaults.go`): concurrencyPolicy `Allow`, suspend
/// false, successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1; the job template's spec as a
/// Job's (no selector: a CronJob's Jobs get theirs when created).
pub fn cron_job(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let spec = object_at(m, "spec");
    set_if_empty(spec, "concurrencyPolicy", json!("Allow"));
    set_if_empty(spec, "suspend", json!(false));
    set_if_empty(spec, "successfulJobsHistoryLimit", json!(3));
    set_if_empty(spec, "failedJobsHistoryLimit", json!(1));
    let template = object_at(spec, "jobTemplate");
    job_spec(object_at(template, "spec"), None);
    object_at(m, "status");
}
