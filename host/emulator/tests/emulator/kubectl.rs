//! The real kubectl against the emulator: apply (client- and server-side), scale, edit, wait,
//! watch and the generators, each check run with every kubectl in `kubectl_bin`.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use crate::kubectl_bin::Kubectl;
use crate::{configmap, eventually};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: blogs.weir.dev}
spec:
  group: weir.dev
  scope: Namespaced
  names: {plural: blogs, singular: blog, kind: Blog, shortNames: [bl]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Title, type: string, jsonPath: .spec.title}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              title: {type: string}
              replicas: {type: integer}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

fn blog(title: &str) -> String {
    format!(
        "apiVersion: weir.dev/v1\nkind: Blog\nmetadata: {{name: hello}}\nspec: {{title: {title}, replicas: 1}}\n"
    )
}

fn writes(em: &Emulator) -> Vec<(String, String, Option<String>, Option<String>)> {
    em.requests()
        .into_iter()
        .filter(|r| r.is_write())
        .map(|r| {
            (
                r.method.to_string(),
                r.path,
                r.content_type,
                r.field_manager,
            )
        })
        .collect()
}

async fn kubectl_applies_a_crd_and_an_object_client_side_and_server_side(kubectl: &Path) {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let k = Kubectl::with_binary(&em, kubectl);
    let crd = k.file("crd.yaml", CRD);
    assert!(k.ok(&["apply", "-f", &crd]).await.contains("created"));
    let file = k.file("blog.yaml", &blog("Hello"));
    assert!(
        k.ok(&["apply", "-f", &file])
            .await
            .contains("blog.weir.dev/hello created")
    );
    let yaml = k.ok(&["get", "blog", "hello", "-o", "yaml"]).await;
    assert!(
        yaml.contains("title: Hello") && yaml.contains("last-applied-configuration"),
        "{yaml}"
    );
    let table = k.ok(&["get", "bl"]).await;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        vec!["NAME", "TITLE", "READY", "AGE"],
        "printer columns via Table:\n{table}"
    );
    assert!(
        table.lines().nth(1).unwrap_or("").starts_with("hello"),
        "short name resolves:\n{table}"
    );

    em.clear_requests();
    k.file("blog.yaml", &blog("Changed"));
    assert!(k.ok(&["apply", "-f", &file]).await.contains("configured"));
    let patch = writes(&em);
    assert_eq!(patch.len(), 1, "{patch:?}");
    assert_eq!(
        patch[0].2.as_deref(),
        Some("application/merge-patch+json"),
        "custom resources get merge patches"
    );
    assert!(k.ok(&["apply", "-f", &file]).await.contains("unchanged"));

    em.clear_requests();
    k.file("blog.yaml", &blog("Server"));
    assert!(
        k.ok(&["apply", "--server-side", "-f", &file])
            .await
            .contains("serverside-applied")
    );
    let ssa = writes(&em);
    assert!(
        ssa.iter()
            .any(|w| w.2.as_deref() == Some("application/apply-patch+yaml")
                && w.3.as_deref() == Some("kubectl")),
        "{ssa:?}"
    );
    assert!(
        k.ok(&["get", "blog", "hello", "-o", "jsonpath={.spec.title}"])
            .await
            .contains("Server")
    );

    k.ok(&[
        "patch",
        "blog",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "blog",
        "hello",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ])
    .await;
    let got = k
        .ok(&[
            "get",
            "blog",
            "hello",
            "-o",
            "jsonpath={.spec.replicas} {.status.ready}",
        ])
        .await;
    assert_eq!(got.trim(), "3 true");
    assert!(k.ok(&["delete", "-f", &file]).await.contains("deleted"));
    assert!(k.run(&["get", "blog", "hello"]).await.status.code() != Some(0));
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: IMAGE
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}]
"#;

async fn kubectl_applies_scales_edits_and_waits_for_a_deployment(kubectl: &Path) {
    let config = EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(300),
        }),
        ..EmulatorConfig::default()
    };
    let em = Emulator::start(config).await.unwrap();
    let k = Kubectl::with_binary(&em, kubectl);
    let file = k.file("deploy.yaml", &DEPLOYMENT.replace("IMAGE", "nginx:1"));
    k.ok(&["apply", "-f", &file]).await;
    k.ok(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=30s",
    ])
    .await;

    em.clear_requests();
    k.file("deploy.yaml", &DEPLOYMENT.replace("IMAGE", "nginx:2"));
    k.ok(&["apply", "-f", &file]).await;
    let patch = writes(&em);
    assert_eq!(
        patch.iter().map(|w| w.2.as_deref()).collect::<Vec<_>>(),
        vec![Some("application/strategic-merge-patch+json")]
    );
    let image = k
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
        .await;
    assert_eq!(image, "nginx:2");

    assert!(
        k.ok(&["scale", "deployment/web", "--replicas=4"])
            .await
            .contains("scaled")
    );
    // Available stays True while 3 of 4 are (maxUnavailable 25%): wait for the rollout instead.
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    let replicas = k
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.replicas} {.status.availableReplicas}",
        ])
        .await;
    assert_eq!(replicas, "4 4");
    let table = k.ok(&["get", "deployments"]).await;
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(&row[..4], ["web", "4/4", "4", "4"], "{table}");

    let mut edit = k.command(&["edit", "deployment/web"]);
    edit.env("KUBE_EDITOR", "sed -i s/nginx:2/nginx:3/");
    let out = edit.output().await.unwrap();
    assert!(
        out.status.success(),
        "edit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let edited = em
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.is_write())
        .unwrap();
    assert_eq!(edited.field_manager.as_deref(), Some("kubectl-edit"));
    assert_eq!(
        k.ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}"
        ])
        .await,
        "nginx:3"
    );

    let yaml = k.ok(&["get", "deployment", "web", "-o", "yaml"]).await;
    assert!(
        yaml.contains("observedGeneration") && yaml.contains("type: Available"),
        "{yaml}"
    );
    k.ok(&["delete", "deployment", "web"]).await;
    assert!(!k.ok(&["get", "deployments"]).await.contains("web"));
}

async fn kubectl_get_watch_streams_changes_and_delete_waits_for_finalizers(kubectl: &Path) {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let k = Kubectl::with_binary(&em, kubectl);
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("a").create(&api).await;
    let watch = k
        .command(&["get", "configmaps", "-w", "--output-watch-events"])
        .spawn()
        .unwrap();
    wait_for_watch(&em).await;
    configmap("b").create(&api).await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "y"}})),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    em.drop_watches();
    let out = tokio::time::timeout(Duration::from_secs(20), watch.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |event: &str, name: &str| {
        text.lines()
            .any(|l| l.split_whitespace().take(2).eq([event, name]))
    };
    assert!(
        line("ADDED", "a") && line("ADDED", "b") && line("MODIFIED", "a"),
        "{text}"
    );

    configmap("held")
        .finalizer("example.com/hold")
        .create(&api)
        .await;
    let deleting = k
        .command(&["delete", "configmap", "held", "--timeout=30s"])
        .spawn()
        .unwrap();
    let api2 = api.clone();
    // kubectl's DELETE marks the held object as deleting and waits; how long kubectl takes to
    // start and send it depends on the machine's load, so wait for the mark rather than a pause.
    eventually("kubectl's delete to mark `held` as deleting", || async {
        let held = api2.get("held").await.unwrap();
        held.metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    api2.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), deleting.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(api.get_opt("held").await.unwrap().is_none());
}

async fn wait_for_watch(em: &Emulator) {
    for _ in 0..500 {
        if em.requests().iter().any(|r| r.is_watch()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("kubectl never opened a watch");
}

async fn kubectl_generators_create_namespaces_configmaps_and_secrets_over_protobuf(kubectl: &Path) {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&["create", "namespace", "blogs"]).await;
    k.ok(&[
        "create",
        "configmap",
        "site",
        "-n",
        "blogs",
        "--from-literal=title=Hello",
    ])
    .await;
    k.ok(&[
        "create",
        "secret",
        "generic",
        "db",
        "-n",
        "blogs",
        "--from-literal=password=s3cr3t",
    ])
    .await;
    let created: Vec<Option<String>> = em
        .requests()
        .into_iter()
        .filter(|r| r.is_write())
        .map(|r| r.content_type)
        .collect();
    assert!(
        created
            .iter()
            .all(|c| c.as_deref() == Some("application/vnd.kubernetes.protobuf")),
        "{created:?}"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "cm",
            "site",
            "-n",
            "blogs",
            "-o",
            "jsonpath={.data.title}"
        ])
        .await,
        "Hello"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "secret",
            "db",
            "-n",
            "blogs",
            "-o",
            "jsonpath={.data.password}"
        ])
        .await,
        "czNjcjN0"
    );
}

each_kubectl!(
    kubectl_applies_a_crd_and_an_object_client_side_and_server_side,
    kubectl_applies_scales_edits_and_waits_for_a_deployment,
    kubectl_get_watch_streams_changes_and_delete_waits_for_finalizers,
    kubectl_generators_create_namespaces_configmaps_and_secrets_over_protobuf,
);
