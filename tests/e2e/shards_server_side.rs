//! Sharded replicas on an API server that filters lists and watches by KEP-5866's
//! `shardSelector` (the emulator with sharded list and watch on): the same `weir run --shard`
//! processes shard without writing a label. Each computes the ring itself and watches only the
//! Blogs whose UID hashes into its ranges: every Blog is written by exactly the replica the ring
//! gives it, each replica caches only its share of the Blogs, and no Blog or child ever carries
//! `shard.weir.dev/owner`. And as replicas scale from three to four to two (one killed with
//! SIGKILL, one stopped with SIGTERM), each member's cache settles on the share the ring of the
//! live members gives it, every edit is served by exactly that member, the killed replica's
//! parents are served again within its shard Lease's duration plus 2 s, and over the whole log
//! no two replicas write one parent in overlapping windows.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::watcher;
use weir::shard::FIELD_MANAGER;
use weir::shard::ring::{Ring, VNODES};
use weir::shard::server_side::fnv1a;
use weir::shard::share::VIEW_ANNOTATION;
use weir::shard::{OWNER_LABEL, members};
use weir_e2e::weir_run::{ops_get, sample};
use weir_e2e::{TestEnv, eventually, kinds, plugin};

use weir_emulator::{Emulator, RequestCursor};

use super::shards::{
    CONVERGE, FOURTH, Fleet, LEASE_SECS, MOVED, REPLICAS, Replica, blog_of, create_blogs, observed,
    ready, reconcile_write, sender, writer_runs,
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

/// Whether each of `live` caches exactly the Blogs the ring of `members` gives it (`uids`: every
/// Blog's UID by name): its parent watch has listed again with its settled share.
async fn shares_are(
    live: &[&Replica],
    members: &[&str],
    uids: &BTreeMap<String, String>,
) -> Option<()> {
    for r in live {
        let share = uids.values().filter(|u| owner(members, u) == r.id).count();
        let metrics = ops_get(r.ops, "/metrics").await.ok()?;
        let cached = sample(
            &metrics,
            r#"weir_cached_objects{group="weir.dev",kind="Blog"}"#,
        );
        if cached != Some(share as f64) {
            return None;
        }
    }
    Some(())
}

/// Edits the Blogs `names` (a new `title`) and waits until each one's edit is served; then
/// checks every reconcile write since then came from the member the ring of `members` gives the
/// Blog (`gone`: a replica just killed, whose writes sent before it died may still be logged).
/// Returns how long serving them took.
async fn edit_served_by_the_ring(
    env: &TestEnv,
    emulator: &Emulator,
    (names, title): (&[String], &str),
    (members, gone): (&[&str], Option<&str>),
    uids: &BTreeMap<String, String>,
) -> anyhow::Result<Duration> {
    let mut cursor: RequestCursor = emulator.request_cursor();
    let started = std::time::Instant::now();
    for name in names {
        env.patch_spec(&kinds::blog(), name, serde_json::json!({"title": title}))
            .await?;
    }
    let blogs = env.api(&kinds::blog());
    let edited: Vec<&String> = names.iter().collect();
    let what = format!("the edit {title:?} of {} Blogs is served", names.len());
    if let Err(e) = eventually(&what, CONVERGE, || observed(&blogs, &edited)).await {
        // Which Blogs stayed unserved, and whose the ring of `members` makes them.
        let mut unserved = Vec::new();
        for name in names {
            let blog = blogs.get(name).await?;
            if blog.data["status"]["observedGeneration"].as_i64() != blog.metadata.generation {
                unserved.push(format!("{name} ({})", owner(members, &uids[name])));
            }
        }
        return Err(e.context(format!("unserved: {}", unserved.join(", "))));
    }
    let took = started.elapsed();
    let mut writers: BTreeMap<String, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for r in emulator.requests_since(&mut cursor) {
        if !reconcile_write(&r) {
            continue;
        }
        if let (Some(from), Some(blog)) = (sender(&r), blog_of(&r))
            && Some(from) != gone
        {
            writers.entry(blog).or_default().insert(from);
        }
    }
    for name in names {
        let expected = owner(members, &uids[name]);
        let from: Vec<&str> = writers
            .get(name)
            .map(|w| w.iter().copied().collect())
            .unwrap_or_default();
        assert_eq!(
            from,
            [expected],
            "the edit {title:?} of {name} was written by {from:?}; the ring of {members:?} gives it to {expected}"
        );
    }
    Ok(took)
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
        r.check_running()?;
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

    // 3 → 4: d joins. Each member narrows to what its old and its new view both give it,
    // publishes the new view, then widens: every cache settles on the ring of four, and each
    // edit after that is served by the member that ring names.
    let d = FOURTH;
    let abcd = [a, b, c, d];
    replicas.push(fleet.start(d, &short)?);
    eventually("a, b, c and d serve the view of four", CONVERGE, || {
        views_are(&leases, &abcd)
    })
    .await?;
    let live: Vec<&Replica> = replicas.iter().collect();
    eventually("each of four caches its share", CONVERGE, || {
        shares_are(&live, &abcd, &uids)
    })
    .await?;
    let names: Vec<String> = uids.keys().cloned().collect();
    edit_served_by_the_ring(&env, emulator, (&names, "joined"), (&abcd, None), &uids).await?;
    let of_a: Vec<String> = names
        .iter()
        .filter(|n| owner(&abcd, &uids[*n]) == a)
        .cloned()
        .collect();
    let of_d = names
        .iter()
        .filter(|n| owner(&abcd, &uids[*n]) == d)
        .count();
    println!(
        "shards (server-side): after d joined, a owns {} and d {of_d} of {MOVED}",
        of_a.len()
    );
    assert!(!of_a.is_empty() && of_d > 0, "a keeps a share, d takes one");

    // 4 → 3: a is killed (SIGKILL: its Lease is left to run out, its claims with it); its
    // Blogs, edited now, are served by the others within its Lease's duration plus 2 s.
    for r in &mut replicas {
        r.check_running()?;
    }
    let mut killed = replicas.remove(0);
    killed.run.kill()?;
    let bcd = [b, c, d];
    let served_again =
        edit_served_by_the_ring(&env, emulator, (&of_a, "moved"), (&bcd, Some(a)), &uids).await?;
    println!(
        "shards (server-side): {} Blogs of a killed replica served again {served_again:?} after the kill (shard Lease {LEASE_SECS} s)",
        of_a.len()
    );
    let bound = Duration::from_secs(LEASE_SECS + 2);
    assert!(
        served_again <= bound,
        "a's {} Blogs were served again {served_again:?} after the kill: more than the Lease duration plus 2 s ({bound:?})",
        of_a.len()
    );
    eventually("b, c and d serve the view of three", CONVERGE, || {
        views_are(&leases, &bcd)
    })
    .await?;
    let live: Vec<&Replica> = replicas.iter().collect();
    eventually("each of three caches its share", CONVERGE, || {
        shares_are(&live, &bcd, &uids)
    })
    .await?;

    // 3 → 2: b stops cleanly on SIGTERM (its Lease released): c and d serve everything.
    let mut stopped = replicas.remove(0);
    stopped.run.terminate(Duration::from_secs(10)).await?;
    let cd = [c, d];
    eventually("c and d serve the view of two", CONVERGE, || {
        views_are(&leases, &cd)
    })
    .await?;
    let live: Vec<&Replica> = replicas.iter().collect();
    eventually("each of two caches its share", CONVERGE, || {
        shares_are(&live, &cd, &uids)
    })
    .await?;
    edit_served_by_the_ring(&env, emulator, (&names, "stopped"), (&cd, None), &uids).await?;

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
        r.stop().await?;
    }
    Ok(())
}
