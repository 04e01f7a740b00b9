//! The soak's churn: people creating, editing, deleting and re-creating Blogs, and scaling and
//! deleting their children by hand, from a seeded generator.
//!
//! What the churn did is kept as the convergence check's [`Expected`]: the Blogs that should be
//! live and those that should be gone. A Blog is re-created under the name of one deleted earlier
//! (a new UID: the children of the old one must go, the new one's must be its own); while the old
//! one still waits for its finalizer the API server refuses the name, and the attempt is counted
//! as refused.

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use rand::{RngExt, SeedableRng};
use serde_json::json;
use weir_e2e::convergence::Expected;
use weir_e2e::kinds;

/// One kind of churn operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Create,
    Edit,
    Delete,
    Recreate,
    RecreateRefused,
    ChildEdit,
    ChildDelete,
}

impl Op {
    /// Every operation, in the order the summary prints them.
    pub(super) const ALL: [Op; 7] = [
        Op::Create,
        Op::Edit,
        Op::Delete,
        Op::Recreate,
        Op::RecreateRefused,
        Op::ChildEdit,
        Op::ChildDelete,
    ];

    /// The summary's name for it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Op::Create => "creations",
            Op::Edit => "edits",
            Op::Delete => "deletions",
            Op::Recreate => "re-creations",
            Op::RecreateRefused => "re-creations refused (old one finalizing)",
            Op::ChildEdit => "Deployments scaled by hand",
            Op::ChildDelete => "page ConfigMaps deleted",
        }
    }
}

/// The churn's state: which Blogs live, which were deleted, what was done.
pub(super) struct Churn {
    client: kube::Client,
    namespace: String,
    rng: rand::rngs::StdRng,
    /// What the convergence check expects of the namespace.
    pub(super) expected: Expected,
    live: Vec<String>,
    next: usize,
    counts: [usize; Op::ALL.len()],
}

impl Churn {
    /// A churn over `namespace` drawing from `seed`.
    pub(super) fn new(client: kube::Client, namespace: &str, seed: u64) -> Self {
        Churn {
            client,
            namespace: namespace.to_owned(),
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            expected: Expected::default(),
            live: Vec::new(),
            next: 0,
            counts: [0; Op::ALL.len()],
        }
    }

    fn api(&self, kind: &weir::plugin::ResourceKind) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, &kind.api_resource())
    }

    /// Live Blogs.
    pub(super) fn live(&self) -> usize {
        self.live.len()
    }

    /// How many operations of each kind were done.
    pub(super) fn counts(&self) -> impl Iterator<Item = (Op, usize)> + '_ {
        Op::ALL.into_iter().zip(self.counts)
    }

    /// Operations done so far.
    pub(super) fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// Creates `n` Blogs at once (64 requests in flight); not counted as churn.
    pub(super) async fn populate(&mut self, n: usize) -> Result<()> {
        let names: Vec<String> = (self.next..self.next + n)
            .map(|i| format!("s{i}"))
            .collect();
        self.next += n;
        let api = self.api(&kinds::blog());
        futures::stream::iter(names.clone())
            .map(|name| {
                let api = api.clone();
                async move {
                    create(&api, &name)
                        .await
                        .with_context(|| format!("creating {name}"))
                }
            })
            .buffer_unordered(64)
            .try_collect::<Vec<_>>()
            .await?;
        for name in names {
            self.expected.live.insert(name.clone());
            self.live.push(name);
        }
        Ok(())
    }

    /// One operation, keeping about `target` Blogs live.
    pub(super) async fn step(&mut self, target: usize) -> Result<()> {
        let roll: f64 = self.rng.random();
        let op = if self.live.len() < target - target / 10 || self.live.is_empty() {
            Op::Create
        } else if self.live.len() > target + target / 10 {
            Op::Delete
        } else {
            match roll {
                r if r < 0.10 => Op::Create,
                r if r < 0.20 => Op::Recreate,
                r if r < 0.55 => Op::Edit,
                r if r < 0.75 => Op::Delete,
                r if r < 0.875 => Op::ChildEdit,
                _ => Op::ChildDelete,
            }
        };
        let op = match op {
            Op::Recreate if self.expected.deleted.is_empty() => Op::Create,
            op => op,
        };
        let done = self.run(op).await?;
        self.counts[Op::ALL.iter().position(|o| *o == done).unwrap_or(0)] += 1;
        Ok(())
    }

    /// Does `op`; returns what was done (a refused re-creation).
    async fn run(&mut self, op: Op) -> Result<Op> {
        let blogs = self.api(&kinds::blog());
        let pick = self.rng.random_range(0..self.live.len().max(1));
        match op {
            Op::Create => {
                let name = format!("s{}", self.next);
                self.next += 1;
                create(&blogs, &name)
                    .await
                    .with_context(|| format!("creating {name}"))?;
                self.expected.live.insert(name.clone());
                self.live.push(name);
            }
            Op::Recreate | Op::RecreateRefused => {
                let nth = self.rng.random_range(0..self.expected.deleted.len());
                let Some(name) = self.expected.deleted.iter().nth(nth).cloned() else {
                    return Ok(Op::RecreateRefused);
                };
                match create(&blogs, &name).await {
                    Err(kube::Error::Api(status)) if status.code == 409 => {
                        return Ok(Op::RecreateRefused);
                    }
                    other => other.with_context(|| format!("re-creating {name}"))?,
                }
                self.expected.deleted.remove(&name);
                self.expected.live.insert(name.clone());
                self.live.push(name);
            }
            Op::Edit => {
                let name = &self.live[pick];
                let v: u32 = self.rng.random_range(1..1000);
                let replicas: u32 = self.rng.random_range(1..=3);
                let patch =
                    json!({"spec": {"title": format!("{name} v{v}"), "replicas": replicas}});
                blogs
                    .patch(name, &user(), &Patch::Merge(patch))
                    .await
                    .with_context(|| format!("editing {name}"))?;
            }
            Op::Delete => {
                let name = self.live.swap_remove(pick);
                blogs
                    .delete(&name, &DeleteParams::default())
                    .await
                    .with_context(|| format!("deleting {name}"))?;
                self.expected.live.remove(&name);
                self.expected.deleted.insert(name);
            }
            Op::ChildEdit => {
                // The child may not exist yet (a Blog just created): nothing to edit then.
                let patch = json!({"spec": {"replicas": 5}});
                let _ = self
                    .api(&kinds::deployment())
                    .patch(&self.live[pick], &user(), &Patch::Merge(patch))
                    .await;
            }
            Op::ChildDelete => {
                let page = format!("{}-page", self.live[pick]);
                let _ = self
                    .api(&kinds::config_map())
                    .delete(&page, &DeleteParams::default())
                    .await;
            }
        }
        Ok(op)
    }
}

/// Creates the Blog `name` (one replica, title "NAME v0").
async fn create(api: &Api<DynamicObject>, name: &str) -> Result<(), kube::Error> {
    let blog: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "weir.dev/v1alpha1",
        "kind": "Blog",
        "metadata": {"name": name},
        "spec": {"title": format!("{name} v0"), "replicas": 1},
    }))
    .map_err(kube::Error::SerdeError)?;
    api.create(&PostParams::default(), &blog).await.map(drop)
}

/// A person's field manager.
fn user() -> PatchParams {
    PatchParams {
        field_manager: Some("soak-user".into()),
        ..PatchParams::default()
    }
}
