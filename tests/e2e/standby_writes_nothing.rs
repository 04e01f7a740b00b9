//! A standby writes nothing, of any kind. Two shipped `weir run --leader-elect
//! --plugins-from-cluster` processes serve a Blog `Plugin` whose candidate is in Canary: the
//! emulator's request log, by the `User-Agent` naming each replica, shows no write from the
//! standby (no child, no parent status, no Event, no rollout phase, no `Plugin` status) while the
//! leader canaries the candidate and an operator promotes it. Then the leader is killed: the
//! standby, which read the Canary phase when it started, takes the promoted phase kept by the
//! leader when it comes to lead, so no page changes version more than once across the failover.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::coordination::v1::Lease;
use serde_json::json;
use weir::rollout::{Phase, PhaseStore, Request, canary_bucket};
use weir_e2e::weir_run::WeirRun;
use weir_e2e::{TestEnv, eventually, kinds, plugin, wait_ready};
use weir_emulator::RequestRecord;

use crate::plugin_resource::through_the_host::install_plugin_crd;
use crate::plugin_resource::weir_push;
use crate::rollout_canary::follow_versions;
use crate::rollout_shadow::labelled;
use crate::rollout_steered::apply_plugin;

const BLOGS: usize = 12;
/// Generous: two debug processes on a loaded machine, and a 15 s lease to run out.
const WAIT: Duration = Duration::from_secs(120);

/// The replica that sent `r`, from its `User-Agent` (`weir/VERSION (ID)`).
fn sent_by(r: &RequestRecord, id: &str) -> bool {
    r.user_agent
        .as_deref()
        .is_some_and(|a| a.ends_with(&format!("({id})")))
}

/// A write of any kind but a Lease's.
fn write(r: &RequestRecord) -> bool {
    r.is_write() && !r.path.contains("/leases")
}

/// `weir run --plugins-from-cluster --leader-elect` as replica `id`, with a canary of half the
/// parents that never steps forward by itself; and its operations address.
fn replica(env: &TestEnv, dir: &Path, kubeconfig: &Path, id: &str) -> Result<(WeirRun, String)> {
    // A port free now, for the replica's `/plugins`.
    let ops = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .to_string();
    let ns = env.namespace.as_str();
    let run = WeirRun::start_from_cluster(
        &WeirRun::debug_binary()?,
        &dir.join(id),
        kubeconfig,
        (Some(ns), 600),
        &ops,
        &[
            "--leader-elect",
            "--identity",
            id,
            "--lease-namespace",
            ns,
            "--rollout-shadow-reconciles",
            "0",
            "--rollout-steps",
            "50",
            "--rollout-step-reconciles",
            "1000000",
        ],
    )?;
    Ok((run, ops))
}

/// The holder of the leader Lease.
async fn holder(env: &TestEnv) -> Option<String> {
    let lease = env.typed::<Lease>().get_opt("weir-leader").await.ok()??;
    lease.spec?.holder_identity
}

/// Waits until exactly `n` children carry v2.
async fn v2_children(env: &TestEnv, n: usize) -> Result<()> {
    eventually(&format!("{n} children carry v2"), WAIT, || async {
        (labelled(env, "weir.dev/hot-swapped=v2").await == n).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_standby_writes_nothing_and_takes_over_a_promoted_canary_without_flipping_a_child()
-> Result<()> {
    // Two processes at full speed: kept apart from scenarios that assume a quiet machine.
    let _exclusive = weir_e2e::exclusive().await;
    let registry = weir_test_support::registry::LocalRegistry::start()?;
    let v1_ref = registry.reference("weir/blog", "1.0");
    weir_push("blog.wasm", &v1_ref);
    let v2 = weir_push("blog-v2.wasm", &registry.reference("weir/blog", "2.0"));
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // The request log with client identities is the emulator's.
    };
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    apply_plugin(&plugins, json!({"source": {"oci": v1_ref}})).await?;
    let dir = tempfile::Builder::new().prefix("weir-standby-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;

    // a leads, and serves every Blog with v1.
    let (mut a, _) = replica(&env, dir.path(), &kubeconfig, "a")?;
    eventually("a leads", WAIT, || async {
        (holder(&env).await.as_deref() == Some("a")).then_some(())
    })
    .await?;
    let blogs = env.api(&kinds::blog());
    let mut canary_pages = Vec::new();
    for i in 0..BLOGS {
        let name = format!("blog-{i}");
        env.create(&kinds::blog(), &name, json!({"title": name, "replicas": 1}))
            .await?;
    }
    for i in 0..BLOGS {
        let blog = wait_ready(&blogs, &format!("blog-{i}")).await?;
        if canary_bucket(blog.metadata.uid.as_deref().unwrap_or_default()) < 50 {
            canary_pages.push(format!("blog-{i}-page"));
        }
    }
    let (versions, follower) = follow_versions(&env, BLOGS).await?;

    // b stands by; the candidate goes into Canary 50% on both, and a writes the canary half.
    let (mut b, b_ops) = replica(&env, dir.path(), &kubeconfig, "b")?;
    apply_plugin(
        &plugins,
        json!({"source": {"oci": v1_ref}, "candidate": {"digest": v2}}),
    )
    .await?;
    v2_children(&env, 3 * canary_pages.len()).await?;
    eventually("b rolls the candidate out too", WAIT, || async {
        let listed = weir::listing::fetch(&b_ops).await.ok()?;
        let rollout = listed.into_iter().find_map(|p| p.rollout)?;
        (rollout.phase == Phase::Canary { percent: 50 }).then_some(())
    })
    .await?;

    // An operator promotes the candidate: a carries it out and keeps the phase.
    let store = PhaseStore::new(env.client.clone(), &env.namespace, "e2e");
    store.ask("blog", Request::Promote).await?;
    eventually("the promotion is carried out", WAIT, || async {
        let kept = store.kept("blog").await.ok()?;
        (kept.answer.as_deref() == Some("done")).then_some(())
    })
    .await?;
    v2_children(&env, 3 * BLOGS).await?;
    a.check_running()?;
    b.check_running()?;

    let log = emulator.requests();
    let by = |id: &str, what: &dyn Fn(&RequestRecord) -> bool| {
        log.iter()
            .filter(|r| write(r) && sent_by(r, id) && what(r))
            .count()
    };
    let phase_saves = |r: &RequestRecord| r.path.contains("/configmaps/weir-rollout-blog");
    let events = |r: &RequestRecord| r.path.contains("/events");
    let plugin_status = |r: &RequestRecord| r.path.contains("/plugins/blog/status");
    for (what, kind) in [
        (
            "rollout phases",
            &phase_saves as &dyn Fn(&RequestRecord) -> bool,
        ),
        ("Events", &events),
        ("Plugin status", &plugin_status),
    ] {
        assert!(by("a", kind) > 0, "the leader wrote {what}");
    }
    let from_b: Vec<String> = log
        .iter()
        .filter(|r| write(r) && sent_by(r, "b"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(from_b.is_empty(), "the standby wrote: {from_b:?}");

    // a is killed: b takes over from the promoted phase, not the Canary it read at its start.
    a.kill()?;
    env.create(
        &kinds::blog(),
        "after",
        json!({"title": "after", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "after").await?;
    let log = emulator.requests();
    assert!(
        log.iter().any(|r| write(r) && sent_by(r, "b")),
        "b leads and writes"
    );
    eventually("b serves the promoted candidate", WAIT, || async {
        let listed = weir::listing::fetch(&b_ops).await.ok()?;
        let rollout = listed.into_iter().find_map(|p| p.rollout)?;
        (rollout.phase == Phase::Promoted).then_some(())
    })
    .await?;
    v2_children(&env, 3 * (BLOGS + 1)).await?;
    // b reconciled the Blogs it queued while standing by (before "after"), and holds still.
    eventually("b reconciled every Blog and holds still", WAIT, || {
        let b_ops = &b_ops;
        async move {
            let listed = weir::listing::fetch(b_ops).await.ok()?;
            let done: u64 = listed.iter().flat_map(|p| p.reconciles.values()).sum();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let again: u64 = weir::listing::fetch(b_ops)
                .await
                .ok()?
                .iter()
                .flat_map(|p| p.reconciles.values())
                .sum();
            (done > BLOGS as u64 && done == again).then_some(())
        }
    })
    .await?;
    follower.abort();
    b.check_running()?;
    let versions = versions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let v2 = Some("v2".to_owned());
    for i in 0..BLOGS {
        let page = format!("blog-{i}-page");
        assert_eq!(
            versions.get(&page),
            Some(&vec![None, v2.clone()]),
            "{page} went from v1 to v2 once (canary pages: {canary_pages:?})"
        );
    }
    Ok(())
}
