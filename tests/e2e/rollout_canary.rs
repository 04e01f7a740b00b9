//! Canary and automatic rollback: a candidate failing on a tenth of its parents is rolled back by
//! itself, with the reason, and stays rolled back after a restart; a good candidate goes through
//! Shadow and the canary steps to Promoted, and no child changes version more than once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::runtime::watcher;
use serde_json::json;
use weir::manager::Manager;
use weir::plugin::Plugin;
use weir::rollout::{Phase, RolloutConfig};
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, wait_ready};

use crate::rollout_shadow::labelled;

const SCENARIO: &str = "Scenario.test.weir.dev";
const BLOG: &str = "Blog.weir.dev";

/// The host serving `serving`, rolling candidates out by `rollout`.
async fn host(env: &TestEnv, serving: &Plugin, rollout: RolloutConfig) -> Result<Manager> {
    env.loaded(std::slice::from_ref(serving))
        .config(|c| c.rollout = rollout)
        .start()
        .await
}

/// Starts the host serving `serving` and proposes `candidate` once its controller runs.
async fn propose(
    env: &TestEnv,
    serving: &Plugin,
    candidate: Plugin,
    rollout: RolloutConfig,
) -> Result<Manager> {
    let host = host(env, serving, rollout).await?;
    eventually("the host is ready", CONVERGE, || async {
        host.is_ready().then_some(())
    })
    .await?;
    host.propose_candidate(Path::new(serving.label()), candidate)
        .await?;
    Ok(host)
}

/// The reasons of the rollout Events about `plugin`, oldest first, each with how many times it
/// happened (the recorder folds a repeated reason into a series).
pub async fn rollout_events(env: &TestEnv, plugin: &str) -> Result<Vec<(String, i32)>> {
    let events = env.typed::<Event>().list(&Default::default()).await?;
    let mut about: Vec<Event> = events
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref())
                == Some(format!("weir-rollout-{plugin}").as_str())
        })
        .collect();
    about.sort_by_key(|e| e.event_time.clone().map(|t| t.0));
    Ok(about
        .into_iter()
        .map(|e| {
            let count = e.series.map_or(1, |s| s.count);
            (e.reason.unwrap_or_default(), count)
        })
        .collect())
}

#[tokio::test]
async fn a_candidate_failing_on_a_tenth_of_its_parents_is_rolled_back_by_itself_and_stays_so_after_a_restart()
-> Result<()> {
    let env = TestEnv::start().await?;
    let serving = plugin("scenario")?;
    env.install_crd(&serving).await?;
    let rollout = RolloutConfig {
        shadow_reconciles: 0,
        step_reconciles: 10_000,
        min_phase_time: Duration::ZERO,
        window: 100,
        min_samples: 20,
        margin: 0.05,
        ..RolloutConfig::default()
    };
    const PARENTS: usize = 100;
    let api = env.api(&kinds::scenario());
    let host = host(&env, &serving, rollout.clone()).await?;
    for i in 0..PARENTS {
        let name = format!("s-{i}");
        env.create(
            &kinds::scenario(),
            &name,
            json!({"configMaps": [format!("{name}-cm")]}),
        )
        .await?;
    }
    for i in 0..PARENTS {
        wait_ready(&api, &format!("s-{i}")).await?;
    }
    let candidate = || plugin("scenario-canary-fail");
    host.propose_candidate(Path::new(serving.label()), candidate()?)
        .await?;
    let reason = eventually("the candidate is rolled back", CONVERGE, || async {
        match host.rollouts().remove(SCENARIO)?.phase {
            Phase::RolledBack { reason } => Some(reason),
            _ => None,
        }
    })
    .await?;
    eprintln!("rolled back: {reason}");
    assert!(
        reason.starts_with("in Canary 10%, candidate 0.1.0 failed ")
            && reason.contains(" error), the serving scenario@0.1.0 0 (0%); margin 5%"),
        "{reason}"
    );
    // Every parent is the serving version's again, the canary ones included.
    for i in 0..PARENTS {
        wait_ready(&api, &format!("s-{i}")).await?;
    }
    assert_eq!(
        rollout_events(&env, "scenario").await?,
        [("Canary".to_owned(), 1), ("RolledBack".to_owned(), 1)]
    );
    let kept = env
        .typed::<ConfigMap>()
        .get("weir-rollout-scenario")
        .await?;
    let phase = kept
        .data
        .unwrap_or_default()
        .remove("phase")
        .unwrap_or_default();
    assert!(phase.contains("RolledBack"), "{phase}");
    host.shutdown().await;

    // After a restart the same bytes are not tried again: rolled back, never called.
    let host = propose(&env, &serving, candidate()?, rollout).await?;
    let again = host.rollouts().remove(SCENARIO).context("listed")?;
    assert_eq!(again.phase, Phase::RolledBack { reason });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(host.metrics().compared_of("scenario"), 0);
    host.shutdown().await;
    Ok(())
}

/// Per ConfigMap of the namespace: the values its `weir.dev/hot-swapped` label took, in order.
pub type Versions = Arc<Mutex<BTreeMap<String, Vec<Option<String>>>>>;

/// Follows every child ConfigMap of the namespace and records each change of its version
/// label, from once the first list has shown `pages` of them.
pub async fn follow_versions(
    env: &TestEnv,
    pages: usize,
) -> Result<(Versions, tokio::task::JoinHandle<()>)> {
    let seen: Versions = Arc::default();
    let api = env.typed::<ConfigMap>();
    let record = seen.clone();
    let task = tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let (watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) = (match event {
                Ok(e) => e,
                Err(_) => continue,
            }) else {
                continue;
            };
            if !cm.labels().contains_key("weir.dev/parent-uid") {
                continue;
            }
            let label = cm.labels().get("weir.dev/hot-swapped").cloned();
            let mut seen = record.lock().unwrap_or_else(PoisonError::into_inner);
            let versions = seen.entry(cm.name_any()).or_default();
            if versions.last() != Some(&label) {
                versions.push(label);
            }
        }
    });
    eventually("every page is followed", CONVERGE, || async {
        let n = seen.lock().unwrap_or_else(PoisonError::into_inner).len();
        (n >= pages).then_some(())
    })
    .await?;
    Ok((seen, task))
}

#[tokio::test]
async fn a_good_candidate_is_promoted_through_the_canary_steps_and_no_child_changes_version_twice()
-> Result<()> {
    let env = TestEnv::start().await?;
    let serving = plugin("blog")?;
    env.install_crd(&serving).await?;
    const BLOGS: u64 = 30;
    let rollout = RolloutConfig {
        shadow_reconciles: BLOGS,
        steps: vec![10, 50],
        step_reconciles: BLOGS,
        min_phase_time: Duration::ZERO,
        ..RolloutConfig::default()
    };
    let blogs = env.api(&kinds::blog());
    let host = host(&env, &serving, rollout.clone()).await?;
    for i in 0..BLOGS {
        env.create(
            &kinds::blog(),
            &format!("blog-{i}"),
            json!({"title": format!("Blog {i}"), "replicas": 1}),
        )
        .await?;
    }
    for i in 0..BLOGS {
        wait_ready(&blogs, &format!("blog-{i}")).await?;
    }
    let (versions, follower) = follow_versions(&env, BLOGS as usize).await?;
    host.propose_candidate(Path::new(serving.label()), plugin("blog-v2")?)
        .await?;
    eventually("the candidate is promoted", CONVERGE, || async {
        (host.rollouts().get(BLOG)?.phase == Phase::Promoted).then_some(())
    })
    .await?;
    eventually("every child carries v2", CONVERGE, || async {
        (labelled(&env, "weir.dev/hot-swapped=v2").await as u64 == 3 * BLOGS).then_some(())
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    follower.abort();
    let versions = versions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let changed_twice: Vec<_> = versions.iter().filter(|(_, v)| v.len() > 2).collect();
    assert!(changed_twice.is_empty(), "{changed_twice:?}");
    let histories: BTreeSet<&Vec<Option<String>>> = versions.values().collect();
    assert_eq!(
        histories,
        BTreeSet::from([&vec![None, Some("v2".to_owned())]]),
        "every page went from v1 to v2 once"
    );
    assert_eq!(
        rollout_events(&env, "blog").await?,
        [
            ("Shadow".to_owned(), 1),
            ("Canary".to_owned(), 2),
            ("Promoted".to_owned(), 1)
        ]
    );
    host.shutdown().await;
    Ok(())
}
