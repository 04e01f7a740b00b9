//! `weir run` replicas of the sharded modes (`failover`, `rate`): the shipped binary spawned
//! against one emulator serving the Blog in namespace `bench`, and the Blogs they serve.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt};
use tempfile::TempDir;
use weir::shard::OWNER_LABEL;
use weir_e2e::host::RunArgs;
use weir_emulator::{Emulator, EmulatorConfig};

use super::cluster::{Target, blog_kind, create_blogs, emulator_for, is_ready};
use super::{built, root, weir_binary};

/// The namespace of the Blogs and of the Leases.
pub(crate) const NAMESPACE: &str = "bench";

/// How long the Blogs may take to settle after a start or a join.
pub(crate) const SETTLE: Duration = Duration::from_secs(300);

/// One emulator with the Blog's CRD, and what a replica of `weir run` needs to serve it.
pub(crate) struct Fleet {
    emulator: Emulator,
    binary: PathBuf,
    /// Each replica's `--workers`.
    workers: usize,
    /// Whether the replicas run `--shard`: each serves its share of the Blogs.
    sharded: bool,
    dir: TempDir,
}

/// One running replica; killed when dropped.
pub(crate) struct Replica {
    pub(crate) identity: String,
    pub(crate) child: Child,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fleet {
    /// A fresh emulator, and the Blog plugin (`target/plugins/blog.wasm`) in a directory of its
    /// own for `weir` (default: `target/release/weir`), each replica with `workers` workers and,
    /// when `sharded`, `--shard`.
    pub(crate) async fn new(weir: Option<PathBuf>, workers: usize, sharded: bool) -> Result<Self> {
        let binary = weir_binary(weir)?;
        let blog = built(
            root().join("target/plugins/blog.wasm"),
            "run `plugins/build.sh` first",
        )?;
        let target = Target {
            kind: blog_kind(None),
            copy: None,
            namespace: NAMESPACE.into(),
        };
        let emulator =
            emulator_for(std::slice::from_ref(&target), EmulatorConfig::default()).await?;
        let dir = tempfile::Builder::new()
            .prefix("weir-bench-fleet-")
            .tempdir()?;
        emulator.write_kubeconfig(&dir.path().join("kubeconfig"))?;
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins)?;
        std::fs::copy(&blog, plugins.join("blog.wasm"))
            .with_context(|| format!("copying {}", blog.display()))?;
        Ok(Self {
            emulator,
            binary,
            workers,
            sharded,
            dir,
        })
    }

    pub(crate) fn client(&self) -> Client {
        self.emulator.client()
    }

    /// The Blogs of the bench's namespace.
    pub(crate) fn blogs(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client(), NAMESPACE, &blog_kind(None).api_resource())
    }

    /// Starts `weir run` as `identity`.
    pub(crate) fn start(&self, identity: &str) -> Result<Replica> {
        let dir = self.dir.path();
        let mut args = RunArgs {
            cache_dir: dir.join("cache"),
            workers: Some(self.workers),
            ..RunArgs::plugins(&dir.join("plugins"), &dir.join("kubeconfig")).namespace(NAMESPACE)
        }
        .flags(["--identity", identity])
        .flags(["--lease-namespace", NAMESPACE]);
        if self.sharded {
            args = args.flags(["--shard"]);
        }
        let child = args
            .command(&self.binary)?
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        Ok(Replica {
            identity: identity.to_owned(),
            child,
        })
    }

    /// Creates Blogs `0..n` (named by [`super::cluster::blog_name`]), one pod each.
    pub(crate) async fn create_blogs(&self, n: usize) -> Result<()> {
        create_blogs(&self.blogs(), &blog_kind(None), n, 1).await
    }

    /// Waits until every Blog is Ready and, when the replicas are sharded, owned by one of
    /// `replicas`, each owning some; the Blogs of each owner (all under `""` when not sharded).
    pub(crate) async fn settled(
        &self,
        replicas: &mut [Replica],
    ) -> Result<BTreeMap<String, Vec<String>>> {
        let blogs = self.blogs();
        let deadline = Instant::now() + SETTLE;
        loop {
            for r in replicas.iter_mut() {
                if let Some(status) = r.child.try_wait()? {
                    bail!("replica {} exited by itself: {status}", r.identity);
                }
            }
            let list = blogs.list(&Default::default()).await?;
            let mut owners = BTreeMap::<String, Vec<String>>::new();
            let mut ready = true;
            for b in &list.items {
                ready &= is_ready(b);
                let owner = if self.sharded {
                    b.labels().get(OWNER_LABEL).cloned()
                } else {
                    Some(String::new())
                };
                if let Some(owner) = owner {
                    owners.entry(owner).or_default().push(b.name_any());
                }
            }
            let all_owned = owners.values().map(Vec::len).sum::<usize>() == list.items.len();
            let running = !self.sharded
                || (replicas.iter().all(|r| owners.contains_key(&r.identity))
                    && owners.len() == replicas.len());
            if ready && all_owned && running {
                return Ok(owners);
            }
            if Instant::now() > deadline {
                let counts: BTreeMap<&String, usize> =
                    owners.iter().map(|(m, b)| (m, b.len())).collect();
                bail!("the Blogs did not settle on the running replicas: owners {counts:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Where the replicas' binary is, for the table's heading.
    pub(crate) fn binary(&self) -> &Path {
        &self.binary
    }
}
