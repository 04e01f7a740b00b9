//! Delivery 1, the default deployment: `kubectl apply -k deploy/`, the plugin as the
//! `weir-plugins` ConfigMap (`deploy/plugins/configmap.sh`); and every rule of the ClusterRole
//! `weir rbac` prints for it is needed, while a plugin the policy refuses gets none.

use super::cluster::Cluster;
use super::pod::Pod;
use super::rules::{Role, every_rule_is_needed};
use crate::{built, workspace};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_image_serves_plugins_from_the_configmap_with_least_privilege_and_every_rule_is_needed()
{
    let cluster = Cluster::start().await;
    cluster.kubectl(&["apply", "--server-side", "-k", "deploy/"]);
    let configmap = std::process::Command::new(workspace().join("deploy/plugins/configmap.sh"))
        .arg(built("blog.wasm"))
        .output()
        .unwrap();
    assert!(configmap.status.success());
    cluster.apply("plugins.yaml", &configmap.stdout);
    let pod = Pod::of(&cluster, "configmap");
    cluster.serves_the_examples(&pod).await;

    // Least privilege: the ClusterRole is what `weir rbac` prints for the plugins the pod
    // mounted; without any one of its rules, a new Blog meets a 403 naming that rule.
    let plugins = pod.volume("plugins");
    let printed = cluster.weir_rbac(&plugins, &[]);
    cluster.apply("cluster-role.yaml", printed.as_bytes());
    let role = Role {
        kind: "ClusterRole",
        name: "weir",
        namespace: None,
    };
    every_rule_is_needed(&cluster, &pod, role, || ()).await;

    // A plugin the policy refuses gets no rule: the Blog under a policy without Deployments.
    let policy = cluster.path("policy.yaml");
    std::fs::write(
        &policy,
        "children:\n  - {group: '', kind: ConfigMap}\n  - {group: '', kind: Service}\n",
    )
    .unwrap();
    let skipped = cluster.weir_rbac(
        &plugins,
        &["--skip-refused", "--policy", policy.to_str().unwrap()],
    );
    assert!(skipped.contains("refused"), "{skipped}");
    let granted: Vec<&str> = skipped
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    for kind in ["blogs", "deployments", "configmaps", "services"] {
        assert!(
            !granted.iter().any(|l| l.contains(kind)),
            "{kind} granted to a refused plugin:\n{skipped}"
        );
    }
    drop(pod);
    cluster.shutdown().await;
}
