//! Leadership moves without overlap: a killed leader is replaced (the failover time is printed,
//! median of five), and a leader cut off from its lease steps down before the standby's first
//! write, then stands again in the same process.
//!
//! Each host gets its own client whose `User-Agent` names it, so the emulator's request log says
//! which instance sent every write.

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use weir::client::ClientLimits;
use weir::manager::Manager;
use weir::plugin::Plugin;
use weir_e2e::host::RunSource;
use weir_e2e::{TestEnv, eventually, kinds, plugin, wait_ready};
use weir_emulator::{Fault, RequestCursor, RequestRecord, Rule};

/// A host whose requests carry `User-Agent: weir-e2e/<id>`.
async fn host(env: &TestEnv, blog: &Plugin, id: &str) -> anyhow::Result<Manager> {
    let client = env
        .client_as(&format!("weir-e2e/{id}"), ClientLimits::default())
        .await?;
    env.run_args(RunSource::Loaded(vec![blog.clone()]))
        .elected(id, &env.namespace)
        .in_process(env)
        .client(client)
        .start()
        .await
}

/// A reconcile's write (not the lease, not an Event) sent by host `id`.
fn write_by(r: &RequestRecord, id: &str) -> bool {
    r.is_write()
        && !r.path.contains("/leases")
        && !r.path.contains("/events")
        && r.user_agent.as_deref() == Some(&format!("weir-e2e/{id}"))
}

#[tokio::test]
async fn a_killed_leader_is_replaced_and_the_failover_time_is_printed() -> anyhow::Result<()> {
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // The request log with client identities is the emulator's.
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let blogs = env.api(&kinds::blog());
    let mut leader = host(&env, &blog, "h0").await?;
    let (mut leader_id, mut next) = ("h0".to_owned(), 1);
    env.create(
        &kinds::blog(),
        "first",
        json!({"title": "t", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "first").await?;

    let mut failovers = Vec::new();
    for round in 0..5 {
        let standby_id = format!("h{next}");
        next += 1;
        let standby = host(&env, &blog, &standby_id).await?;
        eventually("the standby is ready", Duration::from_secs(10), || async {
            standby.is_ready().then_some(())
        })
        .await?;
        // SIGKILL: nothing finishes, the lease is not released.
        leader.kill();
        let killed = Instant::now();
        let name = format!("r{round}");
        env.create(&kinds::blog(), &name, json!({"title": "t", "replicas": 1}))
            .await?;
        let took = eventually("the standby writes", Duration::from_secs(10), || async {
            emulator
                .requests()
                .iter()
                .any(|r| write_by(r, &standby_id))
                .then(|| killed.elapsed())
        })
        .await?;
        wait_ready(&blogs, &name).await?;
        let log = emulator.requests();
        let first = log
            .iter()
            .position(|r| write_by(r, &standby_id))
            .context("the new leader wrote")?;
        assert!(
            !log[first..].iter().any(|r| write_by(r, &leader_id)),
            "round {round}: the killed leader {leader_id} wrote after the new leader's first write"
        );
        failovers.push(took);
        (leader, leader_id) = (standby, standby_id);
    }
    failovers.sort();
    println!(
        "leader failover (kill to the new leader's first write, lease 2 s): median {:?} of {:?}",
        failovers[2], failovers
    );
    assert!(failovers[2] < Duration::from_secs(5), "{failovers:?}");
    leader.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_leader_cut_off_from_its_lease_steps_down_before_the_takeover_and_stands_again()
-> anyhow::Result<()> {
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(());
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let blogs = env.api(&kinds::blog());
    let a = host(&env, &blog, "a").await?;
    env.create(
        &kinds::blog(),
        "first",
        json!({"title": "t", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "first").await?;
    let b = host(&env, &blog, "b").await?;
    eventually("b is ready", Duration::from_secs(10), || async {
        b.is_ready().then_some(())
    })
    .await?;

    // a can no longer renew (or read) its lease; everything else still works for it.
    emulator.faults().set(vec![
        Rule::new(&[], Some("leases"), Fault::Status { code: 503 }).client("weir-e2e/a"),
    ]);
    // Keep a's workers busy with edits while its lease runs out.
    let mut edits = 0;
    let took_over = Instant::now();
    // Read only what is new on each turn of the loop, from the start of the log.
    let mut cursor = RequestCursor::default();
    while !emulator
        .requests_since(&mut cursor)
        .iter()
        .any(|r| write_by(r, "b"))
    {
        env.patch_spec(&kinds::blog(), "first", json!({"replicas": edits % 3 + 1}))
            .await?;
        edits += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
        anyhow::ensure!(
            took_over.elapsed() < Duration::from_secs(10),
            "b never took over"
        );
    }
    let log = emulator.requests();
    let first_b = log
        .iter()
        .position(|r| write_by(r, "b"))
        .context("b wrote")?;
    assert!(
        log[..first_b].iter().any(|r| write_by(r, "a")),
        "a led and wrote before"
    );
    assert!(
        !log[first_b..].iter().any(|r| write_by(r, "a")),
        "a wrote after b's first write: overlapping leaders"
    );
    wait_ready(&blogs, "first").await?;

    // a is still running: once b is gone and a can reach its lease, a leads again.
    emulator.faults().clear();
    b.kill();
    env.create(
        &kinds::blog(),
        "later",
        json!({"title": "t", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "later").await?;
    let log = emulator.requests();
    assert!(
        log.iter()
            .any(|r| write_by(r, "a") && r.path.contains("later")),
        "the stepped-down host stood again and leads"
    );
    a.shutdown().await;
    Ok(())
}
