//! Pod template defaults, shared by every kind that embeds a `PodTemplateSpec`.

use serde_json::{Map, Value, json};

use super::{each_object, object_at, set_if_empty};

/// A Pod as kube-apiserver stores it: `SetDefaults_PodSpec` and what it reaches; from the
/// admission plugins every cluster enables, `ServiceAccount` (serviceAccountName `default`, and
/// the deprecated `serviceAccount` copy), `Priority` (priority 0, preemptionPolicy
/// `PreemptLowerPriority`) and `DefaultTolerationSeconds` (the two 300 s NoExecute
/// tolerations); `SetDefaults_Pod`'s `enableServiceLinks: true`. On create the pod strategy's
/// `PrepareForCreate` resets the status to phase `Pending` with its QoS class.
pub fn pod(obj: &mut Value, creating: bool) {
    let Some(m) = obj.as_object_mut() else { return };
    let s = object_at(m, "spec");
    spec(s);
    set_if_empty(s, "enableServiceLinks", json!(true));
    set_if_empty(s, "serviceAccountName", json!("default"));
    if let Some(sa) = s.get("serviceAccountName").cloned() {
        set_if_empty(s, "serviceAccount", sa);
    }
    set_if_empty(s, "priority", json!(0));
    set_if_empty(s, "preemptionPolicy", json!("PreemptLowerPriority"));
    if !s.contains_key("tolerations") {
        let toleration = |key: &str| json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
        s.insert(
            "tolerations".into(),
            json!([
                toleration("node.kubernetes.io/not-ready"),
                toleration("node.kubernetes.io/unreachable")
            ]),
        );
    }
    if creating {
        let qos = qos_class(s);
        m.insert(
            "status".into(),
            json!({"phase": "Pending", "qosClass": qos}),
        );
    }
}

/// `GetPodQOS` (`pkg/apis/core/v1/helper/qos`): `BestEffort` without requests or limits,
/// `Guaranteed` when every container limits cpu and memory and requests what it limits,
/// `Burstable` otherwise.
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let resources = |c: &Value, kind: &str| {
        c.pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let any = containers
        .iter()
        .any(|c| !resources(c, "requests").is_empty() || !resources(c, "limits").is_empty());
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = resources(c, "limits");
        let requests = resources(c, "requests");
        ["cpu", "memory"].iter().all(|r| {
            limits.contains_key(*r) && requests.get(*r).is_none_or(|q| Some(q) == limits.get(*r))
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The template's pod spec (`SetDefaults_PodSpec` and what it reaches).
pub fn template(template: &mut Map<String, Value>) {
    spec(object_at(template, "spec"));
}

/// `SetDefaults_PodSpec` (`pkg/apis/core/v1/defaults.go`): dnsPolicy `ClusterFirst`,
/// restartPolicy `Always`, terminationGracePeriodSeconds 30, securityContext `{}`,
/// schedulerName `default-scheduler`; then every container, init container and volume.
pub fn spec(spec: &mut Map<String, Value>) {
    set_if_empty(spec, "dnsPolicy", json!("ClusterFirst"));
    set_if_empty(spec, "restartPolicy", json!("Always"));
    set_if_empty(spec, "terminationGracePeriodSeconds", json!(30));
    set_if_empty(spec, "securityContext", json!({}));
    set_if_empty(spec, "schedulerName", json!("default-scheduler"));
    for key in ["containers", "initContainers"] {
        for c in each_object(spec, key) {
            container(c);
        }
    }
    for v in each_object(spec, "volumes") {
        volume(v);
    }
}

/// `SetDefaults_Container`: imagePullPolicy `Always` for `:latest` or no tag, else
/// `IfNotPresent`; terminationMessagePath `/dev/termination-log`, terminationMessagePolicy
/// `File`. `SetDefaults_ContainerPort`: protocol `TCP`. `SetDefaults_ObjectFieldSelector`:
/// a `fieldRef` without apiVersion gets `v1`. `SetDefaults_Probe` and `SetDefaults_HTTPGetAction`
/// for the three probes. `resources: {}` is Go's rendering of the non-pointer struct.
fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = if pulls_always(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    set_if_empty(c, "imagePullPolicy", json!(policy));
    set_if_empty(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_if_empty(c, "terminationMessagePolicy", json!("File"));
    set_if_empty(c, "resources", json!({}));
    for p in each_object(c, "ports") {
        set_if_empty(p, "protocol", json!("TCP"));
    }
    for e in each_object(c, "env") {
        if let Some(field_ref) = e
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            set_if_empty(field_ref, "apiVersion", json!("v1"));
        }
    }
    for probe_key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe_key).and_then(Value::as_object_mut) {
            probe(p);
        }
    }
}

/// An image pulls `Always` when its tag is `latest` or absent (a digest pins it).
fn pulls_always(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

fn probe(p: &mut Map<String, Value>) {
    set_if_empty(p, "timeoutSeconds", json!(1));
    set_if_empty(p, "periodSeconds", json!(10));
    set_if_empty(p, "successThreshold", json!(1));
    set_if_empty(p, "failureThreshold", json!(3));
    if let Some(get) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
        set_if_empty(get, "path", json!("/"));
        set_if_empty(get, "scheme", json!("HTTP"));
    }
}

/// `SetDefaults_Volume`: a volume with no source is an `emptyDir`; `SetDefaults_SecretVolumeSource`,
/// `SetDefaults_ConfigMapVolumeSource`: defaultMode 0644 (420).
fn volume(v: &mut Map<String, Value>) {
    if v.keys().all(|k| k == "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            set_if_empty(s, "defaultMode", json!(420));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pulls_always;

    #[test]
    fn latest_or_untagged_images_pull_always() {
        assert!(pulls_always("nginx"));
        assert!(pulls_always("nginx:latest"));
        assert!(pulls_always("localhost:5000/nginx"));
        assert!(!pulls_always("localhost:5000/nginx:1.27"));
        assert!(!pulls_always("nginx:1.27"));
        assert!(!pulls_always("nginx@sha256:abcd"));
    }
}
