//! Blogs created at once converge without a write that only lost a race: no `409 Conflict` (a
//! stale resourceVersion) and no `422` (a failed JSON Patch test) on any parent, although the
//! children's watch events start reconciles before the echo of the host's own finalizer and
//! status writes reaches the parent's cache.

use serde_json::json;
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn blogs_created_at_once_converge_without_a_conflicting_write() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // The request log is the emulator's.
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let host = env.host(&[blog]).await?;
    let blogs = env.api(&kinds::blog());
    const BLOGS: usize = 30;
    for i in 0..BLOGS {
        env.create(
            &kinds::blog(),
            &format!("race-{i}"),
            json!({"title": format!("Blog {i}"), "replicas": 1}),
        )
        .await?;
    }
    for i in 0..BLOGS {
        wait_ready(&blogs, &format!("race-{i}")).await?;
    }
    let parent_writes: Vec<(String, u16)> = emulator
        .requests()
        .iter()
        .filter(|r| r.is_write() && r.path.contains("/blogs/"))
        .map(|r| (format!("{} {}", r.method, r.path), r.status))
        .collect();
    let lost: Vec<&(String, u16)> = parent_writes
        .iter()
        .filter(|(_, status)| matches!(status, 409 | 422))
        .collect();
    assert!(lost.is_empty(), "writes that lost a race: {lost:?}");
    let finalizer_writes = parent_writes
        .iter()
        .filter(|(w, _)| !w.ends_with("/status"))
        .count();
    assert_eq!(
        finalizer_writes, BLOGS,
        "one finalizer write per Blog: {parent_writes:?}"
    );
    host.shutdown().await;
    Ok(())
}
