//! Sharded replicas by label as they scale from three to four to two (one killed with SIGKILL,
//! one stopped with SIGTERM): each parent moves with one writer at a time, the killed replica's
//! parents are served again within its shard Lease's duration plus 2 s, and every parent keeps
//! exactly its children.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::json;
use weir::shard::{DRAIN_LABEL, OWNER_LABEL};
use weir_e2e::{TestEnv, eventually, kinds, plugin};

use super::shards::{
    CONVERGE, FOURTH, Fleet, LEASE_SECS, MOVED, REPLICAS, coordinator_sees, create_blogs, observed,
    ready, writer_runs,
};

/// The leader Lease of the handover scenario by label, in seconds: when the killed replica is
/// the coordinator, its successor is elected (the Lease run out, then up to a second of the
/// election's random back-off) before the killed replica's shard Lease can have run out.
const LEADER_LEASE_SECS: u64 = 3;

/// The Blogs once each is Ready for its current generation, owned by one of `members` and not
/// being drained: by owner.
async fn settled(
    blogs: &Api<DynamicObject>,
    children: &[Api<DynamicObject>],
    members: &[&str],
) -> Option<BTreeMap<String, Vec<String>>> {
    let list = blogs.list(&ListParams::default()).await.ok()?;
    let mut owned: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut owner_of: BTreeMap<String, String> = BTreeMap::new();
    for b in &list.items {
        let labels = b.labels();
        let owner = labels.get(OWNER_LABEL)?;
        if !ready(b) || labels.contains_key(DRAIN_LABEL) || !members.contains(&owner.as_str()) {
            return None;
        }
        owned.entry(owner.clone()).or_default().push(b.name_any());
        owner_of.insert(b.name_any(), owner.clone());
    }
    // A Blog is served by its owner once its owner has reconciled it: its children carry the
    // owner's label too (a relabelled Blog still reads Ready from its previous owner's status).
    for api in children {
        let list = api.list(&ListParams::default()).await.ok()?;
        let mut seen = 0;
        for child in &list.items {
            let Some(blog) = child.owner_references().first().map(|o| o.name.as_str()) else {
                continue;
            };
            seen += 1;
            if child.labels().get(OWNER_LABEL) != owner_of.get(blog) {
                return None;
            }
        }
        if seen != MOVED {
            return None;
        }
    }
    (list.items.len() == MOVED).then_some(owned)
}

#[tokio::test]
async fn parents_keep_one_writer_as_replicas_scale_from_3_to_4_to_2_with_one_killed()
-> anyhow::Result<()> {
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(());
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let blogs = env.api(&kinds::blog());
    let children: Vec<Api<DynamicObject>> =
        [kinds::config_map(), kinds::deployment(), kinds::service()]
            .iter()
            .map(|k| env.api(k))
            .collect();
    let [a, b, c] = REPLICAS;
    let d = FOURTH;
    let (abc, abcd, bcd) = ([a, b, c], [a, b, c, d], [b, c, d]);
    let fleet = Fleet::new(&env)?;
    let (secs, leader_secs) = (LEASE_SECS.to_string(), LEADER_LEASE_SECS.to_string());
    let short = [
        "--shard-lease-duration",
        secs.as_str(),
        "--leader-elect-lease-duration",
        leader_secs.as_str(),
    ];
    let mut replica_a = fleet.start(a, &short)?;
    let mut replica_b = fleet.start(b, &short)?;
    let mut replica_c = fleet.start(c, &short)?;
    // Placed from the start by a coordinator that sees all three, so a Blog moves only when the
    // test moves it.
    coordinator_sees(&[&replica_a, &replica_b, &replica_c]).await?;
    create_blogs(&env).await?;
    eventually("a, b and c serve every Blog", CONVERGE, || {
        settled(&blogs, &children, &abc)
    })
    .await?;

    // 3 → 4: d joins; the ring gives it about a quarter, each drained by its owner first.
    let mut replica_d = fleet.start(d, &short)?;
    let joined = eventually("d takes its share", CONVERGE, || async {
        let owned = settled(&blogs, &children, &abcd).await?;
        owned.contains_key(d).then_some(owned)
    })
    .await?;
    let counts: BTreeMap<&String, usize> = joined.iter().map(|(m, v)| (m, v.len())).collect();
    println!("shards: after d joined {counts:?}");
    let of_a = joined.get(a).cloned().unwrap_or_default();
    assert!(!of_a.is_empty(), "a kept a share: {counts:?}");

    // 4 → 3: a is killed (SIGKILL: nothing in it finishes, its Leases are left to run out); its
    // Blogs, edited now, are served by the others within its Lease's duration plus 2 s.
    for r in [
        &mut replica_a,
        &mut replica_b,
        &mut replica_c,
        &mut replica_d,
    ] {
        r.check_running()?;
    }
    replica_a.run.kill()?;
    let killed = Instant::now();
    for name in &of_a {
        env.patch_spec(&kinds::blog(), name, json!({"title": "moved"}))
            .await?;
    }
    let edited: Vec<&String> = of_a.iter().collect();
    eventually("a's Blogs are served again", CONVERGE, || {
        observed(&blogs, &edited)
    })
    .await?;
    let served_again = killed.elapsed();
    println!(
        "shards: {} Blogs of a killed replica served again {served_again:?} after the kill (shard Lease {LEASE_SECS} s, leader Lease {LEADER_LEASE_SECS} s)",
        of_a.len(),
    );
    let bound = Duration::from_secs(LEASE_SECS + 2);
    assert!(
        served_again <= bound,
        "a's {} Blogs were served again {served_again:?} after the kill: more than the Lease duration plus 2 s ({bound:?})",
        of_a.len()
    );
    let after_kill = eventually("b, c and d serve every Blog", CONVERGE, || {
        settled(&blogs, &children, &bcd)
    })
    .await?;

    // 3 → 2: of b and c, the one that took more of a's Blogs stops cleanly on SIGTERM (its
    // Leases released), so those Blogs move a second time; the other two serve everything. (Not
    // d: Blogs it took when it joined would go back to their first owner, a return the log's
    // runs cannot tell from two writers overlapping.)
    let of_a_on = |m: &str| -> Vec<&String> {
        let owned = after_kill.get(m).into_iter().flatten();
        owned.filter(|blog| of_a.contains(blog)).collect()
    };
    let (on_b, on_c) = (of_a_on(b), of_a_on(c));
    let (stopping, moved_twice, mut stopped, mut rest) = if on_c.len() > on_b.len() {
        (c, on_c, replica_c, vec![replica_b, replica_d])
    } else {
        (b, on_b, replica_b, vec![replica_c, replica_d])
    };
    stopped.run.terminate(Duration::from_secs(10)).await?;
    let survivors: Vec<&str> = rest.iter().map(|r| r.id).collect();
    let last = eventually("the other two serve every Blog", CONVERGE, || {
        settled(&blogs, &children, &survivors)
    })
    .await?;
    let counts: BTreeMap<&String, usize> = last.iter().map(|(m, v)| (m, v.len())).collect();
    println!("shards: after {stopping} stopped {counts:?}");
    let owner_of: BTreeMap<&str, &str> = last
        .iter()
        .flat_map(|(m, blogs)| blogs.iter().map(move |b| (b.as_str(), m.as_str())))
        .collect();

    // One writer at a time: per Blog, each replica's writes form one unbroken run in the log,
    // and the last run is its owner's; a's Blogs that went to the stopped member were written
    // by a, by it, then by a survivor.
    let runs = writer_runs(&emulator.requests());
    assert_eq!(runs.len(), MOVED);
    for (blog, run) in &runs {
        assert_eq!(run.last(), owner_of.get(blog.as_str()), "{blog}");
    }
    assert!(
        !moved_twice.is_empty(),
        "b or c took some of a's Blogs: {after_kill:?}"
    );
    for blog in moved_twice {
        let run = runs.get(blog).map(Vec::as_slice).unwrap_or_default();
        let survivor = owner_of.get(blog.as_str()).copied().unwrap_or_default();
        assert_eq!(
            run,
            [a, stopping, survivor],
            "{blog} moved from a to {stopping}, then to its owner"
        );
    }

    // Nothing orphaned: each Blog has exactly its three children, labelled with its owner.
    for kind in [kinds::config_map(), kinds::deployment(), kinds::service()] {
        let children = env.api(&kind).list(&ListParams::default()).await?;
        let owned: Vec<&DynamicObject> = children
            .items
            .iter()
            .filter(|o| !o.owner_references().is_empty())
            .collect();
        assert_eq!(owned.len(), MOVED, "{} children", kind.kind);
        for child in owned {
            let blog = child.owner_references()[0].name.as_str();
            assert_eq!(
                child.labels().get(OWNER_LABEL).map(String::as_str),
                owner_of.get(blog).copied(),
                "{} {} of {blog}",
                kind.kind,
                child.name_any()
            );
        }
    }
    for r in &mut rest {
        r.stop().await?;
    }
    Ok(())
}
