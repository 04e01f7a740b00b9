//! Rollouts an operator steers with the shipped `weir rollout` command: a canary that would not
//! step by itself for minutes is promoted at once, or paused and aborted, and no child changes
//! version more than the move asks; the same for a `Plugin`'s `spec.candidate`, so a rollout
//! from the cluster needs no file copied into a pod. After a restart, a request waits for its
//! candidate to come back, and is refused once the wait runs out without it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use weir::cluster::PluginResource;
use weir::manager::Manager;
use weir::rollout::{Phase, RolloutConfig, canary_bucket};
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, wait_ready};
use weir_test_support::registry::LocalRegistry;

use crate::plugin_resource::weir_push;
use crate::rollout_canary::{Versions, follow_versions, rollout_events};
use crate::rollout_shadow::labelled;

const BLOG: &str = "Blog.weir.dev";
const BLOGS: usize = 20;

/// A canary of half the parents that never steps forward by itself (as with `weir run`'s
/// default of five minutes per phase, and more reconciles than the test makes).
fn held_canary() -> RolloutConfig {
    RolloutConfig {
        shadow_reconciles: 0,
        steps: vec![50],
        step_reconciles: u64::MAX,
        min_phase_time: Duration::from_secs(300),
        ..RolloutConfig::default()
    }
}

/// The host serving `serving`, its candidates held in a canary.
async fn held(env: &TestEnv, serving: &weir::plugin::Plugin) -> Result<Manager> {
    env.loaded(std::slice::from_ref(serving))
        .config(|c| c.rollout = held_canary())
        .start()
        .await
}

/// Creates the Blogs and waits until each is Ready; their UIDs.
async fn blogs(env: &TestEnv) -> Result<Vec<String>> {
    let api = env.api(&kinds::blog());
    let mut uids = Vec::new();
    for i in 0..BLOGS {
        let name = format!("blog-{i}");
        env.create(&kinds::blog(), &name, json!({"title": name, "replicas": 1}))
            .await?;
    }
    for i in 0..BLOGS {
        let blog = wait_ready(&api, &format!("blog-{i}")).await?;
        uids.push(blog.metadata.uid.unwrap_or_default());
    }
    Ok(uids)
}

/// Runs the shipped `weir rollout ARGS` against the test's cluster and namespace; its stdout,
/// or an error with its stderr.
async fn weir_rollout(env: &TestEnv, home: &Path, args: &[&str]) -> Result<String> {
    let kubeconfig = match (&env.emulator, std::env::var_os("KUBECONFIG")) {
        (Some(emulator), _) => {
            let path = home.join("kubeconfig");
            emulator.write_kubeconfig(&path)?;
            path.into_os_string()
        }
        (None, Some(path)) => path,
        (None, None) => anyhow::bail!("no emulator and no KUBECONFIG"),
    };
    let weir = weir_e2e::weir_run::WeirRun::debug_binary()?;
    let out = tokio::process::Command::new(weir)
        .arg("rollout")
        .args(args)
        .args(["--namespace", &env.namespace])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .kill_on_drop(true)
        .output()
        .await
        .context("running weir rollout")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    ensure!(
        out.status.success(),
        "weir rollout {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(stdout)
}

/// Waits until exactly `n` children carry v2.
async fn v2_children(env: &TestEnv, n: usize) -> Result<()> {
    eventually(&format!("{n} children carry v2"), CONVERGE, || async {
        (labelled(env, "weir.dev/hot-swapped=v2").await == n).then_some(())
    })
    .await
}

/// Every page's history of version labels, checked against what the move asks: the canary
/// pages went to v2 once (and, `back`, to v1 once more); the others went to v2 once when
/// `promoted`, else never changed.
fn assert_histories(versions: &Versions, canary_pages: &[String], promoted: bool, back: bool) {
    let versions = versions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert_eq!(versions.len(), BLOGS, "{versions:?}");
    let v2 = Some("v2".to_owned());
    for (page, history) in &versions {
        let want = match (canary_pages.contains(page), promoted, back) {
            (true, _, true) => vec![None, v2.clone(), None],
            (true, _, false) | (false, true, _) => vec![None, v2.clone()],
            (false, false, _) => vec![None],
        };
        assert_eq!(history, &want, "page {page}");
    }
}

/// The page ConfigMaps of the Blogs in the canary half.
fn canary_pages(uids: &[String]) -> Vec<String> {
    uids.iter()
        .enumerate()
        .filter(|(_, uid)| canary_bucket(uid) < 50)
        .map(|(i, _)| format!("blog-{i}-page"))
        .collect()
}

#[tokio::test]
async fn a_canary_promoted_by_command_serves_every_blog_at_once_and_flips_no_child_twice()
-> Result<()> {
    let env = TestEnv::start().await?;
    let home = tempfile::tempdir()?;
    let serving = plugin("blog")?;
    env.install_crd(&serving).await?;
    let host = held(&env, &serving).await?;
    let uids = blogs(&env).await?;
    let canary = canary_pages(&uids);
    let (versions, follower) = follow_versions(&env, BLOGS).await?;
    host.propose_candidate(Path::new(serving.label()), plugin("blog-v2")?)
        .await?;
    v2_children(&env, 3 * canary.len()).await?;
    let status = weir_rollout(&env, home.path(), &["status", "blog"]).await?;
    assert!(status.starts_with("blog 0.1.0 (sha256 "), "{status}");
    assert!(status.contains("): Canary 50%\n"), "{status}");

    let promoted = weir_rollout(&env, home.path(), &["promote", "blog"]).await?;
    assert!(promoted.contains("): Promoted"), "{promoted}");
    assert_eq!(
        host.rollouts().get(BLOG).map(|r| r.phase.clone()),
        Some(Phase::Promoted)
    );
    v2_children(&env, 3 * BLOGS).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    follower.abort();
    assert_histories(&versions, &canary, true, false);
    assert_eq!(
        rollout_events(&env, "blog").await?,
        [("Canary".to_owned(), 1), ("Promoted".to_owned(), 1)]
    );
    // The rollout is over: a second request is refused by the command itself.
    let again = weir_rollout(&env, home.path(), &["abort", "blog"]).await;
    let err = again.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("is over: Promoted"), "{err}");
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_paused_canary_aborted_by_command_puts_the_serving_version_back_once() -> Result<()> {
    let env = TestEnv::start().await?;
    let home = tempfile::tempdir()?;
    let serving = plugin("blog")?;
    env.install_crd(&serving).await?;
    let host = held(&env, &serving).await?;
    let uids = blogs(&env).await?;
    let canary = canary_pages(&uids);
    let (versions, follower) = follow_versions(&env, BLOGS).await?;
    let file = Path::new(serving.label());
    let v2 = plugin("blog-v2")?;
    host.propose_candidate(file, v2.clone()).await?;
    v2_children(&env, 3 * canary.len()).await?;

    let paused = weir_rollout(&env, home.path(), &["pause", "blog"]).await?;
    assert!(paused.contains("): Canary 50%, paused"), "{paused}");
    let status = weir_rollout(&env, home.path(), &["status", "blog"]).await?;
    assert!(status.contains("): Canary 50%, paused"), "{status}");
    assert_eq!(host.rollouts().get(BLOG).map(|r| r.paused), Some(true));

    let aborted = weir_rollout(&env, home.path(), &["abort", "blog"]).await?;
    assert!(
        aborted.contains("): RolledBack: aborted by an operator in Canary 50%, paused"),
        "{aborted}"
    );
    v2_children(&env, 0).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    follower.abort();
    assert_histories(&versions, &canary, false, true);
    assert_eq!(
        rollout_events(&env, "blog").await?,
        [
            ("Canary".to_owned(), 1),
            ("Paused".to_owned(), 1),
            ("RolledBack".to_owned(), 1)
        ]
    );
    host.shutdown().await;

    // After a restart the aborted bytes are listed as rolled back and never called.
    let host = env.host(std::slice::from_ref(&serving)).await?;
    eventually("the host is ready", CONVERGE, || async {
        host.is_ready().then_some(())
    })
    .await?;
    host.propose_candidate(file, v2).await?;
    let again = host.rollouts().remove(BLOG).context("listed")?;
    assert!(
        matches!(&again.phase, Phase::RolledBack { reason } if reason.starts_with("aborted by an operator")),
        "{:?}",
        again.phase
    );
    host.shutdown().await;
    Ok(())
}

/// The host following Plugin objects, with `rollout`.
async fn host_from_cluster(env: &TestEnv, store: &Path) -> Result<Manager> {
    env.in_process(RunSource::Cluster(store.into()))
        .config(|c| c.rollout = held_canary())
        .start()
        .await
}

/// Server-side apply of the Plugin `blog` with `spec`.
pub(crate) async fn apply_plugin(
    plugins: &Api<PluginResource>,
    spec: serde_json::Value,
) -> Result<()> {
    let object = json!({
        "apiVersion": "weir.dev/v1alpha1", "kind": "Plugin",
        "metadata": {"name": "blog"}, "spec": spec,
    });
    plugins
        .patch(
            "blog",
            &PatchParams::apply("e2e-user").force(),
            &Patch::Apply(&object),
        )
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_plugins_candidate_named_by_digest_is_canaried_then_promoted_by_command_and_adopted()
-> Result<()> {
    let registry = LocalRegistry::start()?;
    let v1_ref = registry.reference("weir/blog", "1.0");
    weir_push("blog.wasm", &v1_ref);
    let v2_ref = registry.reference("weir/blog", "2.0");
    let v2 = weir_push("blog-v2.wasm", &v2_ref);
    let env = TestEnv::start().await?;
    let home = tempfile::tempdir()?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = crate::plugin_resource::through_the_host::install_plugin_crd(&env).await?;
    apply_plugin(&plugins, json!({"source": {"oci": v1_ref}})).await?;
    let store = tempfile::tempdir()?;
    let host = host_from_cluster(&env, store.path()).await?;
    eventually("the host is ready", CONVERGE, || async {
        host.is_ready().then_some(())
    })
    .await?;
    let uids = blogs(&env).await?;
    let canary = canary_pages(&uids);
    let (versions, follower) = follow_versions(&env, BLOGS).await?;

    // The candidate is the v2 digest in the serving version's repository.
    apply_plugin(
        &plugins,
        json!({"source": {"oci": v1_ref}, "candidate": {"digest": v2}}),
    )
    .await?;
    v2_children(&env, 3 * canary.len()).await?;
    let promoted = weir_rollout(&env, home.path(), &["promote", "blog"]).await?;
    assert!(promoted.contains("): Promoted"), "{promoted}");
    v2_children(&env, 3 * BLOGS).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    follower.abort();
    assert_histories(&versions, &canary, true, false);

    // The operator points the source at v2 and drops the candidate: nothing flips back.
    let (versions, follower) = follow_versions(&env, BLOGS).await?;
    apply_plugin(&plugins, json!({"source": {"oci": v2_ref}, "digest": v2})).await?;
    let v2_sha = plugin("blog-v2")?.sha256().to_owned();
    eventually("v2 serves from the source", CONVERGE, || async {
        let row = host.catalog().rows().into_iter().find(|r| r.kind == BLOG)?;
        (row.sha256 == v2_sha).then_some(())
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    follower.abort();
    let changed: Vec<_> = versions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter(|(_, h)| h.len() > 1)
        .map(|(p, h)| (p.clone(), h.clone()))
        .collect();
    assert!(changed.is_empty(), "pages changed version: {changed:?}");
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn after_a_restart_a_request_waits_for_its_candidate_and_is_refused_when_it_never_comes()
-> Result<()> {
    let env = TestEnv::start().await?;
    let home = tempfile::tempdir()?;
    let serving = plugin("blog")?;
    env.install_crd(&serving).await?;
    let file = Path::new(serving.label());
    let v2 = plugin("blog-v2")?;
    let wait = Duration::from_secs(5);
    let start = || async {
        let rollout = RolloutConfig {
            resume_within: wait,
            ..held_canary()
        };
        let host = env
            .loaded(std::slice::from_ref(&serving))
            .config(|c| c.rollout = rollout)
            .start()
            .await?;
        eventually("the host is ready", CONVERGE, || async {
            host.is_ready().then_some(())
        })
        .await?;
        anyhow::Ok(host)
    };
    let host = start().await?;
    host.propose_candidate(file, v2.clone()).await?;
    eventually("the canary is kept", CONVERGE, || async {
        let status = weir_rollout(&env, home.path(), &["status", "blog"])
            .await
            .ok()?;
        status.contains("): Canary 50%").then_some(())
    })
    .await?;
    host.shutdown().await;

    // Restarted without the candidate: the request is refused once the wait runs out.
    let host = start().await?;
    let asked = std::time::Instant::now();
    let refused = weir_rollout(&env, home.path(), &["promote", "blog"]).await;
    let took = asked.elapsed();
    let refusal = refused.expect_err("no candidate came back: the request is refused");
    assert!(
        format!("{refusal:#}").contains("no candidate is being rolled out"),
        "{refusal:#}"
    );
    assert!(
        took >= wait - Duration::from_millis(500) && took < wait + Duration::from_secs(10),
        "refused {took:?} after the request, the wait being {wait:?}"
    );
    host.shutdown().await;

    // Restarted, the candidate comes back a second after the request: it is carried out then,
    // not when the wait runs out.
    let host = start().await?;
    let asked = std::time::Instant::now();
    let (promoted, proposed) = tokio::join!(
        weir_rollout(&env, home.path(), &["promote", "blog"]),
        async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            host.propose_candidate(file, v2.clone()).await
        }
    );
    proposed?;
    let promoted = promoted?;
    assert!(promoted.contains("): Promoted"), "{promoted}");
    let took = asked.elapsed();
    assert!(
        took < wait,
        "carried out {took:?} after the request, the wait being {wait:?}"
    );
    host.shutdown().await;
    Ok(())
}
