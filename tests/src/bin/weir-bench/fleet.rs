//! `weir run` replicas of the sharded modes (`failover`, `rate`): the shipped binary spawned
//! against one emulator serving the Blog in namespace `bench`, and the Blogs they serve.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use tempfile::TempDir;
use weir::shard::OWNER_LABEL;
use weir_e2e::host::RunArgs;
use weir_emulator::{Emulator, EmulatorConfig};

use super::cluster::{Target, blog_kind, emulator_for, is_ready};
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
    /// own for `weir` (default: `target/release/weir`), each replica with `workers` workers.
    pub(crate) async fn new(weir: Option<PathBuf>, workers: usize) -> Result<Self> {
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

    /// Starts `weir run` as `identity`, one of the `--shard` replicas when `sharded`.
    pub(crate) fn start(&self, identity: &str, sharded: bool) -> Result<Replica> {
        let dir = self.dir.path();
        let mut args = RunArgs {
            cache_dir: dir.join("cache"),
            workers: Some(self.workers),
            ..RunArgs::plugins(&dir.join("plugins"), &dir.join("kubeconfig")).namespace(NAMESPACE)
        }
        .flags(["--identity", identity])
        .flags(["--lease-namespace", NAMESPACE]);
        if sharded {
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

    /// Creates `n` Blogs, `blog-0` to `blog-{n-1}`, 64 at a time.
    pub(crate) async fn create_blogs(&self, n: usize) -> Result<()> {
        let blogs = self.blogs();
        futures::stream::iter(0..n)
            .map(|i| {
                let blogs = blogs.clone();
                async move {
                    let obj: DynamicObject = serde_json::from_value(json!({
                        "apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
                        "metadata": {"name": format!("blog-{i}")},
                        "spec": {"title": format!("Blog {i}"), "replicas": 1},
                    }))?;
                    blogs.create(&PostParams::default(), &obj).await?;
                    anyhow::Ok(())
                }
            })
            .buffer_unordered(64)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    /// Waits until every Blog is Ready and, when `replicas` are sharded, owned by one of them,
    /// each owning some; the Blogs of each owner (all under `""` when not sharded).
    pub(crate) async fn settled(
        &self,
        replicas: &mut [Replica],
        sharded: bool,
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        let blogs = self.blogs();
        let deadline = Instant::now() + SETTLE;
        loop {
            for r in replicas.iter_mut() {
                if let Some(status) = r.child.try_wait()? {
                    bail!("replica {} exited by itself: {status}", r.identity);
                }
            }
            let list = blogs.list(&Default::default()).await?;
            let mut owners = std::collections::BTreeMap::<String, Vec<String>>::new();
            let mut ready = true;
            for b in &list.items {
                ready &= is_ready(b);
                let owner = if sharded {
                    b.labels().get(OWNER_LABEL).cloned()
                } else {
                    Some(String::new())
                };
                if let Some(owner) = owner {
                    owners.entry(owner).or_default().push(b.name_any());
                }
            }
            let all_owned = owners.values().map(Vec::len).sum::<usize>() == list.items.len();
            let running = !sharded
                || (replicas.iter().all(|r| owners.contains_key(&r.identity))
                    && owners.len() == replicas.len());
            if ready && all_owned && running {
                return Ok(owners);
            }
            if Instant::now() > deadline {
                let counts: std::collections::BTreeMap<&String, usize> =
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
