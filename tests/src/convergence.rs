//! Whether a namespace of Blogs has converged after a rough run: every live Blog Ready with the
//! children its spec asks for, exactly one child of each kind per Blog, no child without a live
//! owner, and every deleted Blog gone (its finalizer removed).
//!
//! The children are found by the label the host puts on every child it writes
//! (`weir.dev/parent-uid`), so a child left behind by a deleted Blog, or written twice for one
//! Blog, is seen whatever its name. The API server's garbage collector removes the children of a
//! deleted owner; what the check sees is what remains once it has.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Result, bail};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};

use crate::{condition, kinds};

/// The label holding the owning parent's UID on every child the host writes.
const PARENT_UID: &str = "weir.dev/parent-uid";

/// What a run did to the namespace's Blogs.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    /// Blogs that should exist, by name.
    pub live: BTreeSet<String>,
    /// Blogs deleted during the run (not created again).
    pub deleted: BTreeSet<String>,
}

/// What a converged namespace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Converged {
    /// Live Blogs, all Ready.
    pub blogs: usize,
    /// Their children (three each).
    pub children: usize,
}

/// Polls [`check`] until it passes, failing after `timeout` with the last thing not converged.
pub async fn wait(
    client: &kube::Client,
    namespace: &str,
    expected: &Expected,
    timeout: Duration,
) -> Result<Converged> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match check(client, namespace, expected).await {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        if tokio::time::Instant::now() > deadline {
            bail!("not converged after {timeout:?}: {last:#}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// One look at the namespace: `Ok` when it has converged, else the first thing that has not.
pub async fn check(
    client: &kube::Client,
    namespace: &str,
    expected: &Expected,
) -> Result<Converged> {
    let api = |kind: &weir::plugin::ResourceKind| -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), namespace, &kind.api_resource())
    };
    let blogs: BTreeMap<String, DynamicObject> = api(&kinds::blog())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|b| (b.name_any(), b))
        .collect();
    for name in &expected.deleted {
        if let Some(b) = blogs.get(name) {
            bail!(
                "deleted Blog {name} is still there (finalizers {:?})",
                b.finalizers()
            );
        }
    }
    let mut live = BTreeMap::new();
    for name in &expected.live {
        let Some(b) = blogs.get(name) else {
            bail!("Blog {name} is missing")
        };
        let current = b.data["status"]["observedGeneration"].as_i64() == b.metadata.generation;
        let status = |t: &str| condition(b, t).is_some_and(|c| c["status"] == "True");
        if !(current && status("Ready") && status("Reconciled")) {
            bail!(
                "Blog {name} is not Ready for generation {:?}: {}",
                b.metadata.generation,
                b.data["status"]
            );
        }
        live.insert(b.uid().unwrap_or_default(), b);
    }
    let mut children = 0;
    for kind in [kinds::config_map(), kinds::deployment(), kinds::service()] {
        let list = api(&kind)
            .list(&ListParams::default().labels(PARENT_UID))
            .await?;
        let mut per_blog: BTreeMap<&str, Vec<&DynamicObject>> = BTreeMap::new();
        for child in &list.items {
            let uid = child.labels().get(PARENT_UID).map_or("", String::as_str);
            let Some(owner) = live.get(uid) else {
                bail!(
                    "{} {} is orphaned: its Blog (UID {uid}) is not a live Blog",
                    kind.kind,
                    child.name_any()
                );
            };
            if !crate::controlled_by(child, owner) {
                bail!(
                    "{} {} is not controlled by its Blog {}",
                    kind.kind,
                    child.name_any(),
                    owner.name_any()
                );
            }
            per_blog.entry(uid).or_default().push(child);
        }
        for (uid, blog) in &live {
            let found = per_blog.get(uid.as_str()).map_or(&[][..], Vec::as_slice);
            let [child] = found else {
                bail!(
                    "Blog {} has {} {}s, not one",
                    blog.name_any(),
                    found.len(),
                    kind.kind
                );
            };
            as_spec_says(blog, &kind.kind, child)?;
            children += 1;
        }
    }
    Ok(Converged {
        blogs: live.len(),
        children,
    })
}

/// Whether `child` (of kind `kind`) is what `blog`'s spec asks for: its name, the page's title,
/// the Deployment's replicas (the Blog plugin's README).
fn as_spec_says(blog: &DynamicObject, kind: &str, child: &DynamicObject) -> Result<()> {
    let name = blog.name_any();
    let spec = &blog.data["spec"];
    let (want, ok) = match kind {
        "ConfigMap" => {
            let title = spec["title"].as_str().unwrap_or_default();
            let page = child.data["data"]["index.html"]
                .as_str()
                .unwrap_or_default();
            (
                format!("{name}-page"),
                page.contains(&format!("<title>{title}</title>")),
            )
        }
        "Deployment" => {
            let replicas = spec["replicas"].as_i64().unwrap_or(1);
            (
                name.clone(),
                child.data["spec"]["replicas"].as_i64() == Some(replicas),
            )
        }
        _ => (name.clone(), true),
    };
    if child.name_any() != want || !ok {
        bail!(
            "{kind} {} does not match Blog {name}'s spec {spec}",
            child.name_any()
        );
    }
    Ok(())
}
