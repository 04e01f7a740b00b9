//! A restart in the middle of a rollout: the kept phase resumes when the candidate comes back,
//! and no parent's children go back to the serving version and forth again meanwhile; a
//! candidate that does not come back leaves the serving version serving, and an Event says so;
//! a promoted candidate is what the listing's row shows, before and after the restart.

use std::path::Path;
use std::sync::PoisonError;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use weir::manager::Manager;
use weir::plugin::Plugin;
use weir::rollout::{Phase, RolloutConfig, canary_bucket};
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, wait_ready};

use crate::rollout_canary::{Versions, follow_versions, rollout_events};
use crate::rollout_shadow::labelled;

const BLOG: &str = "Blog.weir.dev";

/// How much later than the serving version the candidate comes back after a restart (in a
/// plugins directory it has its own loader and compile): long enough for the serving version
/// to reconcile every Blog, were the workers not held.
const CANDIDATE_LATE_BY: Duration = Duration::from_millis(1_000);

/// The host serving `serving` with `rollout` and an operations port, ready.
async fn start(env: &TestEnv, serving: &Plugin, rollout: RolloutConfig) -> Result<Manager> {
    let host = env
        .loaded(std::slice::from_ref(serving))
        .config(|c| c.rollout = rollout)
        .start()
        .await?;
    eventually("the host is ready", CONVERGE, || async {
        host.is_ready().then_some(())
    })
    .await?;
    Ok(host)
}

/// Creates `n` Blogs and waits until the serving version reconciled each.
async fn blogs(env: &TestEnv, n: usize) -> Result<Vec<String>> {
    let api = env.api(&kinds::blog());
    let names: Vec<String> = (0..n).map(|i| format!("blog-{i}")).collect();
    for name in &names {
        env.create(&kinds::blog(), name, json!({"title": name, "replicas": 1}))
            .await?;
    }
    let mut uids = Vec::new();
    for name in &names {
        uids.push(
            wait_ready(&api, name)
                .await?
                .metadata
                .uid
                .unwrap_or_default(),
        );
    }
    Ok(uids)
}

/// Waits until exactly `n` children carry the candidate's label and 300 ms pass with no change
/// and no reconcile.
async fn v2_children(env: &TestEnv, host: &Manager, n: usize) -> Result<()> {
    let deadline = tokio::time::Instant::now() + CONVERGE;
    let mut last = None;
    loop {
        let now = (
            labelled(env, "weir.dev/hot-swapped=v2").await,
            host.metrics().reconciles_total(),
        );
        if now.0 == n && last == Some(now) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{n} children do not carry v2 and hold still: {now:?}");
        }
        last = Some(now);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The pages whose version label changed more than once, with their histories.
fn flipped(versions: &Versions) -> Vec<(String, Vec<Option<String>>)> {
    versions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(_, history)| history.len() > 2)
        .map(|(page, history)| (page.clone(), history.clone()))
        .collect()
}

#[tokio::test]
async fn a_restart_during_a_canary_flips_no_blogs_children_back_and_forth() -> Result<()> {
    let env = TestEnv::start().await?;
    let serving = plugin("blog")?;
    env.install_crd(&serving).await?;
    let rollout = RolloutConfig {
        shadow_reconciles: 0,
        steps: vec![50],
        step_reconciles: u64::MAX,
        min_phase_time: Duration::ZERO,
        resume_within: CONVERGE,
        ..RolloutConfig::default()
    };
    let file = Path::new(serving.label());
    let host = start(&env, &serving, rollout.clone()).await?;
    let uids = blogs(&env, 20).await?;
    let canary = uids.iter().filter(|u| canary_bucket(u) < 50).count();
    assert!(canary > 0, "some Blog is in the canary half");
    let (versions, follower) = follow_versions(&env, uids.len()).await?;
    host.propose_candidate(file, plugin("blog-v2")?).await?;
    v2_children(&env, &host, 3 * canary).await?;
    host.shutdown().await;

    // The new host's serving version finds the kept Canary 50%, and waits for its candidate.
    let host = start(&env, &serving, rollout.clone()).await?;
    tokio::time::sleep(CANDIDATE_LATE_BY).await;
    host.propose_candidate(file, plugin("blog-v2")?).await?;
    assert_eq!(
        host.rollouts().get(BLOG).map(|r| r.phase.clone()),
        Some(Phase::Canary { percent: 50 })
    );
    v2_children(&env, &host, 3 * canary).await?;
    let twice = flipped(&versions);
    assert!(twice.is_empty(), "pages changed version twice: {twice:?}");
    host.shutdown().await;

    // Without its candidate, the next host waits `resume_within`, then v1 serves every Blog.
    let rollout = RolloutConfig {
        resume_within: Duration::from_millis(500),
        ..rollout
    };
    let host = start(&env, &serving, rollout).await?;
    v2_children(&env, &host, 0).await?;
    follower.abort();
    let events = rollout_events(&env, "blog").await?;
    assert!(
        events.iter().any(|(reason, _)| reason == "NotResumed"),
        "{events:?}"
    );
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_promoted_candidate_serves_on_after_a_restart_and_is_what_the_listing_row_shows()
-> Result<()> {
    let env = TestEnv::start().await?;
    let serving = plugin("blog")?;
    env.install_crd(&serving).await?;
    // No shadow, no canary step: a proposed candidate is promoted at once.
    let rollout = RolloutConfig {
        shadow_reconciles: 0,
        steps: vec![],
        resume_within: CONVERGE,
        ..RolloutConfig::default()
    };
    let file = Path::new(serving.label());
    let v2 = plugin("blog-v2")?;
    let host = start(&env, &serving, rollout.clone()).await?;
    const BLOGS: usize = 10;
    blogs(&env, BLOGS).await?;
    let (versions, follower) = follow_versions(&env, BLOGS).await?;
    let row_of = |host: &Manager| {
        let addr = host.addr().map(|a| a.to_string()).unwrap_or_default();
        async move {
            let listed = weir::listing::fetch(&addr).await?;
            listed
                .into_iter()
                .find(|p| p.kind == BLOG)
                .context("the Blog row")
        }
    };
    assert_eq!(row_of(&host).await?.sha256, serving.sha256());

    host.propose_candidate(file, v2.clone()).await?;
    v2_children(&env, &host, 3 * BLOGS).await?;
    let row = row_of(&host).await?;
    assert_eq!(
        (row.sha256.as_str(), row.file.as_path()),
        (v2.sha256(), std::path::Path::new(v2.label())),
        "the row shows what serves: {row:?}"
    );
    assert_eq!(row.rollout.map(|r| r.phase), Some(Phase::Promoted));
    host.shutdown().await;

    let host = start(&env, &serving, rollout).await?;
    tokio::time::sleep(CANDIDATE_LATE_BY).await;
    host.propose_candidate(file, v2.clone()).await?;
    v2_children(&env, &host, 3 * BLOGS).await?;
    follower.abort();
    assert_eq!(
        row_of(&host).await?.sha256,
        v2.sha256(),
        "after the restart"
    );
    let twice = flipped(&versions);
    assert!(twice.is_empty(), "pages changed version twice: {twice:?}");
    host.shutdown().await;
    Ok(())
}
