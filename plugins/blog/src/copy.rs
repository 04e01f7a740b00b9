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

    /// The Blog's checked-in CRD under the copy's names: generating it at run time
    /// (`CustomResourceExt::crd`) would link the schema generator, a quarter of the component,
    /// and the copies would cost the host more than the Blog they stand for.
    fn crd() -> Option<String> {
        BlogReconciler::crd().map(|crd| renamed(&crd))
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

/// `crd`, the Blog's CRD text, with the copy's names: the lines `deploy/crd/blog.yaml` names
/// them on (the copy's test compares the result with [`BlogCopy::crd`]).
fn renamed(crd: &str) -> String {
    crd.replacen(
        "\n  name: blogs.weir.dev\n",
        &format!("\n  name: {CRD_NAME}\n"),
        1,
    )
    .replacen(
        "\n    kind: Blog\n",
        &format!("\n    kind: {KIND}\n    listKind: {KIND}List\n"),
        1,
    )
    .replacen(
        "\n    plural: blogs\n",
        &format!("\n    plural: {PLURAL}\n"),
        1,
    )
    .replacen(
        "\n    singular: blog\n",
        &format!("\n    singular: {SINGULAR}\n"),
        1,
    )
}

#[cfg(test)]
mod tests {
    use kube::core::CustomResourceExt;
    use weir_guest_sdk::Reconciler;

    use super::{BlogCopy, BlogCopyReconciler};

    /// `WEIR_BLOG_COPY=3 cargo test -p weir-plugin-blog --features bench-copy --lib copy`
    #[test]
    fn the_renamed_text_is_the_crd_the_copy_generates() {
        let text = BlogCopyReconciler::crd().expect("the copy has a CRD");
        let parsed: serde_json::Value =
            serde_saphyr::from_str(&text).expect("the renamed CRD parses");
        let generated =
            serde_json::to_value(BlogCopy::crd()).expect("the generated CRD serializes");
        assert_eq!(parsed, generated);
    }
}
