//! Built-in kinds as kube-apiserver stores them: defaults (golden files), strict field
//! validation, and kubectl's protobuf generators.

use std::path::Path;

use serde_json::{Value, json};
use weir_emulator::Emulator;

use crate::emulator;
use crate::kubectl_bin::Kubectl;

fn golden(name: &str) -> Value {
    let path = format!(
        "{}/tests/emulator/golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Drop what differs between any two servers (and between runs): uid, timestamps,
/// resourceVersion, managedFields, generation; replace an allocated cluster IP with `ALLOCATED`.
fn comparable(mut obj: Value) -> Value {
    if let Some(meta) = obj["metadata"].as_object_mut() {
        for k in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "managedFields",
            "generation",
        ] {
            meta.remove(k);
        }
    }
    let ip = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .map(String::from);
    if let Some(ip) = ip {
        assert!(
            ip.starts_with("10.96."),
            "cluster IP {ip} is outside the service CIDR"
        );
        assert_eq!(obj["spec"]["clusterIPs"], json!([ip]));
        obj["spec"]["clusterIP"] = json!("ALLOCATED");
        obj["spec"]["clusterIPs"] = json!(["ALLOCATED"]);
    }
    obj
}

async fn post(em: &Emulator, path: &str, body: &Value) -> Value {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap();
    em.client().request::<Value>(req).await.unwrap()
}

async fn get(em: &Emulator, path: &str) -> Value {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    em.client().request::<Value>(req).await.unwrap()
}

#[tokio::test]
async fn deployments_services_and_secrets_are_stored_as_kube_apiserver_stores_them() {
    let em = emulator().await;
    for (file, collection) in [
        ("deployment", "/apis/apps/v1/namespaces/default/deployments"),
        ("service", "/api/v1/namespaces/default/services"),
        ("secret", "/api/v1/namespaces/default/secrets"),
    ] {
        let input = golden(&format!("{file}.yaml"));
        let created = post(&em, collection, &input).await;
        let name = created["metadata"]["name"].as_str().unwrap();
        let stored = get(&em, &format!("{collection}/{name}")).await;
        assert_eq!(
            comparable(created),
            comparable(stored.clone()),
            "{file}: POST answer"
        );
        let want = golden(&format!("{file}.expected.yaml"));
        assert_eq!(
            comparable(stored),
            want,
            "{file}: stored object differs from the golden file"
        );
    }
}

#[tokio::test]
async fn services_get_distinct_cluster_ips_and_keep_them_on_update() {
    let em = emulator().await;
    let path = "/api/v1/namespaces/default/services";
    let svc = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                                  "spec": {"ports": [{"port": 80}]}})
    };
    let a = post(&em, path, &svc("a")).await;
    let b = post(&em, path, &svc("b")).await;
    assert_ne!(a["spec"]["clusterIP"], b["spec"]["clusterIP"]);
    // A replace that leaves clusterIP out keeps the allocated one (patchAllocatedValues).
    let mut replacement = svc("a");
    replacement["metadata"]["resourceVersion"] = a["metadata"]["resourceVersion"].clone();
    replacement["spec"]["ports"] = json!([{"port": 8080}]);
    let req = http::Request::put(format!("{path}/a"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&replacement).unwrap())
        .unwrap();
    let replaced: Value = em.client().request(req).await.unwrap();
    assert_eq!(replaced["spec"]["clusterIP"], a["spec"]["clusterIP"]);
    assert_eq!(replaced["spec"]["ports"][0]["targetPort"], json!(8080));
}

const MISSPELT: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "typo"},
  "spec": {"replica": 3, "selector": {"matchLabels": {"app": "typo"}},
           "template": {"metadata": {"labels": {"app": "typo"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}"#;

async fn kubectl_reports_a_misspelt_field_as_a_strict_decoding_error_or_a_warning(kubectl: &Path) {
    let em = emulator().await;
    let k = Kubectl::with_binary(&em, kubectl);
    let file = k.file("typo.json", MISSPELT);
    // kubectl sends fieldValidation=Strict by default.
    let out = k.run(&["create", "-f", &file]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a misspelt field was accepted");
    assert!(
        stderr.contains(r#"strict decoding error: unknown field "spec.replica""#),
        "{stderr}"
    );
    // --validate=warn: created, with the server's warning, and the field dropped.
    let out = k.run(&["create", "--validate=warn", "-f", &file]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"unknown field "spec.replica""#),
        "{stderr}"
    );
    let stored = get(&em, "/apis/apps/v1/namespaces/default/deployments/typo").await;
    assert_eq!(stored["spec"]["replicas"], json!(1));
    assert!(stored["spec"].get("replica").is_none());
}

async fn kubectl_generators_send_protobuf_that_is_stored_with_defaults(kubectl: &Path) {
    let em = emulator().await;
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
        "--port=80",
    ])
    .await;
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
        .await;
    k.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=password=s3cr3t",
    ])
    .await;
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=fast",
    ])
    .await;

    let protobuf_posts = em
        .requests()
        .iter()
        .filter(|r| r.method == http::Method::POST)
        .filter(|r| {
            r.content_type
                .as_deref()
                .is_some_and(|c| c.contains("protobuf"))
        })
        .count();
    assert_eq!(
        protobuf_posts, 4,
        "kubectl sent JSON, the protobuf path was not exercised"
    );

    let d = get(&em, "/apis/apps/v1/namespaces/default/deployments/web").await;
    assert_eq!(d["spec"]["replicas"], json!(2));
    assert_eq!(
        d["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        json!("25%")
    );
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], json!("nginx:1.27"));
    assert_eq!(c["imagePullPolicy"], json!("IfNotPresent"));
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );

    let s = get(&em, "/api/v1/namespaces/default/services/web").await;
    assert_eq!(
        s["spec"]["ports"],
        json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert_eq!(s["spec"]["type"], json!("ClusterIP"));
    assert!(
        s["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .starts_with("10.96.")
    );

    let secret = get(&em, "/api/v1/namespaces/default/secrets/creds").await;
    assert_eq!(secret["data"], json!({"password": "czNjcjN0"}));
    assert_eq!(secret["type"], json!("Opaque"));

    let cm = get(&em, "/api/v1/namespaces/default/configmaps/settings").await;
    assert_eq!(cm["data"], json!({"mode": "fast"}));
}

async fn kubectl_explain_reads_the_built_in_schemas(kubectl: &Path) {
    let em = emulator().await;
    let k = Kubectl::with_binary(&em, kubectl);
    let out = k
        .ok(&["explain", "deployment.spec.template.spec.containers"])
        .await;
    assert!(out.contains("KIND:       Deployment"), "{out}");
    assert!(out.contains("FIELD: containers <[]Container>"), "{out}");
    assert!(out.contains("imagePullPolicy"), "{out}");
    let out = k.ok(&["explain", "service.spec.type"]).await;
    assert!(out.contains("FIELD: type <string>"), "{out}");
}

each_kubectl!(
    kubectl_reports_a_misspelt_field_as_a_strict_decoding_error_or_a_warning,
    kubectl_generators_send_protobuf_that_is_stored_with_defaults,
    kubectl_explain_reads_the_built_in_schemas,
);
