//! The shipped `weir run` killed with SIGKILL at 20 random moments while 100 Blogs are created,
//! edited and deleted, and started again each time: once the kills stop, every live Blog is
//! Ready with the children its spec asks for, no child is duplicated or orphaned, and every
//! deleted Blog is gone (its finalizer removed). The seed's first rule: a restart loses nothing.
//!
//! The kill moments come from a seeded generator; the seed is printed, and `WEIR_KILLS_SEED=N`
//! replays a run's schedule (the host's own timing still varies).

use std::time::Duration;

use anyhow::Context;
use kube::api::DeleteParams;
use rand::{RngExt, SeedableRng};
use serde_json::json;
use weir_e2e::convergence::{self, Expected};
use weir_e2e::weir_run::WeirRun;
use weir_e2e::{TestEnv, kinds, plugin};

const BLOGS: usize = 100;
const KILLS: usize = 20;
/// Time between two creations.
const PACE: Duration = Duration::from_millis(150);
/// From a Blog's creation to its edit (odd Blogs) and to its deletion (one in four).
const EDIT_AFTER: Duration = Duration::from_millis(1500);
const DELETE_AFTER: Duration = Duration::from_millis(3000);
/// How long the host may take to converge once the kills stop (generous: a loaded machine).
const SETTLE: Duration = Duration::from_secs(120);

/// One step of the run, at a time from its start.
#[derive(Clone, Copy, Debug)]
enum Step {
    Create(usize),
    Edit(usize),
    Delete(usize),
    Kill,
}

/// The run's steps in time order: the churn, and `KILLS` kills at random moments of it.
fn schedule(seed: u64) -> Vec<(Duration, Step)> {
    let mut steps = Vec::new();
    for i in 0..BLOGS {
        let created = PACE * i as u32;
        steps.push((created, Step::Create(i)));
        if i % 2 == 1 {
            steps.push((created + EDIT_AFTER, Step::Edit(i)));
        }
        if i % 4 == 1 {
            steps.push((created + DELETE_AFTER, Step::Delete(i)));
        }
    }
    let end = steps.iter().map(|(t, _)| *t).max().unwrap_or_default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..KILLS {
        let at = rng.random_range(Duration::from_millis(200)..end);
        steps.push((at, Step::Kill));
    }
    steps.sort_by_key(|(t, _)| *t);
    steps
}

#[tokio::test]
async fn a_host_killed_20_times_mid_run_converges_with_nothing_duplicated_or_orphaned()
-> anyhow::Result<()> {
    // A second process at full speed, restarted twenty times: kept apart from the scenarios
    // that saturate the CPU or assume a host that is never stalled.
    let _exclusive = weir_e2e::exclusive().await;
    let seed = match std::env::var("WEIR_KILLS_SEED") {
        Ok(s) => s.parse().context("WEIR_KILLS_SEED is not a number")?,
        Err(_) => rand::random(),
    };
    println!("kills: seed {seed} (replay with WEIR_KILLS_SEED={seed})");
    let env = TestEnv::start().await?;
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let dir = tempfile::Builder::new().prefix("weir-kills-").tempdir()?;
    let kubeconfig = match (&env.emulator, std::env::var_os("KUBECONFIG")) {
        (Some(emulator), _) => {
            let path = dir.path().join("kubeconfig");
            emulator.write_kubeconfig(&path)?;
            path
        }
        (None, Some(path)) => path.into(),
        (None, None) => anyhow::bail!("neither the emulator nor KUBECONFIG"),
    };
    let mut host = WeirRun::start(
        &WeirRun::debug_binary()?,
        dir.path(),
        &kubeconfig,
        Some(&env.namespace),
        600,
    )?;
    let blogs = env.api(&kinds::blog());
    let name = |i: usize| format!("b{i}");
    let mut expected = Expected::default();
    let mut survived = 0;
    let started = tokio::time::Instant::now();
    for (at, step) in schedule(seed) {
        tokio::time::sleep_until(started + at).await;
        match step {
            Step::Create(i) => {
                env.create(
                    &kinds::blog(),
                    &name(i),
                    json!({"title": format!("t{i}"), "replicas": 1}),
                )
                .await?;
                expected.live.insert(name(i));
            }
            Step::Edit(i) => {
                env.patch_spec(
                    &kinds::blog(),
                    &name(i),
                    json!({"title": format!("t{i} edited"), "replicas": 2}),
                )
                .await?;
            }
            Step::Delete(i) => {
                blogs.delete(&name(i), &DeleteParams::default()).await?;
                expected.live.remove(&name(i));
                expected.deleted.insert(name(i));
            }
            Step::Kill => {
                // The process killed must be the one started after the previous kill, still
                // running: a host that died by itself is a failure, not a survived kill.
                host.check_running()?;
                host.kill()?;
                host.restart()?;
                survived += 1;
            }
        }
    }
    let churn = started.elapsed();
    let converged = convergence::wait(&env.client, &env.namespace, &expected, SETTLE).await;
    host.check_running()?;
    let converged = converged
        .with_context(|| format!("seed {seed}; weir run's log ends:\n{}", host.log_tail(30)))?;
    println!(
        "kills survived: {survived} of {KILLS} ({} starts; {BLOGS} Blogs, {} deleted, over {churn:?}); \
         converged {} Blogs with {} children {:?} after the churn",
        host.starts(),
        expected.deleted.len(),
        converged.blogs,
        converged.children,
        started.elapsed() - churn,
    );
    assert_eq!(survived, KILLS);
    assert_eq!(converged.blogs, BLOGS - expected.deleted.len());
    Ok(())
}
