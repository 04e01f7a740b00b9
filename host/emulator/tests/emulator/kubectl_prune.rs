//! `kubectl apply --prune`: the labelled objects left out of the manifests are deleted, a server dry run deletes nothing.

use std::path::Path;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use weir_emulator::{Emulator, EmulatorConfig};

use crate::configmap;
use crate::kubectl_bin::Kubectl;

const PRUNE_SET: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {app: pruned}}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, labels: {app: pruned}}
stringData: {password: s3cr3t}
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: pruned}}
spec:
  selector: {app: pruned}
  ports: [{port: 80, targetPort: 8080}]
"#;

async fn kubectl_apply_prune_deletes_the_labelled_objects_left_out_of_the_manifests(
    kubectl: &Path,
) {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let k = Kubectl::with_binary(&em, kubectl);
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    // Not labelled: prune must leave it alone even though the manifests never mention it.
    configmap("bystander").create(&api).await;
    let dir = k.file("set.yaml", PRUNE_SET);
    let allow = [
        "--prune-allowlist=core/v1/ConfigMap",
        "--prune-allowlist=core/v1/Secret",
        "--prune-allowlist=core/v1/Service",
    ];
    let apply = |extra: &'static [&'static str]| {
        let mut args = vec!["apply", "-f", &dir, "-l", "app=pruned", "--prune"];
        args.extend(allow);
        args.extend(extra);
        args
    };
    let out = k.ok(&apply(&[])).await;
    assert!(
        out.contains("configmap/settings created") && out.contains("service/web created"),
        "{out}"
    );

    // Drop the Secret and the Service from the set: the next apply prunes them.
    k.file("set.yaml", PRUNE_SET.split("---").next().unwrap_or(""));
    let out = k.ok(&apply(&["--dry-run=server"])).await;
    assert!(
        out.contains("secret/creds pruned (server dry run)"),
        "{out}"
    );
    assert!(
        k.ok(&["get", "secret", "creds", "-o", "name"])
            .await
            .contains("creds"),
        "a server dry run deleted the Secret"
    );
    let out = k.ok(&apply(&[])).await;
    assert!(
        out.contains("configmap/settings unchanged")
            && out.contains("secret/creds pruned")
            && out.contains("service/web pruned"),
        "{out}"
    );
    let left = k.ok(&["get", "cm,secret,svc", "-o", "name"]).await;
    let mut left: Vec<&str> = left.lines().collect();
    left.sort_unstable();
    assert_eq!(
        left,
        ["configmap/bystander", "configmap/settings"],
        "prune removed too much or too little"
    );
}

each_kubectl!(kubectl_apply_prune_deletes_the_labelled_objects_left_out_of_the_manifests,);
