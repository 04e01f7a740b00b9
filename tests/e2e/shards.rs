//! Sharded replicas on one emulator. Three `weir run --shard` processes share 300 Blogs: every
//! Blog is reconciled by exactly one replica, the one its owner label names (the emulator's
//! request log, by the `User-Agent` naming each replica), each replica caches only its share
//! (its `weir_cached_objects` gauges), and all converge. And as replicas scale from three to
//! four to two (one killed, one stopped), each parent moves with one writer at a time, is
//! served again and keeps exactly its children.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::json;
use weir::manager::{Manager, PluginSource};
use weir::plugin::Plugin;
use weir::shard::{DRAIN_LABEL, OWNER_LABEL, ShardConfig, coordinator::FIELD_MANAGER, members};
use weir_e2e::weir_run::{WeirRun, ops_get, sample};
use weir_e2e::{TestEnv, condition, eventually, fast_config, fast_leader, kinds, plugin};
use weir_emulator::{Emulator, RequestRecord};

const BLOGS: usize = 300;
const REPLICAS: [&str; 3] = ["shard-a", "shard-b", "shard-c"];
/// From the last Blog created to all of them Ready (generous: three debug processes on two cores).
const CONVERGE: Duration = Duration::from_secs(180);

/// Blog `i`'s name; the first six characters of a child's name say whose it is.
fn name(i: usize) -> String {
    format!("sb-{i:03}")
}

/// The Blog a reconcile's write went to, read from its path: the Blog itself (status, finalizer)
/// or a child named after it (`sb-007`, `sb-007-page`). A create names nothing in its path.
fn blog_of(r: &RequestRecord) -> Option<String> {
    let segments: Vec<&str> = r.path.split('/').collect();
    let at = segments
        .iter()
        .position(|s| matches!(*s, "blogs" | "configmaps" | "deployments" | "services"))?;
    let object = segments.get(at + 1)?;
    object
        .get(..6)
        .filter(|n| n.starts_with("sb-"))
        .map(str::to_owned)
}

/// The replica that sent `r`, from its `User-Agent`: `weir/VERSION (ID)` or `weir-e2e (ID)`.
fn sender(r: &RequestRecord) -> Option<&'static str> {
    let agent = r.user_agent.as_deref()?;
    REPLICAS
        .into_iter()
        .chain([FOURTH])
        .find(|id| agent.ends_with(&format!("({id})")))
}

/// A write of a reconcile: not a Lease's, not an Event, not the coordinator's label.
fn reconcile_write(r: &RequestRecord) -> bool {
    r.is_write()
        && !r.path.contains("/leases")
        && !r.path.contains("/events")
        && r.field_manager.as_deref() != Some(FIELD_MANAGER)
}

fn ready(blog: &DynamicObject) -> bool {
    let current = blog.data["status"]["observedGeneration"].as_i64() == blog.metadata.generation;
    let is_true = |t| condition(blog, t).is_some_and(|c| c["status"] == "True");
    current && is_true("Ready") && is_true("Reconciled")
}

#[tokio::test]
async fn three_sharded_replicas_each_reconcile_and_cache_only_their_share_of_300_blogs()
-> anyhow::Result<()> {
    // Three processes at full speed: kept apart from scenarios that assume a quiet machine.
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // The request log with client identities is the emulator's.
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let dir = tempfile::Builder::new().prefix("weir-shards-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let binary = WeirRun::debug_binary()?;
    let mut replicas = Vec::new();
    for id in REPLICAS {
        // A port free now, for the replica's `/metrics`.
        let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let run = WeirRun::start_with(
            &binary,
            &dir.path().join(id),
            &kubeconfig,
            (Some(&env.namespace), 600),
            &ops.to_string(),
            &[
                "--shard",
                "--identity",
                id,
                "--lease-namespace",
                &env.namespace,
            ],
        )?;
        replicas.push((id, ops, run));
    }

    // Every replica is a member before the first Blog, so no Blog moves during the run.
    let leases: Api<Lease> = env.typed();
    eventually("three shard members", Duration::from_secs(60), || async {
        let members = members::members(&leases).await.ok()?;
        (members.len() == REPLICAS.len()).then_some(())
    })
    .await?;

    futures::stream::iter(0..BLOGS)
        .map(|i| {
            let env = &env;
            async move {
                env.create(
                    &kinds::blog(),
                    &name(i),
                    json!({"title": "t", "replicas": 1}),
                )
                .await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;

    let blogs = env.api(&kinds::blog());
    let all = eventually("every Blog is Ready", CONVERGE, || async {
        let list = blogs.list(&ListParams::default()).await.ok()?;
        let ready = list.items.iter().filter(|b| ready(b)).count();
        (ready == BLOGS).then_some(list.items)
    })
    .await;
    for (id, _, run) in &mut replicas {
        run.check_running()
            .with_context(|| format!("replica {id}"))?;
    }
    let all = all?;

    // Each Blog's owner, as labelled by the coordinator.
    let mut owned: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut owner_of: BTreeMap<String, String> = BTreeMap::new();
    for b in &all {
        let owner = b
            .labels()
            .get(OWNER_LABEL)
            .cloned()
            .with_context(|| format!("{} has no owner label", b.name_any()))?;
        owned.entry(owner.clone()).or_default().push(b.name_any());
        owner_of.insert(b.name_any(), owner);
    }
    let counts: BTreeMap<&String, usize> = owned.iter().map(|(m, b)| (m, b.len())).collect();
    println!("shards: Blogs per replica {counts:?}");
    assert_eq!(
        owned.keys().map(String::as_str).collect::<Vec<_>>(),
        REPLICAS,
        "every replica owns some Blogs"
    );
    for (member, blogs) in &owned {
        assert!(
            blogs.len() >= BLOGS / 5,
            "{member} owns {} of {BLOGS}",
            blogs.len()
        );
    }

    // Every Blog's reconcile writes (its status and finalizer, its children by name) came from
    // exactly one replica: its owner.
    let requests = emulator.requests();
    let mut writers: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    let mut created: BTreeMap<&str, usize> = BTreeMap::new();
    for r in requests.iter().filter(|r| reconcile_write(r)) {
        let Some(from) = sender(r) else { continue };
        if let Some(blog) = blog_of(r) {
            writers.entry(blog).or_default().insert(from);
        }
        if r.method == http::Method::POST && r.path.ends_with("/deployments") && r.status == 201 {
            *created.entry(from).or_default() += 1;
        }
    }
    assert_eq!(writers.len(), BLOGS, "every Blog was written to by name");
    for (blog, from) in &writers {
        let owner = owner_of.get(blog).map(String::as_str);
        assert_eq!(
            from.iter().copied().collect::<Vec<_>>(),
            owner.into_iter().collect::<Vec<_>>(),
            "{blog} was written by {from:?}; its owner is {owner:?}"
        );
    }
    for (member, blogs) in &owned {
        assert_eq!(
            created.get(member.as_str()).copied().unwrap_or_default(),
            blogs.len(),
            "{member} created one Deployment per Blog it owns"
        );
    }

    // Each replica caches its share of the Blogs and of their Deployments and Services (the
    // Blog's ConfigMaps are also read as related objects: that kind is cached whole). The
    // leader, which placed them, shows the members and each one's share.
    let mut coordinators = 0;
    for (id, ops, _) in &replicas {
        // `/plugins` says which member each replica is; the coordinator's, each one's share.
        let listed = weir::listing::fetch(&ops.to_string()).await?;
        let shard = listed
            .first()
            .and_then(|p| p.shard.as_ref())
            .with_context(|| format!("{id}'s /plugins shows no shard"))?;
        assert_eq!(shard.member, *id);
        if shard.coordinating {
            assert_eq!(shard.members, REPLICAS);
            let shares: BTreeMap<&String, i64> =
                owned.iter().map(|(m, b)| (m, b.len() as i64)).collect();
            let shown: BTreeMap<&String, i64> =
                shard.owned_parents.iter().map(|(m, n)| (m, *n)).collect();
            assert_eq!(shown, shares, "{id}'s /plugins");
            assert_eq!(shard.moves.get("assigned"), Some(&(BLOGS as u64)));
        }
        let metrics = ops_get(*ops, "/metrics").await?;
        if sample(&metrics, "weir_shard_members") == Some(REPLICAS.len() as f64) {
            coordinators += 1;
            assert!(
                shard.coordinating,
                "the coordinator's /plugins shows its pass"
            );
            for (member, blogs) in &owned {
                let series = format!(r#"weir_shard_owned_parents{{member="{member}"}}"#);
                assert_eq!(
                    sample(&metrics, &series),
                    Some(blogs.len() as f64),
                    "{metrics}"
                );
            }
            let assigned = sample(&metrics, r#"weir_shard_moves_total{step="assigned"}"#);
            assert_eq!(
                assigned,
                Some(BLOGS as f64),
                "each Blog assigned once: {metrics}"
            );
        }
        let share = owned.get(*id).map_or(0, Vec::len) as f64;
        for (group, kind) in [
            ("weir.dev", "Blog"),
            ("apps", "Deployment"),
            ("", "Service"),
        ] {
            let series = format!(r#"weir_cached_objects{{group="{group}",kind="{kind}"}}"#);
            assert_eq!(
                sample(&metrics, &series),
                Some(share),
                "{id} caches {kind}s of its {share} Blogs only"
            );
        }
    }
    assert_eq!(coordinators, 1, "one leader placed the Blogs");
    Ok(())
}

/// Blogs of the handover scenario.
const MOVED: usize = 60;

/// A sharded host in this process (a 2 s shard and leader Lease, a placement pass every 200 ms)
/// whose requests say `User-Agent: weir-e2e (ID)`.
async fn sharded_host(
    env: &TestEnv,
    emulator: &Emulator,
    blog: &Plugin,
    id: &str,
) -> anyhow::Result<Manager> {
    let mut config = kube::Config::new(emulator.url().parse()?);
    config.headers.push((
        http::header::USER_AGENT,
        format!("weir-e2e ({id})").parse()?,
    ));
    let client = kube::Client::try_from(config)?;
    let mut c = fast_config(&env.namespace);
    c.leader = Some(fast_leader(&env.namespace, id));
    c.shard = Some(ShardConfig {
        duration_secs: 2,
        grace_secs: 1,
        assign_every: Duration::from_millis(200),
        ..ShardConfig::new(id, env.namespace.clone())
    });
    Ok(Manager::start(client, PluginSource::Fixed(vec![blog.clone()]), c).await?)
}

/// The Blogs once each is Ready for its current generation, owned by one of `members` and not
/// being drained: by owner.
async fn settled(
    blogs: &Api<DynamicObject>,
    members: &[&str],
) -> Option<BTreeMap<String, Vec<String>>> {
    let list = blogs.list(&ListParams::default()).await.ok()?;
    let mut owned: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for b in &list.items {
        let labels = b.labels();
        let owner = labels.get(OWNER_LABEL)?;
        if !ready(b) || labels.contains_key(DRAIN_LABEL) || !members.contains(&owner.as_str()) {
            return None;
        }
        owned.entry(owner.clone()).or_default().push(b.name_any());
    }
    (list.items.len() == MOVED).then_some(owned)
}

/// The fourth replica of the scaling scenario.
const FOURTH: &str = "shard-d";

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
    let leases: Api<Lease> = env.typed();
    let [a, b, c] = REPLICAS;
    let d = FOURTH;
    let (abc, abcd, bcd, cd) = ([a, b, c], [a, b, c, d], [b, c, d], [c, d]);
    let host_a = sharded_host(&env, emulator, &blog, a).await?;
    let host_b = sharded_host(&env, emulator, &blog, b).await?;
    let host_c = sharded_host(&env, emulator, &blog, c).await?;
    eventually("three members", Duration::from_secs(20), || async {
        (members::members(&leases).await.ok()?.len() == 3).then_some(())
    })
    .await?;
    for i in 0..MOVED {
        env.create(
            &kinds::blog(),
            &name(i),
            json!({"title": "t", "replicas": 1}),
        )
        .await?;
    }
    eventually("a, b and c serve every Blog", CONVERGE, || {
        settled(&blogs, &abc)
    })
    .await?;

    // 3 → 4: d joins; the ring gives it about a quarter, each drained by its owner first.
    let host_d = sharded_host(&env, emulator, &blog, d).await?;
    let joined = eventually("d takes its share", CONVERGE, || async {
        let owned = settled(&blogs, &abcd).await?;
        owned.contains_key(d).then_some(owned)
    })
    .await?;
    let counts: BTreeMap<&String, usize> = joined.iter().map(|(m, v)| (m, v.len())).collect();
    println!("shards: after d joined {counts:?}");
    let of_a = joined.get(a).cloned().unwrap_or_default();
    assert!(!of_a.is_empty(), "a kept a share: {counts:?}");

    // 4 → 3: a is killed (nothing in it finishes, its Lease is left to expire); its Blogs,
    // edited now, are served by the others.
    host_a.kill();
    let killed = Instant::now();
    for name in &of_a {
        env.patch_spec(&kinds::blog(), name, json!({"title": "moved"}))
            .await?;
    }
    eventually("a's Blogs are served again", CONVERGE, || {
        settled(&blogs, &bcd)
    })
    .await?;
    println!(
        "shards: {} Blogs of a killed replica served again {:?} after the kill (shard Lease 2 s)",
        of_a.len(),
        killed.elapsed()
    );

    // 3 → 2: b stops cleanly (its Lease released): c and d serve everything.
    host_b.shutdown().await;
    let last = eventually("c and d serve every Blog", CONVERGE, || {
        settled(&blogs, &cd)
    })
    .await?;
    let counts: BTreeMap<&String, usize> = last.iter().map(|(m, v)| (m, v.len())).collect();
    println!("shards: after b stopped {counts:?}");
    let owner_of: BTreeMap<&str, &str> = last
        .iter()
        .flat_map(|(m, blogs)| blogs.iter().map(move |b| (b.as_str(), m.as_str())))
        .collect();

    // One writer at a time: per Blog, each replica's writes form one unbroken run in the log,
    // and the last run is its owner's.
    let mut runs: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for r in emulator.requests().iter().filter(|r| reconcile_write(r)) {
        let (Some(from), Some(blog)) = (sender(r), blog_of(r)) else {
            continue;
        };
        let run = runs.entry(blog).or_default();
        if run.last() != Some(&from) {
            run.push(from);
        }
    }
    assert_eq!(runs.len(), MOVED);
    for (blog, run) in &runs {
        let distinct: BTreeSet<&&str> = run.iter().collect();
        assert_eq!(
            distinct.len(),
            run.len(),
            "{blog} was written by {run:?}: two writers overlapped"
        );
        assert_eq!(run.last(), owner_of.get(blog.as_str()), "{blog}");
    }
    assert!(
        runs.values().any(|run| run.len() >= 3),
        "some Blog moved twice (join, then kill or stop)"
    );

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
    host_c.shutdown().await;
    host_d.shutdown().await;
    Ok(())
}
