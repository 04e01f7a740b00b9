//! Delivery 3: a `Plugin` object naming a component in a private OCI registry on loopback
//! (`kubectl apply -k deploy/plugins/cluster/`, `weir push`, the pull Secret `weir-registry`),
//! which the host in the container pulls under the RBAC deploy/rbac/plugins.yaml grants; and
//! every rule there is needed.

use serde_json::json;

use super::cluster::Cluster;
use super::eventually;
use super::pod::Pod;
use super::registry::LocalRegistry;
use super::rules::{Role, every_rule_is_needed};
use crate::built;

const USER: &str = "weir";
const PASSWORD: &str = "deploy-test";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_image_pulls_a_plugin_object_from_a_private_registry_and_every_plugins_rule_is_needed()
{
    let registry = LocalRegistry::start_with_basic_auth(USER, PASSWORD)
        .expect("a registry on loopback (tests/setup-registry.sh installs it)");
    let cluster = Cluster::start().await;
    cluster.kubectl(&["apply", "--server-side", "-f", "deploy/crd/"]);
    cluster.kubectl(&["apply", "--server-side", "-k", "deploy/plugins/cluster/"]);

    // As deploy/README.md says: push, a pull Secret, the example Plugin pointed at the push.
    let reference = registry.reference("weir/blog", "0.1.0");
    let pushed = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["push", "--username", USER, "--password", PASSWORD])
        .arg(built("blog.wasm"))
        .arg(&reference)
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "weir push: {}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let digest = String::from_utf8(pushed.stdout).unwrap().trim().to_string();
    cluster.kubectl(&[
        "create",
        "secret",
        "docker-registry",
        "weir-registry",
        "-n",
        "weir",
        &format!("--docker-server={}", registry.addr),
        &format!("--docker-username={USER}"),
        &format!("--docker-password={PASSWORD}"),
    ]);
    let mut plugin = cluster.kubectl_json(&[
        "create",
        "--dry-run=client",
        "-f",
        "deploy/plugins/cluster/plugin.yaml",
        "-o",
        "json",
    ]);
    plugin["spec"] = json!({
        "source": {"oci": reference},
        "digest": digest,
        "pullSecret": {"namespace": "weir", "name": "weir-registry"},
    });
    cluster.apply("plugin.json", plugin.to_string().as_bytes());

    let pod = Pod::of(&cluster, "plugin");
    let before = registry.downloads();
    cluster.converges(&pod).await;
    assert!(
        registry.downloads() > before,
        "the host in the container pulled the component"
    );
    eventually(
        "the Plugin's status names the pushed digest",
        &pod,
        async || {
            let plugin = cluster.kubectl_json(&["get", "plugin", "blog", "-o", "json"]);
            (plugin["status"]["digest"] == digest.as_str()).then_some(())
        },
    )
    .await;
    cluster.stops_cleanly(&pod).await;

    // Least privilege: each rule deploy/rbac/plugins.yaml grants is needed. The Plugin is applied
    // anew each time (a status already written for the same spec is not written again).
    let fresh = || {
        cluster.kubectl(&["delete", "plugin", "blog"]);
        cluster.apply("plugin.json", plugin.to_string().as_bytes());
    };
    for role in [
        Role {
            kind: "ClusterRole",
            name: "weir-plugins",
            namespace: None,
        },
        Role {
            kind: "Role",
            name: "weir-pull-secrets",
            namespace: Some("weir"),
        },
    ] {
        every_rule_is_needed(&cluster, &pod, role, fresh).await;
    }
    drop(pod);
    cluster.shutdown().await;
    drop(registry);
}
