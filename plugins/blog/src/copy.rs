//! The Blog under a numbered kind (`Blog3`, plural `blogs3`), for the host benchmark's ten- and
//! fifty-plugin rows.
//!
//! Built only with the `bench-copy` feature and `WEIR_BLOG_COPY=N` at compile time
//! (`plugins/build.sh ten` or `fifty`): such components are distinct plugins, each with its own
//! kind, CRD and name, running the Blog's logic unchanged. The default build never sees this module.

use std::borrow::Cow;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{CustomResourceExt, Resource};
use serde::Deserialize;
use weir_guest_sdk::{Children, Error, Finalize, Kind, Outcome, Reconciler, Selection};

use crate::{Blog, BlogReconciler};

/// The copy's number, from `WEIR_BLOG_COPY` at compile time.
macro_rules! copy {
    () => {
        env!(
            "WEIR_BLOG_COPY",
            "the bench-copy feature needs WEIR_BLOG_COPY=N at compile time (plugins/build.sh ten or fifty)"
        )
    };
}

const KIND: &str = concat!("Blog", copy!());
const PLURAL: &str = concat!("blogs", copy!());
const SINGULAR: &str = concat!("blog", copy!());
const CRD_NAME: &str = concat!("blogs", copy!(), ".weir.dev");

/// A Blog presented under the copy's kind (the Blog type ignores `kind` when it decodes).
#[derive(Deserialize, Clone, Debug)]
#[serde(transparent)]
pub struct BlogCopy(pub Blog);

impl Resource for BlogCopy {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        KIND.into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        Blog::group(&())
    }
    fn version(_: &()) -> Cow<'_, str> {
        Blog::version(&())
    }
    fn plural(_: &()) -> Cow<'_, str> {
        PLURAL.into()
    }
    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl CustomResourceExt for BlogCopy {
    /// The Blog's CRD with the copy's names.
    fn crd() -> CustomResourceDefinition {
        let mut crd = Blog::crd();
        crd.metadata.name = Some(CRD_NAME.to_owned());
        let names = &mut crd.spec.names;
        names.kind = KIND.to_owned();
        names.plural = PLURAL.to_owned();
        names.singular = Some(SINGULAR.to_owned());
        names.list_kind = Some(format!("{KIND}List"));
        names.short_names = None;
        crd
    }
    fn crd_name() -> &'static str {
        CRD_NAME
    }
    fn api_resource() -> kube::core::ApiResource {
        kube::core::ApiResource::erase::<Self>(&())
    }
    fn shortnames() -> &'static [&'static str] {
        &[]
    }
}

/// The Blog's reconciler for the copy's kind.
pub struct BlogCopyReconciler;

impl Reconciler for BlogCopyReconciler {
    type Parent = BlogCopy;
    const NAME: &'static str = SINGULAR;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const FINALIZER: Option<&'static str> = BlogReconciler::FINALIZER;

    fn children() -> Vec<Kind> {
        BlogReconciler::children()
    }

    fn related() -> Vec<Kind> {
        BlogReconciler::related()
    }

    fn select(blog: &BlogCopy) -> Result<Vec<Selection>, Error> {
        BlogReconciler::select(&blog.0)
    }

    fn reconcile(blog: &BlogCopy, observed: &Children) -> Result<Outcome, Error> {
        BlogReconciler::reconcile(&blog.0, observed)
    }

    fn finalize(blog: &BlogCopy, observed: &Children) -> Result<Finalize, Error> {
        BlogReconciler::finalize(&blog.0, observed)
    }
}
