//! The Blog reconciler: a ConfigMap with the page, a Deployment serving it, and a Service.
//!
//! The children depend on the Blog's spec and the related ConfigMaps it
//! selected (its theme by name, its posts by label selector), never on what
//! was observed, so a child edited by hand is put back at the next reconcile.
//! Only the status reads an observed child (the Deployment's `readyReplicas`, and only that).
//! `README.md` specifies every child field by field for the Python and
//! JavaScript ports, and `fixtures/` pins it.

#[cfg(feature = "bench-copy")]
pub mod copy;
mod manifests;
mod related;
mod status;
mod types;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::ResourceExt;
use weir_guest_sdk::{Children, Error, Finalize, Kind, Outcome, Reconciler, Selection, log};

pub use manifests::{PAGE_HASH_ANNOTATION, page, page_hash, page_with};
pub use related::Post;
pub use types::{
    Blog, BlogSpec, BlogStatus, DEFAULT_IMAGE, LabelOperator, LabelRequirement, PostsSelector,
};

use manifests::Names;

/// The finalizer the host holds on every Blog until [`BlogReconciler::finalize`] completes.
pub const FINALIZER: &str = "weir.dev/blog-cleanup";

/// Reconciles Blogs.
pub struct BlogReconciler;

impl Reconciler for BlogReconciler {
    type Parent = Blog;
    const NAME: &'static str = "blog";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    fn children() -> Vec<Kind> {
        vec![
            Kind::of::<ConfigMap>(),
            Kind::of::<Deployment>(),
            Kind::of::<Service>(),
        ]
    }

    /// The theme and the posts are ConfigMaps the Blog reads but does not own.
    fn related() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn select(blog: &Blog) -> Result<Vec<Selection>, Error> {
        Ok(related::selections(&blog.spec))
    }

    /// The checked-in CRD (`tests/crd.rs` fails when it differs from what
    /// [`Blog`] generates): embedding the text keeps the schema generator out
    /// of the component, which then fits a ConfigMap.
    fn crd() -> Option<String> {
        Some(include_str!("../../../deploy/crd/blog.yaml").to_owned())
    }

    fn reconcile(blog: &Blog, observed: &Children) -> Result<Outcome, Error> {
        validate(blog)?;
        let names = Names {
            blog: blog.name_any(),
        };
        let read = related::read(blog, &observed.related())?;
        let page = manifests::page_with(&blog.spec.title, read.css.as_deref(), &read.posts);
        let hash = manifests::page_hash(&page);
        let children = vec![
            manifests::config_map(&names, &page).into(),
            manifests::deployment(&names, &blog.spec.image, blog.spec.replicas, &hash).into(),
            manifests::service(&names).into(),
        ];
        let deployment = observed.get_as::<Deployment, status::Readiness>(&names.blog)?;
        let status = status::of(blog, deployment.as_ref(), read.theme_missing);
        // Done even while pods are starting: readiness only changes through the
        // Deployment's status, which the host watches, so polling adds nothing.
        Ok(Outcome::apply(children).status(status))
    }

    /// A Blog has nothing outside the cluster; its children go with it through
    /// the owner references the host set, so cleanup is complete at once. The
    /// finalizer exists so the host's finalizer path runs for every Blog.
    fn finalize(blog: &Blog, observed: &Children) -> Result<Finalize, Error> {
        log::info(&format!(
            "Blog {} deleted; its {} children are garbage-collected by their owner references",
            blog.name_any(),
            observed.len()
        ));
        Ok(Finalize::Complete)
    }
}

#[cfg(not(feature = "bench-copy"))]
weir_guest_sdk::export!(BlogReconciler);
#[cfg(feature = "bench-copy")]
weir_guest_sdk::export!(copy::BlogCopyReconciler);

/// Rejects what the CRD schema would reject, for parents that bypassed it,
/// and names the field, since the message is what the user sees.
fn validate(blog: &Blog) -> Result<(), Error> {
    let name = blog.name_any();
    if !is_dns1035_label(&name) {
        return Err(Error::permanent(format!(
            "metadata.name {name:?} cannot name a Service: use at most 63 lowercase letters, digits and '-', \
             starting with a letter and ending with a letter or digit"
        )));
    }
    if blog.spec.title.is_empty() {
        return Err(Error::permanent(format!(
            "Blog {name}: spec.title must not be empty"
        )));
    }
    if blog.spec.replicas < 0 {
        return Err(Error::permanent(format!(
            "Blog {name}: spec.replicas must be >= 0, not {}",
            blog.spec.replicas
        )));
    }
    if blog.spec.image.is_empty() {
        return Err(Error::permanent(format!(
            "Blog {name}: spec.image must not be empty"
        )));
    }
    Ok(())
}

/// The Service is named after the Blog, and Service names are DNS-1035 labels.
fn is_dns1035_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests;
