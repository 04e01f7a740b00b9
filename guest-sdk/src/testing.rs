//! Runs a plugin natively, through the same JSON conversion as the component, so logic tests take milliseconds.
//!
//! ```
//! # use weir_guest_sdk::{Children, Error, Kind, Outcome, Reconciler, testing};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # #[derive(kube::CustomResource, serde::Deserialize, serde::Serialize, Clone, Debug, schemars::JsonSchema)]
//! # #[kube(group = "example.dev", version = "v1", kind = "Note", namespaced)]
//! # pub struct NoteSpec { text: String }
//! # struct Notes;
//! # impl Reconciler for Notes {
//! #     type Parent = Note;
//! #     const NAME: &'static str = "note";
//! #     const VERSION: &'static str = "0.1.0";
//! #     fn children() -> Vec<Kind> { vec![Kind::of::<ConfigMap>()] }
//! #     fn reconcile(_: &Note, _: &Children) -> Result<Outcome, Error> { Ok(Outcome::apply(vec![])) }
//! # }
//! let note = Note::new("hello", NoteSpec { text: "hi".into() });
//! let out = testing::reconcile::<Notes>(&note, vec![]).unwrap();
//! assert!(out.children.get::<ConfigMap>("hello").unwrap().is_none());
//! ```

use serde::Serialize;
use serde_json::Value;

pub use crate::wire::Info;
use crate::{Child, Children, Error, Finalize, Reconciler, Requeue, Selection, wire};

/// A reconcile answer decoded back from JSON, for assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    /// The desired children, exactly as the component would return them (look one up in
    /// another cluster with [`Children::in_cluster`]).
    pub children: Children,
    /// The desired status, if the plugin set one.
    pub status: Option<Value>,
    /// When the host would reconcile again.
    pub requeue: Requeue,
}

impl Reconciled {
    /// The desired children given back as observed ones, as the host would
    /// after applying them (for convergence tests).
    pub fn as_observed(&self) -> Vec<Child> {
        self.children
            .clone()
            .into_placed()
            .into_iter()
            .map(|(cluster, json)| Child::text(json, (!cluster.is_empty()).then_some(cluster)))
            .collect()
    }
}

/// What the component's `describe` would answer.
pub fn describe<R: Reconciler>() -> Info {
    wire::describe::<R>()
}

/// Reconciles `parent` (anything that serializes to it, so a malformed parent
/// can be tested too) with `observed` children, as the component would.
pub fn reconcile<R: Reconciler>(
    parent: &impl Serialize,
    observed: Vec<Child>,
) -> Result<Reconciled, Error> {
    reconcile_with_related::<R>(parent, observed, Vec::new())
}

/// What the plugin's `select` answers for `parent`.
pub fn select<R: Reconciler>(parent: &impl Serialize) -> Result<Vec<Selection>, Error> {
    let (parent, _) = to_wire(parent, Vec::new())?;
    wire::select::<R>(&parent)
}

/// Like [`reconcile`], with the selected `related` objects the host would pass (only those
/// that exist: a test gives exactly what the cluster would hold).
pub fn reconcile_with_related<R: Reconciler>(
    parent: &impl Serialize,
    observed: Vec<Child>,
    related: Vec<Child>,
) -> Result<Reconciled, Error> {
    reconcile_in_cluster::<R>(parent, "", observed, related)
}

/// Like [`reconcile_with_related`], the parent in `cluster` (contract 0.4.0): an observed child
/// or related object built with [`Child::in_cluster`] is in that cluster, any other in the
/// parent's. The desired children come back with theirs ([`Children::in_cluster`]).
pub fn reconcile_in_cluster<R: Reconciler>(
    parent: &impl Serialize,
    cluster: &str,
    observed: Vec<Child>,
    related: Vec<Child>,
) -> Result<Reconciled, Error> {
    let (parent, children) = to_wire(parent, observed)?;
    let (_, related) = to_wire(&(), related)?;
    let request = wire::Request {
        parent: &parent,
        cluster: cluster.to_owned(),
        children,
        related,
    };
    let response = wire::reconcile::<R>(request)?;
    let placed = response
        .clusters
        .into_iter()
        .chain(std::iter::repeat(None))
        .map(Option::unwrap_or_default)
        .zip(response.children)
        .collect();
    let children = Children::placed(placed)
        .map_err(|e| Error::permanent(format!("a desired child is not a JSON object: {e}")))?
        .in_parent_cluster(cluster.to_owned());
    let status = response.status.as_deref().map(from_wire).transpose()?;
    Ok(Reconciled {
        children,
        status,
        requeue: response.requeue,
    })
}

/// Runs one cleanup step for `parent`, as the component would.
pub fn finalize<R: Reconciler>(
    parent: &impl Serialize,
    observed: Vec<Child>,
) -> Result<Finalize, Error> {
    let (parent, children) = to_wire(parent, observed)?;
    let request = wire::Request {
        parent: &parent,
        cluster: String::new(),
        children,
        related: Vec::new(),
    };
    wire::finalize::<R>(request)
}

/// The parent's JSON and each object's `(cluster, JSON)` (an empty cluster: the parent's).
type Wire = (String, Vec<(String, String)>);

fn to_wire(parent: &impl Serialize, observed: Vec<Child>) -> Result<Wire, Error> {
    let parent =
        serde_json::to_string(parent).map_err(|e| Error::permanent(format!("test parent: {e}")))?;
    let children = observed
        .into_iter()
        .map(|child| {
            child
                .json
                .map(|json| (child.cluster.unwrap_or_default(), json))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| Error::permanent(format!("test child: {e}")))?;
    Ok((parent, children))
}

fn from_wire(json: &str) -> Result<Value, Error> {
    serde_json::from_str(json)
        .map_err(|e| Error::permanent(format!("plugin output is not JSON: {e}")))
}
