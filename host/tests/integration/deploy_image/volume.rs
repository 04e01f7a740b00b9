//! Delivery 2: the plugins in an OCI image mounted as the pod's `plugins` volume
//! (`kubectl apply -k deploy/plugins/image/`, the image built from deploy/plugins/image/Dockerfile).

use serde_json::Value;

use super::cluster::Cluster;
use super::pod::{Pod, podman};
use crate::{built, workspace};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_image_serves_plugins_from_an_image_volume() {
    let cluster = Cluster::start().await;
    cluster.kubectl(&["apply", "--server-side", "-f", "deploy/crd/"]);
    cluster.kubectl(&["apply", "--server-side", "-k", "deploy/plugins/image/"]);

    // The plugins image as its Dockerfile says to build it, under the reference the Deployment
    // mounts (present, so `pullPolicy: IfNotPresent` pulls nothing).
    let deployment =
        cluster.kubectl_json(&["get", "-n", "weir", "deployment", "weir", "-o", "json"]);
    let reference = plugins_image(&deployment);
    let context = cluster.path("plugins-image");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::copy(built("blog.wasm"), context.join("blog.wasm")).unwrap();
    let dockerfile = workspace().join("deploy/plugins/image/Dockerfile");
    let build = podman(&[
        "build",
        "--quiet",
        "-f",
        dockerfile.to_str().unwrap(),
        "-t",
        &reference,
        context.to_str().unwrap(),
    ]);
    assert!(
        build.status.success(),
        "podman build of the plugins image: {}",
        String::from_utf8_lossy(&build.stderr)
    );

    let pod = Pod::of(&cluster, "volume");
    cluster.serves_the_examples(&pod).await;
    drop(pod);
    cluster.shutdown().await;
}

/// The reference of the image the Deployment mounts as its `plugins` volume.
fn plugins_image(deployment: &Value) -> String {
    deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "plugins")
        .and_then(|v| v["image"]["reference"].as_str())
        .unwrap_or_else(|| panic!("no image volume `plugins` in {deployment}"))
        .to_string()
}
