//! The trait a plugin implements, and the kinds it declares.

use std::any::TypeId;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::{CustomResourceExt, Resource};
use serde::de::DeserializeOwned;

use crate::{Children, Error, Finalize, Outcome, Selection};

/// A reconciler: a pure function from a parent and its observed children to
/// the children and status the parent should have.
///
/// The host owns every API call, so an implementation only computes: it reads
/// `parent` and `observed` and returns an [`Outcome`]. Given the same input it
/// must return the same output.
pub trait Reconciler {
    /// The custom resource this plugin reconciles (a `#[derive(CustomResource)]` type).
    type Parent: Resource<DynamicType = (), Scope: 'static>
        + CustomResourceExt
        + DeserializeOwned
        + 'static;

    /// Plugin name: logs, metrics and the field manager `weir/<name>`.
    const NAME: &'static str;
    /// Plugin version; write `env!("CARGO_PKG_VERSION")`.
    const VERSION: &'static str;
    /// A finalizer the host holds on every parent until [`finalize`](Self::finalize) completes.
    const FINALIZER: Option<&'static str> = None;

    /// The kinds this plugin creates; the host refuses any other kind.
    fn children() -> Vec<Kind>;

    /// The kinds this plugin reads beyond its children (related objects): a
    /// ConfigMap the user points at, a Namespace's labels... Read-only. The
    /// default: none.
    fn related() -> Vec<Kind> {
        Vec::new()
    }

    /// The related objects to read for `parent`, of [`related`](Self::related)
    /// kinds only; called before every `reconcile` and `finalize`, which find
    /// those that exist in [`Children::related`]. A change to a selected object
    /// (or its creation) reconciles the parent again. The default: nothing.
    fn select(parent: &Self::Parent) -> Result<Vec<Selection>, Error> {
        let _ = parent;
        Ok(Vec::new())
    }

    /// The parent's CustomResourceDefinition (YAML or JSON), for `describe`.
    ///
    /// The default derives it from [`Reconciler::Parent`] at run time. A plugin
    /// that checks its generated CRD in (and tests that it is current) can
    /// return that text instead with `include_str!`, which keeps the schema
    /// generator out of the component: a quarter of the Blog plugin's size.
    fn crd() -> Option<String> {
        serde_json::to_string(&Self::Parent::crd()).ok()
    }

    /// Compute the desired children, status and requeue of one parent.
    fn reconcile(parent: &Self::Parent, observed: &Children) -> Result<Outcome, Error>;

    /// One cleanup step while the parent is being deleted (only with a [`FINALIZER`](Self::FINALIZER)).
    ///
    /// Children need no cleanup here: the API server deletes them through the
    /// owner references the host sets. The default completes at once.
    fn finalize(parent: &Self::Parent, observed: &Children) -> Result<Finalize, Error> {
        let _ = (parent, observed);
        Ok(Finalize::Complete)
    }
}

/// A Kubernetes resource type, as a plugin declares it to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Plural resource name used in URLs, e.g. `deployments`.
    pub plural: String,
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
}

impl Kind {
    /// The kind of a k8s-openapi type. Only namespaced kinds can be children,
    /// because children always land in the parent's namespace.
    pub fn of<K: k8s_openapi::Resource<Scope = NamespaceResourceScope>>() -> Self {
        Kind {
            group: K::GROUP.to_owned(),
            version: K::VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            plural: K::URL_PATH_SEGMENT.to_owned(),
            namespaced: true,
        }
    }

    /// The kind of a cluster-scoped k8s-openapi type, such as `Namespace`: only
    /// for [`Reconciler::related`] (children are namespaced).
    pub fn of_cluster<K: k8s_openapi::Resource<Scope = ClusterResourceScope>>() -> Self {
        Kind {
            group: K::GROUP.to_owned(),
            version: K::VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            plural: K::URL_PATH_SEGMENT.to_owned(),
            namespaced: false,
        }
    }

    /// The kind of a custom resource type (what `#[derive(CustomResource)]` generates).
    pub fn of_custom<K: Resource<DynamicType = ()>>() -> Self
    where
        K::Scope: 'static,
    {
        Kind {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            namespaced: TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        }
    }
}
