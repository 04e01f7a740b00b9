//! Shadow mode: a candidate in `DIR/candidates/` runs beside the serving Blog on every reconcile
//! and writes nothing; its differences are counted and listed; a candidate that cannot load
//! (corrupt, not a component, its `describe` traps, another contract version) or serve the
//! file's kind is refused with its reason, and the serving version is untouched.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use kube::api::ListParams;
use serde_json::json;
use weir::hotload::CANDIDATES_DIR;
use weir::manager::Manager;
use weir::rollout::{DiffKind, Phase, RolloutConfig, RolloutStatus};
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, quiet, wait_ready};

use weir_e2e::install;

const BLOG: &str = "Blog.weir.dev";

/// The directory host with `rollout` and an operations port.
pub async fn host_on(env: &TestEnv, dir: &Path, rollout: RolloutConfig) -> Result<Manager> {
    env.in_process(RunSource::Plugins(dir.into()))
        .config(|c| c.rollout = rollout)
        .start()
        .await
}

/// Writes to the API server besides leases, Events and the rollout's own ConfigMaps: what a
/// plugin version wrote. `None` against a real cluster.
pub fn plugin_writes(env: &TestEnv) -> Option<Vec<String>> {
    let e = env.emulator.as_ref()?;
    Some(
        e.requests()
            .iter()
            .filter(|r| r.is_write())
            .filter(|r| !r.path.contains("/leases") && !r.path.contains("/events"))
            .filter(|r| !r.path.contains("/weir-rollout-"))
            .map(|r| format!("{} {} by {:?}", r.method, r.path, r.field_manager))
            .collect(),
    )
}

/// Children of every Blog child kind carrying `label`.
pub async fn labelled(env: &TestEnv, label: &str) -> usize {
    let lp = ListParams::default().labels(label);
    let mut n = 0;
    for kind in [kinds::config_map(), kinds::deployment(), kinds::service()] {
        n += env.api(&kind).list(&lp).await.map_or(0, |l| l.items.len());
    }
    n
}

/// The rollout of `kind` once it compared at least `n` reconciles of `sha` and then held still
/// for 300 ms (no reconcile in flight).
pub async fn settled(host: &Manager, kind: &str, sha: &str, n: u64) -> Result<RolloutStatus> {
    let mut last = None;
    eventually("the comparisons settle", CONVERGE, || {
        let now = host
            .rollouts()
            .get(kind)
            .filter(|r| r.sha256 == sha)
            .map(|r| (r.compared, host.metrics().reconciles_total()));
        let before = std::mem::replace(&mut last, now);
        async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            now.filter(|(c, _)| *c >= n)
                .filter(|_| before == now)
                .map(|_| ())
        }
    })
    .await?;
    host.rollouts()
        .remove(kind)
        .ok_or_else(|| anyhow::anyhow!("no rollout of {kind}"))
}

fn staying_in_shadow() -> RolloutConfig {
    RolloutConfig {
        shadow_reconciles: u64::MAX,
        min_phase_time: Duration::ZERO,
        ..RolloutConfig::default()
    }
}

fn sha_of(name: &str) -> Result<String> {
    Ok(plugin(name)?.sha256().to_owned())
}

#[tokio::test]
async fn a_shadowed_candidate_changing_one_label_differs_on_every_blog_and_writes_nothing()
-> Result<()> {
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let dir = tempfile::tempdir()?;
    install(dir.path(), "blog.wasm", "blog.wasm")?;
    let candidates = dir.path().join(CANDIDATES_DIR);
    std::fs::create_dir(&candidates)?;
    let host = host_on(&env, dir.path(), staying_in_shadow()).await?;
    const BLOGS: u64 = 30;
    let blogs = env.api(&kinds::blog());
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
    // Ready is written before the Deployments' last status changes reach the host: the
    // reconciles those cause would land between the count and the candidate's taking effect,
    // uncompared, so the window starts once the host is quiet.
    quiet(&host, Duration::from_millis(500)).await?;
    let writes = plugin_writes(&env);
    let reconciles = host.metrics().reconciles_total();

    install(&candidates, "blog-v2.wasm", "blog.wasm")?;
    let status = settled(&host, BLOG, &sha_of("blog-v2")?, BLOGS).await?;
    let reconciled = host.metrics().reconciles_total() - reconciles;
    assert_eq!(status.phase, Phase::Shadow);
    assert_eq!(
        status.compared, reconciled,
        "every reconcile ran both versions"
    );
    assert_eq!(
        (status.differed, status.diffs.get(&DiffKind::Children)),
        (reconciled, Some(&reconciled)),
        "each reconciled Blog differs, in its children only: {status:?}"
    );
    assert_eq!(status.diffs.len(), 1, "{status:?}");
    assert_eq!(host.metrics().diffs_of("blog", "children"), reconciled);
    assert!(status.candidate_failures.is_empty(), "{status:?}");
    let first = &status.first_diffs[0].diffs[0];
    assert!(
        first
            .detail
            .contains(r#"metadata.labels.weir.dev/hot-swapped: (absent) → "v2""#),
        "{first:?}"
    );
    // Nothing of v2's reached the cluster: no child carries its label, and no write was made.
    assert_eq!(labelled(&env, "weir.dev/hot-swapped").await, 0);
    assert_eq!(plugin_writes(&env), writes, "the shadowed candidate wrote");

    // `weir plugins` shows the phase, the counts and the first diffs in full.
    let addr = host.addr().map(|a| a.to_string()).unwrap_or_default();
    let text = weir::listing::table(&weir::listing::fetch(&addr).await?);
    assert!(
        text.contains(&format!(
            "Shadow 0.1.0: {reconciled} compared, {reconciled} differ, 0 failed"
        )),
        "{text}"
    );
    assert!(text.contains("weir.dev/hot-swapped"), "{text}");
    assert!(
        host.metrics().encode().contains(&format!(
            r#"weir_rollout_diffs_total{{plugin="blog",kind="children"}} {reconciled}"#
        )),
        "the metric"
    );

    // The serving bytes as the candidate: every reconcile compared, none differs.
    install(&candidates, "blog.wasm", "blog.wasm")?;
    let same = settled(&host, BLOG, &sha_of("blog")?, BLOGS).await?;
    assert_eq!((same.differed, same.diffs.len()), (0, 0), "{same:?}");
    assert_eq!(labelled(&env, "weir.dev/hot-swapped").await, 0);
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn candidates_that_cannot_load_or_serve_the_files_kind_are_refused_and_the_serving_version_is_untouched()
-> Result<()> {
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let dir = tempfile::tempdir()?;
    install(dir.path(), "blog.wasm", "blog.wasm")?;
    let candidates = dir.path().join(CANDIDATES_DIR);
    std::fs::create_dir(&candidates)?;
    let host = host_on(&env, dir.path(), staying_in_shadow()).await?;
    let serving = dir.path().join("blog.wasm");
    let sha = sha_of("blog")?;
    let put = |bytes: &[u8]| -> Result<()> {
        let tmp = candidates.join(".blog.wasm.tmp");
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, candidates.join("blog.wasm"))?;
        Ok(())
    };
    let contract = crate::guests::contract();
    let another_contract = contract.replace(
        "package weir:reconciler@0.1.0;",
        "package weir:reconciler@0.5.0;",
    );
    let cases: [(&str, Vec<u8>, &str); 6] = [
        (
            "corrupt",
            b"\0asm\x0d\0\x01\0 truncated".to_vec(),
            "failed to parse WebAssembly module",
        ),
        (
            "a core module",
            b"\0asm\x01\0\0\0".to_vec(),
            "is not a WebAssembly component",
        ),
        (
            "another kind",
            std::fs::read(weir_e2e::built("scenario.wasm"))?,
            "claims Scenario.test.weir.dev, but",
        ),
        (
            "not admitted",
            std::fs::read(weir_e2e::built("hostile-claims.wasm"))?,
            "child v1 Namespace is never allowed",
        ),
        (
            "describe traps",
            crate::guests::dummy_component(&contract, "reconciler"),
            "describe() failed: plugin",
        ),
        (
            "another contract version",
            crate::guests::dummy_component(&another_contract, "reconciler"),
            "does not implement weir:reconciler@0.1.0 or 0.2.0 or 0.3.0 or 0.4.0: built against weir:reconciler@0.5.0",
        ),
    ];
    let addr = host.addr().map(|a| a.to_string()).unwrap_or_default();
    for (case, bytes, expected) in &cases {
        put(bytes)?;
        let reason = eventually(&format!("{case} is refused"), CONVERGE, || async {
            host.refused_candidates()
                .get(&serving)
                .filter(|r| r.contains(expected))
                .cloned()
        })
        .await?;
        eprintln!("{case}: {reason}");
        assert!(host.rollouts().is_empty(), "{case}: no rollout started");
        let listed = weir::listing::fetch(&addr).await?;
        assert_eq!(
            (
                listed[0].sha256.as_str(),
                listed[0].candidate_refused.as_ref()
            ),
            (sha.as_str(), Some(&reason)),
            "{case}: v1 serves, and the listing shows the reason"
        );
    }
    let text = weir::listing::table(&weir::listing::fetch(&addr).await?);
    assert!(text.contains("blog: candidate refused:"), "{text}");

    // A candidate for a file nobody serves waits, refused, until one does.
    install(&candidates, "blog-v2.wasm", "nothing.wasm")?;
    let nothing = dir.path().join("nothing.wasm");
    eventually("the orphan is refused", CONVERGE, || async {
        host.refused_candidates()
            .get(&nothing)
            .filter(|r| r.starts_with("no plugin is served from"))
            .cloned()
    })
    .await?;

    env.create(
        &kinds::blog(),
        "after",
        json!({"title": "after the refusals", "replicas": 1}),
    )
    .await?;
    wait_ready(&env.api(&kinds::blog()), "after").await?;
    assert_eq!(labelled(&env, "weir.dev/hot-swapped").await, 0);
    host.shutdown().await;
    Ok(())
}
