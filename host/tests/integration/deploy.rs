//! Every manifest in `deploy/` applies with the real kubectl (to the emulator), and the
//! checked-in ClusterRole is what `weir rbac` computes from the shipped plugins.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use crate::workspace;
use std::path::Path;

use serde_json::{Value, json};
use weir::plugin::{Engine, EngineConfig};
use weir_emulator::{Emulator, EmulatorConfig};

/// Runs kubectl (the real one, /usr/bin/kubectl, first on PATH) or a shell pipeline using it and returns stdout; panics with stderr on failure.
async fn sh(kubeconfig: &Path, script: &str) -> String {
    let out = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(workspace())
        .env("KUBECONFIG", kubeconfig)
        .env(
            "PATH",
            format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default()),
        )
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn every_manifest_in_deploy_applies_with_kubectl() {
    let emulator = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig).unwrap();
    let kc = kubeconfig.as_path();

    // The base: namespace, CRD, RBAC, the host; then a server-side dry run of the same must
    // find nothing to refuse (the manifests are stable under re-apply).
    let applied = sh(kc, "kubectl apply --server-side -k deploy/").await;
    sh(
        kc,
        "kubectl apply --server-side --dry-run=server -k deploy/",
    )
    .await;
    for object in [
        "namespace/weir",
        "customresourcedefinition.apiextensions.k8s.io/blogs.weir.dev",
        "customresourcedefinition.apiextensions.k8s.io/plugins.weir.dev",
        "clusterrole.rbac.authorization.k8s.io/weir-plugins",
        "customresourcedefinition.apiextensions.k8s.io/tenantplugins.weir.dev",
        "clusterrole.rbac.authorization.k8s.io/weir-tenant-plugins",
        "clusterrole.rbac.authorization.k8s.io/weir-tenant-plugin-editor",
        "role.rbac.authorization.k8s.io/weir-pull-secrets",
        "serviceaccount/weir",
        "clusterrole.rbac.authorization.k8s.io/weir",
        "clusterrolebinding.rbac.authorization.k8s.io/weir",
        "role.rbac.authorization.k8s.io/weir-leader-election",
        "rolebinding.rbac.authorization.k8s.io/weir-leader-election",
        "deployment.apps/weir",
        "service/weir-metrics",
    ] {
        assert!(applied.contains(object), "{object} not applied:\n{applied}");
    }
    let deployment: Value =
        serde_json::from_str(&sh(kc, "kubectl get -n weir deployment weir -o json").await).unwrap();
    let spec = &deployment["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .contains(&json!("--leader-elect"))
    );
    assert_eq!(spec["volumes"][0]["configMap"]["name"], "weir-plugins");
    assert_eq!(spec["serviceAccountName"], "weir");

    // Delivery 1: the plugins ConfigMap, as binaryData, made by the script.
    let plugin = workspace().join("target/plugins/scenario.wasm");
    let bytes = std::fs::read(&plugin).expect("run plugins/build.sh first");
    sh(
        kc,
        &format!(
            "deploy/plugins/configmap.sh {} | kubectl apply --server-side -f -",
            plugin.display()
        ),
    )
    .await;
    let data = sh(
        kc,
        "kubectl get -n weir configmap weir-plugins -o jsonpath='{.binaryData.scenario\\.wasm}'",
    )
    .await;
    assert_eq!(
        data.len(),
        bytes.len().div_ceil(3) * 4,
        "the component is stored whole, base64"
    );

    // Delivery 2: the image-volume overlay (dry run: the same Deployment, another volume).
    let overlay = sh(
        kc,
        "kubectl apply --server-side --dry-run=server -k deploy/plugins/image/ -o json",
    )
    .await;
    assert!(overlay.contains("weir-plugins:0.1.0"), "{overlay}");

    // Delivery 3: Plugin objects (dry run: the flag instead of the plugins volume).
    let overlay: Value = serde_json::from_str(
        &sh(
            kc,
            "kubectl apply --server-side --dry-run=server -k deploy/plugins/cluster/ -o json",
        )
        .await,
    )
    .unwrap();
    let deployment = overlay["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["args"][1], "--plugins-from-cluster");
    // The plugins volume and its mount are gone whole (no item left without its key).
    assert_eq!(
        pod["volumes"],
        json!([{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}]),
        "only the component cache volume: {pod}"
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"],
        json!([{"name": "cache", "mountPath": "/var/cache/weir"}]),
        "only the component cache mount: {pod}"
    );

    // The sharded overlay (dry run): three members, each holding a shard Lease in the namespace
    // the base's Role lets it write Leases in.
    let overlay: Value = serde_json::from_str(
        &sh(
            kc,
            "kubectl apply --server-side --dry-run=server -k deploy/sharded/ -o json",
        )
        .await,
    )
    .unwrap();
    let items = overlay["items"].as_array().unwrap();
    let deployment = items.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 3);
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array().unwrap().contains(&json!("--shard")),
        "{args}"
    );
    assert!(
        !args.as_array().unwrap().contains(&json!("--leader-elect")),
        "{args}"
    );
    let role = items
        .iter()
        .find(|o| o["kind"] == "Role" && o["metadata"]["name"] == "weir-leader-election")
        .unwrap();
    let leases = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resources"] == json!(["leases"]))
        .unwrap();
    for verb in ["get", "list", "create", "update"] {
        assert!(
            leases["verbs"].as_array().unwrap().contains(&json!(verb)),
            "{role}"
        );
    }

    // The examples, on the CRDs the base installed: Blogs, and a Plugin beside the overlay that
    // serves it (not in deploy/examples/, which `weir dev --apply` reads without the Plugin CRD).
    let examples = sh(kc, "kubectl apply -f deploy/examples/").await;
    assert!(
        examples.contains("blog.weir.dev/hello created"),
        "{examples}"
    );
    let plugin = sh(kc, "kubectl apply -f deploy/plugins/cluster/plugin.yaml").await;
    assert!(plugin.contains("plugin.weir.dev/blog created"), "{plugin}");
    emulator.shutdown().await;
}

#[test]
fn the_checked_in_cluster_role_is_what_weir_rbac_computes_for_the_blog_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        workspace().join("target/plugins/blog.wasm"),
        dir.path().join("blog.wasm"),
    )
    .expect("run plugins/build.sh first");
    let engine = Engine::new(EngineConfig {
        cache_dir: Some(workspace().join("target/plugin-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let rendered = weir::rbac::render(&engine, dir.path(), "weir").unwrap();
    let checked_in =
        std::fs::read_to_string(workspace().join("deploy/rbac/cluster-role.yaml")).unwrap();
    assert_eq!(
        checked_in, rendered,
        "deploy/rbac/cluster-role.yaml is stale: regenerate it with `weir rbac --plugins DIR`"
    );
}
