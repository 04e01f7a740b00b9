//! Sharded replicas on one emulator, each a `weir run --shard` process. Three share 300 Blogs:
//! every Blog is reconciled by exactly one replica, the one its owner label names (the emulator's
//! request log, by the `User-Agent` naming each replica), each replica caches only its share
//! (its `weir_cached_objects` gauges), and all converge. The processes and the request-log
//! readings here are shared by the handover scenarios (`shards_handover`, `shards_server_side`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::json;
use weir::shard::{FIELD_MANAGER, OWNER_LABEL};
use weir_e2e::weir_run::{WeirRun, ops_get, sample};
use weir_e2e::{TestEnv, condition, eventually, kinds, plugin};
use weir_emulator::RequestRecord;

const BLOGS: usize = 300;
/// The theme ConfigMap some of the Blogs read (not named like a Blog: see [`blog_of`]).
const THEME: &str = "theme-sb";
pub(super) const REPLICAS: [&str; 3] = ["shard-a", "shard-b", "shard-c"];
/// From the last Blog created to all of them Ready (generous: three debug processes on two cores).
pub(super) const CONVERGE: Duration = Duration::from_secs(180);

/// Blog `i`'s name; the first six characters of a child's name say whose it is.
pub(super) fn name(i: usize) -> String {
    format!("sb-{i:03}")
}

/// Creates the handover scenarios' Blogs, `name(0)` to `name(MOVED - 1)`.
pub(super) async fn create_blogs(env: &TestEnv) -> anyhow::Result<()> {
    for i in 0..MOVED {
        env.create(
            &kinds::blog(),
            &name(i),
            json!({"title": "t", "replicas": 1}),
        )
        .await?;
    }
    Ok(())
}

/// The Blog a reconcile's write went to, read from its path: the Blog itself (status, finalizer)
/// or a child named after it (`sb-007`, `sb-007-page`). A create names nothing in its path.
pub(super) fn blog_of(r: &RequestRecord) -> Option<String> {
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
pub(super) fn sender(r: &RequestRecord) -> Option<&'static str> {
    let agent = r.user_agent.as_deref()?;
    REPLICAS
        .into_iter()
        .chain([FOURTH])
        .find(|id| agent.ends_with(&format!("({id})")))
}

/// A write of a reconcile: not a Lease's, not an Event, not the coordinator's label.
pub(super) fn reconcile_write(r: &RequestRecord) -> bool {
    r.is_write()
        && !r.path.contains("/leases")
        && !r.path.contains("/events")
        && r.field_manager.as_deref() != Some(FIELD_MANAGER)
}

pub(super) fn ready(blog: &DynamicObject) -> bool {
    let current = blog.data["status"]["observedGeneration"].as_i64() == blog.metadata.generation;
    let is_true = |t| condition(blog, t).is_some_and(|c| c["status"] == "True");
    current && is_true("Ready") && is_true("Reconciled")
}

/// One `weir run --shard` replica: its identity, the address of its `/metrics` and `/plugins`.
pub(super) struct Replica {
    pub(super) id: &'static str,
    pub(super) ops: std::net::SocketAddr,
    pub(super) run: WeirRun,
}

impl Replica {
    /// Fails, naming the replica, if its process has exited.
    pub(super) fn check_running(&mut self) -> anyhow::Result<()> {
        self.run
            .check_running()
            .with_context(|| format!("replica {}", self.id))
    }

    /// Checks that it still runs, then stops it cleanly (SIGTERM, within 10 s).
    pub(super) async fn stop(&mut self) -> anyhow::Result<()> {
        self.check_running()?;
        self.run.terminate(Duration::from_secs(10)).await
    }
}

/// The processes' common ground: the binary, a directory, the emulator's kubeconfig in it.
pub(super) struct Fleet {
    binary: std::path::PathBuf,
    dir: tempfile::TempDir,
    namespace: String,
}

impl Fleet {
    pub(super) fn new(env: &TestEnv) -> anyhow::Result<Fleet> {
        let dir = tempfile::Builder::new().prefix("weir-shards-").tempdir()?;
        if let Some(emulator) = &env.emulator {
            emulator.write_kubeconfig(&dir.path().join("kubeconfig"))?;
        }
        Ok(Fleet {
            binary: WeirRun::debug_binary()?,
            dir,
            namespace: env.namespace.clone(),
        })
    }

    /// Starts replica `id` in the test's namespace, its Leases there, with `extra` arguments.
    pub(super) fn start(&self, id: &'static str, extra: &[&str]) -> anyhow::Result<Replica> {
        // A port free now, for the replica's `/metrics`.
        let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let mut args = vec!["--shard", "--identity", id];
        args.extend(["--lease-namespace", &self.namespace]);
        args.extend(extra);
        let run = WeirRun::start_with(
            &self.binary,
            &self.dir.path().join(id),
            &self.dir.path().join("kubeconfig"),
            (Some(&self.namespace), 600),
            &ops.to_string(),
            &args,
        )?;
        Ok(Replica { id, ops, run })
    }
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
    let fleet = Fleet::new(&env)?;
    let mut replicas = Vec::new();
    for id in REPLICAS {
        replicas.push(fleet.start(id, &[])?);
    }

    // Every replica is a member before the first Blog, so no Blog moves during the run.
    coordinator_sees(&replicas.iter().collect::<Vec<_>>()).await?;

    // Every tenth Blog reads a theme, a ConfigMap no parent owns, which every replica caches.
    let config_maps: Api<ConfigMap> = env.typed();
    let theme = serde_json::from_value(json!({
        "metadata": {"name": THEME},
        "data": {"style.css": "h1{color:teal}"}
    }))?;
    config_maps.create(&Default::default(), &theme).await?;
    futures::stream::iter(0..BLOGS)
        .map(|i| {
            let env = &env;
            let spec = if i % 10 == 0 {
                json!({"title": "t", "replicas": 1, "theme": THEME})
            } else {
                json!({"title": "t", "replicas": 1})
            };
            async move { env.create(&kinds::blog(), &name(i), spec).await }
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
    for r in &mut replicas {
        r.check_running()?;
    }
    let all = all?;
    for i in (0..BLOGS).step_by(10) {
        let page = config_maps.get(&format!("{}-page", name(i))).await?;
        let html = page
            .data
            .as_ref()
            .and_then(|d| d.get("index.html"))
            .cloned()
            .unwrap_or_default();
        assert!(
            html.contains("<style>h1{color:teal}</style>"),
            "{}'s page has its theme, whichever replica owns it: {html}",
            name(i)
        );
    }

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
        if from.iter().copied().ne(owner) {
            anyhow::bail!(
                "{blog} was written by {from:?}; its owner is {owner:?}. Its requests:\n{}",
                history(&requests, blog)
            );
        }
    }
    for (member, blogs) in &owned {
        assert_eq!(
            created.get(member.as_str()).copied().unwrap_or_default(),
            blogs.len(),
            "{member} created one Deployment per Blog it owns"
        );
    }

    // Each replica caches its share of the Blogs and of their children. The Blog also reads
    // ConfigMaps as related objects (a theme, posts): of that kind a replica caches, beside its
    // share of the pages, the ConfigMaps no parent owns (none labelled with an owner). The
    // leader, which placed them, shows the members and each one's share.
    let unowned = config_maps
        .list(&ListParams::default().labels(&weir::shard::unowned()))
        .await?
        .items
        .len();
    let mut coordinators = 0;
    for Replica { id, ops, .. } in &replicas {
        // `/plugins` says which member each replica is; the coordinator's, each one's share.
        let listed = weir::listing::fetch(&ops.to_string()).await?;
        let shard = listed
            .first()
            .and_then(|p| p.shard.as_ref())
            .with_context(|| format!("{id}'s /plugins shows no shard"))?;
        assert_eq!(shard.member, *id);
        assert_eq!(shard.mode, "labels", "no shardSelector served: {id} labels");
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
        assert_eq!(
            sample(&metrics, r#"weir_shard_mode{mode="labels"}"#),
            Some(1.0)
        );
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
        assert_eq!(
            sample(
                &metrics,
                r#"weir_cached_objects{group="",kind="ConfigMap"}"#
            ),
            Some(share + unowned as f64),
            "{id} caches the pages of its {share} Blogs and the {unowned} ConfigMaps no parent owns"
        );
    }
    assert_eq!(coordinators, 1, "one leader placed the Blogs");
    Ok(())
}

/// Waits until every one of `replicas` is a member as the coordinator sees it. Held Leases are
/// not enough, since a pass places parents by the members it listed as it began, maybe before
/// the last Lease was taken (a parent placed then moves once the next pass sees the late
/// member): the wait is for the coordinator, whichever replica it is, to show a pass over all of
/// them (`weir_shard_members` on its `/metrics`); every later pass lists them again.
pub(super) async fn coordinator_sees(replicas: &[&Replica]) -> anyhow::Result<()> {
    let what = format!("a pass over {} members", replicas.len());
    eventually(&what, Duration::from_secs(60), || async {
        for r in replicas {
            let metrics = ops_get(r.ops, "/metrics").await.ok()?;
            if sample(&metrics, "weir_shard_members") == Some(replicas.len() as f64) {
                return Some(());
            }
        }
        None
    })
    .await
}

/// Every request to `blog` or a child named after it, and every Lease write, in the order of the
/// request log: who sent it, what it did, with what answer.
fn history(requests: &[RequestRecord], blog: &str) -> String {
    requests
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            blog_of(r).as_deref() == Some(blog) || (r.is_write() && r.path.contains("/leases/"))
        })
        .map(|(i, r)| {
            format!(
                "{i:>6} {:<8} {:<6} {} {} {}",
                sender(r).unwrap_or("-"),
                r.method,
                r.path,
                r.status,
                r.field_manager.as_deref().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// By Blog, the replicas that wrote to it in the order of the request log, each once per unbroken
/// run of its writes; fails if a replica's writes to one Blog were interrupted by another's
/// (two writers in overlapping windows).
pub(super) fn writer_runs(requests: &[RequestRecord]) -> BTreeMap<String, Vec<&'static str>> {
    let mut runs: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    for r in requests.iter().filter(|r| reconcile_write(r)) {
        let (Some(from), Some(blog)) = (sender(r), blog_of(r)) else {
            continue;
        };
        let run = runs.entry(blog).or_default();
        if run.last() != Some(&from) {
            run.push(from);
        }
    }
    for (blog, run) in &runs {
        let distinct: BTreeSet<&&str> = run.iter().collect();
        assert_eq!(
            distinct.len(),
            run.len(),
            "{blog} was written by {run:?}: two writers overlapped; its requests and the Lease writes:\n{}",
            history(requests, blog)
        );
    }
    runs
}

/// Blogs of the handover scenario.
pub(super) const MOVED: usize = 60;

/// The shard Leases of the handover scenarios, in seconds: renewed 4 s after the last renewal,
/// a holder stops writing 1 s before one runs out (room for a late renewal on two loaded cores).
pub(super) const LEASE_SECS: u64 = 6;

/// Whether a reconcile has served the last edit of each Blog in `names`: its status shows its
/// current generation observed.
pub(super) async fn observed(blogs: &Api<DynamicObject>, names: &[&String]) -> Option<()> {
    for name in names {
        let blog = blogs.get(name).await.ok()?;
        let seen = blog.data["status"]["observedGeneration"].as_i64();
        if seen.is_none() || seen != blog.metadata.generation {
            return None;
        }
    }
    Some(())
}

/// The fourth replica of the scaling scenario.
pub(super) const FOURTH: &str = "shard-d";
