//! Protobuf bodies of every served built-in kind: JSON → protobuf → stored → JSON through kubectl.

use std::path::Path;

use kube::discovery::{Discovery, verbs};
use serde_json::{Value, json};
use weir_emulator::{Emulator, encode_protobuf};

use crate::emulator;
use crate::kubectl_bin::Kubectl;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn template(app: &str) -> Value {
    json!({"metadata": {"labels": {"app": app}},
           "spec": {"containers": [{"name": "main", "image": "nginx:1.27",
                                    "ports": [{"containerPort": 80, "name": "http"}]}]}})
}

/// One object of each served built-in kind, using the API's special types where the kind has them.
fn sample(group: &str, kind: &str) -> Option<Value> {
    let meta = |name: &str| json!({"name": name, "labels": {"made-by": "protobuf-test"}});
    let api_version = |v: &str| {
        if group.is_empty() {
            v.to_string()
        } else {
            format!("{group}/{v}")
        }
    };
    let body = match (group, kind) {
        ("", "Namespace") => json!({"metadata": meta("pb-ns")}),
        ("", "ConfigMap") => json!({"metadata": meta("pb-cm"), "data": {"mode": "fast"},
            "binaryData": {"blob": "AAEC/w=="}, "immutable": false}),
        ("", "Secret") => json!({"metadata": meta("pb-secret"), "type": "Opaque",
            "data": {"password": "czNjcjN0"}}),
        ("", "Service") => json!({"metadata": meta("pb-svc"), "spec": {
            "selector": {"app": "web"}, "type": "ClusterIP", "sessionAffinity": "None",
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                      {"name": "metrics", "port": 9090, "targetPort": 9091, "protocol": "TCP"}]}}),
        ("", "ServiceAccount") => json!({"metadata": meta("pb-sa"),
            "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]}),
        ("", "Event") => json!({"metadata": meta("pb-event"),
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "apiVersion": "v1"},
            "reason": "Started", "message": "started", "type": "Normal", "count": 2,
            "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:05:05Z",
            "source": {"component": "kubelet"}}),
        ("events.k8s.io", "Event") => json!({"metadata": meta("pb-events-event"),
            "eventTime": "2026-01-02T03:04:05.123456Z", "reportingController": "weir.dev/test",
            "reportingInstance": "test-1", "action": "Reconcile", "reason": "Synced",
            "regarding": {"kind": "Pod", "name": "web", "namespace": "default"},
            "note": "synced", "type": "Normal"}),
        ("", "Pod") => json!({"metadata": meta("pb-pod"), "spec": {
            "terminationGracePeriodSeconds": 0, "hostIPC": true,
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000},
            "containers": [{"name": "main", "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "name": "http"}],
                "env": [{"name": "MODE", "value": "fast"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                              "requests": {"cpu": "250m"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                  "periodSeconds": 5}}]}}),
        ("", "Endpoints") => json!({"metadata": meta("pb-ep"), "subsets": [{
            "addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]}),
        ("", "PersistentVolumeClaim") => json!({"metadata": meta("pb-pvc"), "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        ("", "PersistentVolume") => json!({"metadata": meta("pb-pv"), "spec": {
            "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pb"}, "persistentVolumeReclaimPolicy": "Retain"}}),
        ("", "ReplicationController") => json!({"metadata": meta("pb-rc"), "spec": {
            "replicas": 0, "selector": {"app": "rc"}, "template": template("rc")}}),
        ("apps", "Deployment") => json!({"metadata": meta("pb-deploy"), "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": "deploy"}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}},
            "template": template("deploy")}}),
        ("apps", "ReplicaSet") => json!({"metadata": meta("pb-rs"), "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "rs"}}, "template": template("rs")}}),
        ("apps", "StatefulSet") => json!({"metadata": meta("pb-sts"), "spec": {
            "serviceName": "pb-sts", "replicas": 1, "selector": {"matchLabels": {"app": "sts"}},
            "template": template("sts"),
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        ("apps", "DaemonSet") => json!({"metadata": meta("pb-ds"), "spec": {
            "selector": {"matchLabels": {"app": "ds"}}, "template": template("ds"),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}}}),
        ("batch", "Job") => json!({"metadata": meta("pb-job"), "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox", "command": ["echo", "hi"]}]}}}}),
        ("batch", "CronJob") => json!({"metadata": meta("pb-cronjob"), "spec": {
            "schedule": "*/5 * * * *", "suspend": true,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": "main", "image": "busybox"}]}}}}}}),
        ("discovery.k8s.io", "EndpointSlice") => json!({"metadata": meta("pb-slice"),
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.2"], "conditions": {"ready": true}}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
        ("networking.k8s.io", "Ingress") => json!({"metadata": meta("pb-ing"), "spec": {
            "rules": [{"host": "blog.example.com", "http": {"paths": [{"path": "/",
                "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
        ("rbac.authorization.k8s.io", "Role") => json!({"metadata": meta("pb-role"),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
        ("rbac.authorization.k8s.io", "RoleBinding") => json!({"metadata": meta("pb-rb"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pb-role"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}),
        ("rbac.authorization.k8s.io", "ClusterRole") => json!({"metadata": meta("pb-cr"),
            "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => json!({"metadata": meta("pb-crb"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pb-cr"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
        ("policy", "PodDisruptionBudget") => json!({"metadata": meta("pb-pdb"), "spec": {
            "minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}),
        ("coordination.k8s.io", "Lease") => json!({"metadata": meta("pb-lease"), "spec": {
            "holderIdentity": "weir-0", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-01-02T03:04:05.250000Z", "renewTime": "2026-01-02T03:04:15.500000Z"}}),
        ("scheduling.k8s.io", "PriorityClass") => json!({"metadata": meta("pb-pc"),
            "value": 1000, "description": "batch",
            "preemptionPolicy": "Never"}),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => json!({
            "metadata": meta("widgets.pb.example.com"), "spec": {
            "group": "pb.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList", "shortNames": ["wg"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "default": 3},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                        "x-kubernetes-validations": [{"rule": "self.size < 100", "message": "too big"}]},
                    "status": {"type": "object"}}}}}]}}),
        _ => return None,
    };
    let mut object = body;
    object["apiVersion"] = json!(api_version("v1"));
    object["kind"] = json!(kind);
    Some(object)
}

/// Whether `got` holds everything `sent` says: objects by key, arrays item by item. What JSON
/// writes for an unset field (`null`, `{}`, `[]`) is not required back.
fn holds(got: &Value, sent: &Value, path: &str) -> Result<(), String> {
    match (got, sent) {
        (_, Value::Null) => Ok(()),
        (_, Value::Object(s)) if s.is_empty() => Ok(()),
        (_, Value::Array(s)) if s.is_empty() => Ok(()),
        (Value::Object(g), Value::Object(s)) => s.iter().try_for_each(|(k, v)| {
            holds(g.get(k).unwrap_or(&Value::Null), v, &format!("{path}.{k}"))
        }),
        (Value::Array(g), Value::Array(s)) if g.len() == s.len() => g
            .iter()
            .zip(s)
            .enumerate()
            .try_for_each(|(i, (g, s))| holds(g, s, &format!("{path}[{i}]"))),
        (g, s) if g == s => Ok(()),
        (g, s) => Err(format!("{path}: sent {s}, got back {g}")),
    }
}

/// `kubectl get` of one object as JSON.
async fn kubectl_get(k: &Kubectl, resource: &str, name: &str, namespaced: bool) -> Value {
    let mut args = vec!["get", resource, name, "-o", "json"];
    if namespaced {
        args.extend(["-n", "default"]);
    }
    serde_json::from_str(&k.ok(&args).await).unwrap()
}

async fn every_served_built_in_kind_round_trips_json_to_protobuf_and_back_through_kubectl(
    kubectl: &Path,
) {
    let em = emulator().await;
    let k = Kubectl::with_binary(&em, kubectl);
    let discovery = Discovery::new(em.client()).run().await.unwrap();
    let mut kinds = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if caps.supports_operation(verbs::CREATE) && caps.supports_operation(verbs::GET) {
                kinds.push((ar, caps.scope == kube::discovery::Scope::Namespaced));
            }
        }
    }
    assert!(kinds.len() >= 28, "discovery lists {} kinds", kinds.len());
    let mut failures = Vec::new();
    for (ar, namespaced) in &kinds {
        let sent = sample(&ar.group, &ar.kind)
            .unwrap_or_else(|| panic!("no sample of the served kind {}/{}", ar.group, ar.kind));
        let body = encode_protobuf(&sent).unwrap();
        let prefix = if ar.group.is_empty() {
            "/api/v1".to_string()
        } else {
            format!("/apis/{}/{}", ar.group, ar.version)
        };
        let ns = if *namespaced {
            "/namespaces/default"
        } else {
            ""
        };
        let req = http::Request::post(format!("{prefix}{ns}/{}", ar.plural))
            .header("content-type", PROTOBUF)
            .body(body)
            .unwrap();
        em.client()
            .request::<Value>(req)
            .await
            .unwrap_or_else(|e| panic!("creating a {} from protobuf: {e}", ar.kind));
        let resource = if ar.group.is_empty() {
            ar.plural.clone()
        } else {
            format!("{}.{}", ar.plural, ar.group)
        };
        let name = sent["metadata"]["name"].as_str().unwrap();
        let got = kubectl_get(&k, &resource, name, *namespaced).await;
        if let Err(e) = holds(&got, &sent, &ar.kind) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

async fn what_kubectl_generators_send_as_protobuf_is_what_kubectl_gets_back(kubectl: &Path) {
    let em = emulator().await;
    let k = Kubectl::with_binary(&em, kubectl);
    let generators: &[(&[&str], &str)] = &[
        (&["namespace", "gen-ns"], "namespace"),
        (&["configmap", "gen-cm", "--from-literal=a=b"], "configmap"),
        (
            &["secret", "generic", "gen-s", "--from-literal=p=q"],
            "secret",
        ),
        (
            &[
                "secret",
                "docker-registry",
                "gen-reg",
                "--docker-server=r.example",
                "--docker-username=u",
                "--docker-password=p",
            ],
            "secret",
        ),
        (
            &["service", "clusterip", "gen-svc", "--tcp=80:8080"],
            "service",
        ),
        (
            &["service", "nodeport", "gen-np", "--tcp=80:8080"],
            "service",
        ),
        (
            &[
                "service",
                "externalname",
                "gen-ext",
                "--external-name=example.com",
            ],
            "service",
        ),
        (&["serviceaccount", "gen-sa"], "serviceaccount"),
        (
            &[
                "deployment",
                "gen-d",
                "--image=nginx:1.27",
                "--replicas=2",
                "--port=80",
            ],
            "deployment",
        ),
        (
            &["job", "gen-j", "--image=busybox", "--", "echo", "hi"],
            "job",
        ),
        (
            &[
                "cronjob",
                "gen-cj",
                "--image=busybox",
                "--schedule=*/1 * * * *",
            ],
            "cronjob",
        ),
        (&["role", "gen-r", "--verb=get", "--resource=pods"], "role"),
        (
            &["rolebinding", "gen-rb", "--role=gen-r", "--user=alice"],
            "rolebinding",
        ),
        (
            &[
                "clusterrole",
                "gen-cr",
                "--verb=get",
                "--resource=namespaces",
            ],
            "clusterrole",
        ),
        (
            &[
                "clusterrolebinding",
                "gen-crb",
                "--clusterrole=gen-cr",
                "--group=devs",
            ],
            "clusterrolebinding",
        ),
        (
            &[
                "poddisruptionbudget",
                "gen-pdb",
                "--selector=app=x",
                "--min-available=1",
            ],
            "poddisruptionbudget",
        ),
        (
            &["priorityclass", "gen-pc", "--value=100", "--description=d"],
            "priorityclass",
        ),
        (
            &["ingress", "gen-ing", "--rule=example.com/=svc:80"],
            "ingress",
        ),
    ];
    let mut failures = Vec::new();
    for (args, resource) in generators {
        // The flags go before the generator's arguments: `job` takes a command after `--`.
        let mut dry = vec!["create", "--dry-run=client", "-o", "json"];
        dry.extend_from_slice(args);
        let mut real = vec!["create"];
        real.extend_from_slice(args);
        let mut sent: Value = serde_json::from_str(&k.ok(&dry).await).unwrap();
        // A create's status is the server's to set (kube-apiserver resets it).
        sent.as_object_mut().unwrap().remove("status");
        let mut cursor = em.request_cursor();
        k.ok(&real).await;
        let posts: Vec<_> = em
            .requests_since(&mut cursor)
            .into_iter()
            .filter(|r| r.method == http::Method::POST)
            .map(|r| r.content_type.unwrap_or_default())
            .collect();
        assert_eq!(
            posts,
            [PROTOBUF],
            "kubectl create {args:?} sent no protobuf"
        );
        let name = sent["metadata"]["name"].as_str().unwrap();
        let namespaced = !matches!(
            *resource,
            "namespace" | "clusterrole" | "clusterrolebinding" | "priorityclass"
        );
        let got = kubectl_get(&k, resource, name, namespaced).await;
        if let Err(e) = holds(&got, &sent, &format!("{args:?}")) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn a_protobuf_body_of_a_kind_without_a_descriptor_is_refused_with_415() {
    let em: Emulator = emulator().await;
    let body =
        encode_protobuf(&json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}));
    assert!(body.is_err(), "the emulator has no descriptor of Node");
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", PROTOBUF)
        .body(b"k8s\0\x0a\x0a\x0a\x02v1\x12\x04Node".to_vec())
        .unwrap();
    let err = em.client().request::<Value>(req).await.unwrap_err();
    assert_eq!(crate::api_error(err).code, 415);
}

each_kubectl!(
    every_served_built_in_kind_round_trips_json_to_protobuf_and_back_through_kubectl,
    what_kubectl_generators_send_as_protobuf_is_what_kubectl_gets_back,
);
