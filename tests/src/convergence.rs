//! Whether a namespace of Blogs has converged after a rough run: every live Blog Ready with the
//! children its spec asks for, exactly one child of each kind per Blog, no child orphaned or
//! foreign-owned, and every deleted Blog gone (its finalizer removed).
//!
//! A child is any ConfigMap, Deployment or Service carrying the label the host puts on every
//! child it writes (`weir.dev/parent-uid`) or an owner reference to a Blog, so a child left
//! behind by a deleted Blog, or written twice for one Blog, is seen whatever its name. Each must
//! be labelled for a live Blog and owned by that Blog alone: one owner reference, to it, as its
//! controller (a child whose label and owner disagree, or with a second owner, is foreign-owned).
//! The API server's garbage collector removes the children of a deleted owner; what the check
//! sees is what remains once it has.

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
    /// A label key no child may carry once converged: the mark of a plugin version that served
    /// during the run but no longer does.
    pub stale_label: Option<String>,
}

/// What a converged namespace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Converged {
    /// Live Blogs, all Ready.
    pub blogs: usize,
    /// Their children (three each).
    pub children: usize,
}

/// Polls [`check`] every 250 ms until it passes, failing after `timeout` with the last thing not
/// converged.
pub async fn wait(
    client: &kube::Client,
    namespace: &str,
    expected: &Expected,
    timeout: Duration,
) -> Result<Converged> {
    wait_polling(
        client,
        namespace,
        expected,
        timeout,
        Duration::from_millis(250),
    )
    .await
}

/// [`wait`], polling every `every` (thousands of Blogs: each look lists them all).
pub async fn wait_polling(
    client: &kube::Client,
    namespace: &str,
    expected: &Expected,
    timeout: Duration,
    every: Duration,
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
        tokio::time::sleep(every).await;
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
        let list = api(&kind).list(&ListParams::default()).await?;
        let mut per_blog: BTreeMap<&str, Vec<&DynamicObject>> = BTreeMap::new();
        for child in &list.items {
            if let Some(uid) = owner_of(&kind.kind, child, &live, expected)? {
                per_blog.entry(uid).or_default().push(child);
            }
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

/// The UID of the live Blog owning `child` (of kind `kind`), `None` if it is no Blog's child
/// (neither labelled nor owned by a Blog), or an error if it is orphaned, foreign-owned,
/// unlabelled or carries the stale label.
fn owner_of<'a>(
    kind: &str,
    child: &'a DynamicObject,
    live: &BTreeMap<String, &DynamicObject>,
    expected: &Expected,
) -> Result<Option<&'a str>> {
    let name = child.name_any();
    let refs = child.owner_references();
    let label = child.labels().get(PARENT_UID).map(String::as_str);
    let Some(uid) = label else {
        if let Some(blog) = refs.iter().find(|r| r.kind == "Blog") {
            bail!(
                "{kind} {name} is owned by Blog {} (UID {}) but has no {PARENT_UID} label",
                blog.name,
                blog.uid
            );
        }
        return Ok(None);
    };
    let Some(owner) = live.get(uid) else {
        bail!("{kind} {name} is orphaned: its Blog (UID {uid}) is not a live Blog");
    };
    let owned_alone = matches!(
        refs,
        [r] if r.kind == "Blog" && r.uid == uid && r.controller == Some(true)
    );
    if !owned_alone {
        let refs: Vec<String> = refs
            .iter()
            .map(|r| {
                format!(
                    "{} {} (UID {}, controller {:?})",
                    r.kind, r.name, r.uid, r.controller
                )
            })
            .collect();
        bail!(
            "{kind} {name} is foreign-owned: labelled for Blog {} (UID {uid}), owned by [{}]",
            owner.name_any(),
            refs.join(", ")
        );
    }
    if let Some(stale) = &expected.stale_label
        && child.labels().contains_key(stale)
    {
        bail!("{kind} {name} still carries {stale}: written by a plugin version no longer serving");
    }
    Ok(Some(uid))
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn object(kind: &str, name: &str, labels: Value, owners: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": if kind == "Blog" { "weir.dev/v1alpha1" } else { "v1" },
            "kind": kind,
            "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels,
                         "ownerReferences": owners},
        }))
        .expect("a valid object")
    }

    fn owner(kind: &str, name: &str, controller: bool) -> Value {
        json!({"apiVersion": "weir.dev/v1alpha1", "kind": kind, "name": name,
               "uid": format!("uid-{name}"), "controller": controller})
    }

    fn page(labelled_for: Option<&str>, owners: Value) -> DynamicObject {
        let labels = labelled_for.map_or(json!({}), |b| json!({PARENT_UID: format!("uid-{b}")}));
        object("ConfigMap", "a-page", labels, owners)
    }

    fn blogs() -> Vec<DynamicObject> {
        ["a", "b"]
            .map(|n| object("Blog", n, json!({}), json!([])))
            .into()
    }

    fn owner_is(child: &DynamicObject, expected: &Expected) -> Result<Option<String>> {
        let blogs = blogs();
        let live: BTreeMap<String, &DynamicObject> = blogs
            .iter()
            .map(|b| (b.uid().unwrap_or_default(), b))
            .collect();
        Ok(owner_of("ConfigMap", child, &live, expected)?.map(str::to_owned))
    }

    #[test]
    fn a_child_labelled_for_and_controlled_by_its_blog_alone_is_that_blogs() {
        let child = page(Some("a"), json!([owner("Blog", "a", true)]));
        let uid = owner_is(&child, &Expected::default()).expect("owned");
        assert_eq!(uid.as_deref(), Some("uid-a"));
    }

    #[test]
    fn a_child_with_a_second_owner_is_foreign_owned() {
        let second = owner("Other", "x", false);
        let child = page(Some("a"), json!([owner("Blog", "a", true), second]));
        let e = owner_is(&child, &Expected::default()).expect_err("a second owner");
        assert!(e.to_string().contains("foreign-owned"), "{e}");
    }

    #[test]
    fn a_child_labelled_for_one_blog_and_controlled_by_another_is_foreign_owned() {
        let child = page(Some("a"), json!([owner("Blog", "b", true)]));
        let e = owner_is(&child, &Expected::default()).expect_err("owner and label differ");
        assert!(e.to_string().contains("foreign-owned"), "{e}");
    }

    #[test]
    fn a_child_of_its_blog_but_not_as_controller_is_foreign_owned() {
        let child = page(Some("a"), json!([owner("Blog", "a", false)]));
        let e = owner_is(&child, &Expected::default()).expect_err("not the controller");
        assert!(e.to_string().contains("foreign-owned"), "{e}");
    }

    #[test]
    fn a_child_labelled_for_a_blog_no_longer_live_is_orphaned() {
        let child = page(Some("gone"), json!([owner("Blog", "gone", true)]));
        let e = owner_is(&child, &Expected::default()).expect_err("orphaned");
        assert!(e.to_string().contains("orphaned"), "{e}");
    }

    #[test]
    fn a_child_owned_by_a_blog_without_the_label_is_reported() {
        let child = page(None, json!([owner("Blog", "a", true)]));
        let e = owner_is(&child, &Expected::default()).expect_err("unlabelled");
        assert!(
            e.to_string().contains("no weir.dev/parent-uid label"),
            "{e}"
        );
    }

    #[test]
    fn an_object_neither_labelled_nor_owned_by_a_blog_is_no_child() {
        let other = page(None, json!([owner("ReplicaSet", "r", true)]));
        assert_eq!(
            owner_is(&other, &Expected::default()).expect("ignored"),
            None
        );
    }

    #[test]
    fn a_child_still_carrying_the_stale_label_has_not_converged() {
        let mut child = page(Some("a"), json!([owner("Blog", "a", true)]));
        child
            .labels_mut()
            .insert("weir.dev/hot-swapped".into(), "v2".into());
        let expected = Expected {
            stale_label: Some("weir.dev/hot-swapped".into()),
            ..Expected::default()
        };
        let e = owner_is(&child, &expected).expect_err("stale");
        assert!(e.to_string().contains("no longer serving"), "{e}");
    }
}
