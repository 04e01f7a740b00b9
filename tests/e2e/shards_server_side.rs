//! Sharded replicas on an API server that filters lists and watches by KEP-5866's
//! `shardSelector` (the emulator with sharded list and watch on): the same `weir run --shard`
//! processes shard without writing a label. Each computes the ring itself and watches only the
//! Blogs whose UID hashes into its ranges: every Blog is written by exactly the replica the ring
//! gives it, each replica caches only its share of the Blogs, and no Blog or child ever carries
//! `shard.weir.dev/owner`. (The handover as members join and die is not asserted here yet: a
//! run at load 9 once left a Blog unserved after a fourth replica joined.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::watcher;
use weir::shard::coordinator::FIELD_MANAGER;
use weir::shard::ring::{Ring, VNODES};
use weir::shard::server_side::fnv1a;
use weir::shard::share::VIEW_ANNOTATION;
use weir::shard::{OWNER_LABEL, members};
use weir_e2e::weir_run::{ops_get, sample};
use weir_e2e::{TestEnv, eventually, kinds, plugin};

use super::shards::{
    CONVERGE, FOURTH, Fleet, LEASE_SECS, MOVED, REPLICAS, create_blogs, ready, writer_runs,
};

/// The member the ring of `members` gives the parent with `uid`, as the API server hashes it.
fn owner(members: &[&str], uid: &str) -> &'static str {
    let ring = Ring::new(members.iter().copied(), VNODES);
    let member = ring.owner_of_hash(fnv1a(uid)).unwrap_or_default();
    REPLICAS
        .into_iter()
        .chain([FOURTH])
        .find(|m| *m == member)
        .unwrap_or_default()
}

/// Every Blog's UID by name, once each is Ready for its current generation.
async fn all_ready(blogs: &Api<DynamicObject>) -> Option<BTreeMap<String, String>> {
    let list = blogs.list(&ListParams::default()).await.ok()?;
    let all = list.items.len() == MOVED && list.items.iter().all(ready);
    all.then(|| {
        list.items
            .iter()
            .map(|b| (b.name_any(), b.uid().unwrap_or_default()))
            .collect()
    })
}

/// Whether each of `members` publishes on its shard Lease the view of exactly `members`.
async fn views_are(leases: &Api<Lease>, members: &[&str]) -> Option<()> {
    let want = members.join(",");
    for member in members {
        let lease = leases.get(&members::lease_name(member)).await.ok()?;
        let view = lease.annotations().get(VIEW_ANNOTATION)?;
        if *view != want {
            return None;
        }
    }
    Some(())
}

#[tokio::test]
async fn with_shard_selector_served_replicas_shard_by_ring_ranges_and_write_no_owner_label()
-> anyhow::Result<()> {
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start_sharded().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // The request log and the sharded list and watch are the emulator's.
    };
    env.install_crd(&plugin("blog")?).await?;
    let blogs = env.api(&kinds::blog());
    let leases: Api<Lease> = env.typed();
    // Every state any Blog passes through: none may carry the owner label.
    let labelled = Arc::new(AtomicUsize::new(0));
    let watch = tokio::spawn({
        let (blogs, labelled) = (blogs.clone(), labelled.clone());
        async move {
            let mut events = watcher(blogs, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                if let Ok(watcher::Event::Apply(b) | watcher::Event::InitApply(b)) = event
                    && b.labels().contains_key(OWNER_LABEL)
                {
                    labelled.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    let [a, b, c] = REPLICAS;
    let abc = [a, b, c];
    let fleet = Fleet::new(&env)?;
    let secs = LEASE_SECS.to_string();
    let short = [
        "--shard-lease-duration",
        secs.as_str(),
        "--leader-elect-lease-duration",
        secs.as_str(),
    ];
    let mut replicas = Vec::new();
    for id in abc {
        replicas.push(fleet.start(id, &short)?);
    }
    eventually("a, b and c serve the view of three", CONVERGE, || {
        views_are(&leases, &abc)
    })
    .await?;
    create_blogs(&env).await?;
    let uids = eventually("every Blog is Ready", CONVERGE, || all_ready(&blogs)).await?;

    // Each Blog was written by exactly the replica the ring of three gives it.
    let runs = writer_runs(&emulator.requests());
    assert_eq!(runs.len(), MOVED, "every Blog was written to by name");
    let mut share: BTreeMap<&str, usize> = BTreeMap::new();
    for (blog, run) in &runs {
        let expected = owner(&abc, &uids[blog]);
        assert_eq!(run, &[expected], "{blog}");
        *share.entry(expected).or_default() += 1;
    }
    println!("shards (server-side): Blogs per replica {share:?}");
    assert_eq!(share.len(), 3, "every replica owns some Blogs: {share:?}");

    // Each caches its share of the Blogs (and every child: children are watched whole), and
    // says it shards server-side.
    for r in &mut replicas {
        r.run
            .check_running()
            .with_context(|| format!("replica {}", r.id))?;
        let metrics = ops_get(r.ops, "/metrics").await?;
        assert_eq!(
            sample(&metrics, r#"weir_shard_mode{mode="server-side"}"#),
            Some(1.0),
            "{}",
            r.id
        );
        let blogs = sample(
            &metrics,
            r#"weir_cached_objects{group="weir.dev",kind="Blog"}"#,
        );
        assert_eq!(blogs, Some(share[r.id] as f64), "{} caches its share", r.id);
        let deployments = sample(
            &metrics,
            r#"weir_cached_objects{group="apps",kind="Deployment"}"#,
        );
        assert_eq!(
            deployments,
            Some(MOVED as f64),
            "{} caches every child",
            r.id
        );
        let listed = weir::listing::fetch(&r.ops.to_string()).await?;
        let shard = listed.first().and_then(|p| p.shard.as_ref());
        assert_eq!(
            shard.map(|s| s.mode.as_str()),
            Some("server-side"),
            "{}",
            r.id
        );
    }

    // Over the whole log: one writer at a time; no label written, on any object, ever.
    let requests = emulator.requests();
    writer_runs(&requests);
    let relabels: Vec<&String> = requests
        .iter()
        .filter(|r| r.is_write() && r.field_manager.as_deref() == Some(FIELD_MANAGER))
        .map(|r| &r.path)
        .filter(|p| !p.contains("/leases/"))
        .collect();
    assert!(relabels.is_empty(), "label writes: {relabels:?}");
    watch.abort();
    assert_eq!(
        labelled.load(Ordering::Relaxed),
        0,
        "a Blog carried {OWNER_LABEL}"
    );
    for kind in [
        kinds::blog(),
        kinds::config_map(),
        kinds::deployment(),
        kinds::service(),
    ] {
        for o in env.api(&kind).list(&ListParams::default()).await?.items {
            assert!(
                !o.labels().contains_key(OWNER_LABEL),
                "{} {}",
                kind.kind,
                o.name_any()
            );
        }
    }
    for r in &mut replicas {
        r.run
            .check_running()
            .with_context(|| format!("replica {}", r.id))?;
        r.run.terminate(Duration::from_secs(10)).await?;
    }
    Ok(())
}
