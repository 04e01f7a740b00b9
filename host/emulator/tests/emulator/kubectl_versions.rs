//! Older kubectl (1.27, 1.28) against the emulator: they read `/openapi/v2` for `apply` and
//! `explain`. These tests fail (never skip) when the versioned binaries are missing.

use std::path::PathBuf;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use weir_emulator::{Emulator, EmulatorConfig};

use crate::kubectl_bin::{Kubectl, current_kubectl};

/// Where the Google Cloud SDK's `kubectl` package installs the versions beside the default one.
const SDK_BIN: &str = "/usr/lib/google-cloud-sdk/bin";

/// `kubectl.1.MINOR`, from the SDK's directory or PATH.
fn versioned_kubectl(minor: u32) -> PathBuf {
    let name = format!("kubectl.1.{minor}");
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::iter::once(PathBuf::from(SDK_BIN))
        .chain(std::env::split_paths(&path))
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed (not in {SDK_BIN} nor on PATH): these tests need it")
        })
}

fn deployment(replicas: u32, tier: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, labels: {{tier: {tier}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: nginx}}]
"
    )
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: blogs.weir.dev}
spec:
  group: weir.dev
  scope: Namespaced
  names: {plural: blogs, singular: blog, kind: Blog}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the blog should be.
            properties:
              title: {type: string, description: The blog's title.}
              replicas: {type: integer, nullable: true}
"#;

/// Apply a Deployment twice (create, then a three-way patch), a CRD and one of its objects,
/// and explain a built-in and a custom field, all with kubectl 1.`minor`.
async fn kubectl_applies_and_explains(minor: u32) {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let k = Kubectl::with_binary(&em, &versioned_kubectl(minor));
    let file = k.file("web.yaml", &deployment(1, "front"));
    k.ok(&["apply", "-f", &file]).await;
    let file = k.file("web.yaml", &deployment(3, "edge"));
    k.ok(&["apply", "-f", &file]).await;
    let web = Api::<Deployment>::default_namespaced(em.client())
        .get("web")
        .await
        .unwrap();
    assert_eq!(web.spec.unwrap().replicas, Some(3));
    assert_eq!(web.metadata.labels.unwrap()["tier"], "edge");

    let crd = k.file("crd.yaml", CRD);
    k.ok(&["apply", "-f", &crd]).await;
    let blog = k.file(
        "blog.yaml",
        "apiVersion: weir.dev/v1\nkind: Blog\nmetadata: {name: hello}\nspec: {title: Hello}\n",
    );
    k.ok(&["apply", "-f", &blog]).await;
    assert_eq!(
        k.ok(&["get", "blog", "hello", "-o", "jsonpath={.spec.title}"])
            .await,
        "Hello"
    );

    let explained = k.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(explained.contains("replicas"), "{explained}");
    assert!(explained.contains("integer"), "{explained}");
    let explained = k.ok(&["explain", "blog.spec"]).await;
    assert!(explained.contains("The blog's title."), "{explained}");

    let v2: Vec<u16> = em
        .requests()
        .into_iter()
        .filter(|r| r.path == "/openapi/v2")
        .map(|r| r.status)
        .collect();
    assert!(!v2.is_empty(), "kubectl 1.{minor} never read /openapi/v2");
    assert!(v2.iter().all(|s| *s == 200), "{v2:?}");
}

#[tokio::test]
async fn kubectl_1_27_applies_and_explains_through_openapi_v2() {
    kubectl_applies_and_explains(27).await;
}

#[tokio::test]
async fn kubectl_1_28_applies_and_explains_through_openapi_v2() {
    kubectl_applies_and_explains(28).await;
}

#[tokio::test]
async fn kubectl_creates_a_priority_class_beside_the_two_system_classes() {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    for k in [
        Kubectl::new(&em),
        Kubectl::with_binary(&em, &versioned_kubectl(28)),
        Kubectl::with_binary(&em, &current_kubectl()),
    ] {
        k.ok(&["delete", "priorityclass", "batch-low", "--ignore-not-found"])
            .await;
        k.ok(&[
            "create",
            "priorityclass",
            "batch-low",
            "--value=1000",
            "--description=batch jobs",
        ])
        .await;
        assert_eq!(
            k.ok(&[
                "get",
                "pc",
                "batch-low",
                "-o",
                "jsonpath={.value} {.preemptionPolicy} {.description}"
            ])
            .await,
            "1000 PreemptLowerPriority batch jobs"
        );
    }
    let k = Kubectl::new(&em);
    let listed = k
        .ok(&[
            "get",
            "priorityclasses",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.value},{.preemptionPolicy};{end}",
        ])
        .await;
    assert_eq!(
        listed,
        "batch-low=1000,PreemptLowerPriority;\
         system-cluster-critical=2000000000,PreemptLowerPriority;\
         system-node-critical=2000001000,PreemptLowerPriority;"
    );
    let table = k.ok(&["get", "pc", "system-node-critical"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    );
}
