//! An edit of a converged parent that changes one child costs one write for that child and one
//! status patch, with no 409 anywhere: counted from the emulator's request log.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::json;
use weir::client::ClientLimits;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, quiet, wait_ready};
use weir_emulator::RequestRecord;

/// The `User-Agent` of the host under test, so that its requests are told from the test's own.
const HOST: &str = "weir-e2e/one-write";
const BLOGS: usize = 3;

/// `VERB path status` of a request, for readable assertions.
fn line(r: &RequestRecord) -> String {
    format!("{} {} {}", r.method, r.path, r.status)
}

/// The image the Deployment `name`'s pod template runs.
async fn image(env: &TestEnv, name: &str) -> Option<String> {
    let d = env.typed::<Deployment>().get(name).await.ok()?;
    d.spec?.template.spec?.containers.first()?.image.clone()
}

#[tokio::test]
async fn an_edit_that_changes_one_child_costs_one_write_and_one_status_patch() -> anyhow::Result<()>
{
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        // The request log is the emulator's; a cluster keeps none to count from.
        return Ok(());
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let client = env.client_as(HOST, ClientLimits::default()).await?;
    let host = env.loaded(&[blog]).client(client).start().await?;
    let blogs = env.api(&kinds::blog());
    let ns_path = format!("/namespaces/{}/", env.namespace);
    let by_host =
        |r: &RequestRecord| r.user_agent.as_deref() == Some(HOST) && r.path.contains(&ns_path);
    let mut cursor = emulator.request_cursor();
    // No pods: the Blogs' status (0 of 0 replicas ready) stays the same whatever the pods'
    // simulated readiness does, so an image edit changes the Deployment alone, and the status
    // only by its observedGeneration.
    for i in 0..BLOGS {
        env.create(
            &kinds::blog(),
            &format!("b{i}"),
            json!({"title": format!("Blog {i}"), "replicas": 0}),
        )
        .await?;
    }
    for i in 0..BLOGS {
        wait_ready(&blogs, &format!("b{i}")).await?;
    }
    quiet(&host, Duration::from_millis(400)).await?;
    let creating: Vec<String> = emulator
        .requests_since(&mut cursor)
        .iter()
        .filter(|r| by_host(r) && r.status == 409)
        .map(line)
        .collect();
    assert!(creating.is_empty(), "409s while creating: {creating:#?}");

    // Two edits in a row: the first apply after the create and a later one cost the same.
    for image_name in ["nginx:1.27.1", "nginx:1.27.2"] {
        env.patch_spec(&kinds::blog(), "b1", json!({"image": image_name}))
            .await?;
        eventually("the Deployment runs the new image", CONVERGE, || async {
            (image(&env, "b1").await.as_deref() == Some(image_name)).then_some(())
        })
        .await?;
        wait_ready(&blogs, "b1").await?;
        quiet(&host, Duration::from_millis(400)).await?;
        let requests: Vec<RequestRecord> = emulator
            .requests_since(&mut cursor)
            .into_iter()
            .filter(|r| by_host(r))
            .collect();
        let all: Vec<String> = requests
            .iter()
            .filter(|r| !r.is_watch())
            .map(line)
            .collect();
        assert!(
            requests.iter().all(|r| r.status != 409),
            "no 409 for the edit to {image_name}: {all:#?}"
        );
        let writes: Vec<String> = requests
            .iter()
            .filter(|r| r.is_write() && !r.path.contains("/events"))
            .map(line)
            .collect();
        let blog_status = format!("{}blogs/b1/status", ns_path);
        let deployment = format!("{}deployments/b1", ns_path);
        assert_eq!(
            writes.len(),
            2,
            "one write for the Deployment and one status patch for {image_name}: {writes:#?}"
        );
        assert!(
            writes
                .iter()
                .any(|w| w.starts_with("PATCH") && w.contains(&deployment) && w.ends_with("200")),
            "the Deployment is applied: {writes:#?}"
        );
        assert!(
            writes
                .iter()
                .any(|w| w.starts_with("PATCH") && w.contains(&blog_status) && w.ends_with("200")),
            "the status is patched: {writes:#?}"
        );
        let reads: Vec<String> = requests
            .iter()
            .filter(|r| r.method == "GET" && !r.is_watch())
            .map(line)
            .collect();
        assert!(reads.is_empty(), "no read beside the watches: {reads:#?}");
    }
    host.shutdown().await;
    Ok(())
}
