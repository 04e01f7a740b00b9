//! Converts between the contract's JSON text and the typed API, for the component and the test harness alike.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Children, Error, Finalize, Kind, Outcome, Reconciler, Requeue, Selection};

/// What a plugin says about itself (the contract's `plugin-info`).
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    /// [`Reconciler::NAME`].
    pub name: String,
    /// [`Reconciler::VERSION`].
    pub version: String,
    /// The kind of [`Reconciler::Parent`].
    pub parent: Kind,
    /// [`Reconciler::children`].
    pub children: Vec<Kind>,
    /// [`Reconciler::related`].
    pub related: Vec<Kind>,
    /// [`Reconciler::FINALIZER`].
    pub finalizer: Option<String>,
    /// The parent's CustomResourceDefinition as JSON.
    pub crd: Option<String>,
}

/// A reconcile answer as the contract carries it: JSON text.
pub(crate) struct Response {
    pub children: Vec<String>,
    /// The cluster each child names, in `children`'s order (`None`: the parent's).
    pub clusters: Vec<Option<String>>,
    pub status: Option<String>,
    pub requeue: Requeue,
}

pub(crate) fn describe<R: Reconciler>() -> Info {
    Info {
        name: R::NAME.to_owned(),
        version: R::VERSION.to_owned(),
        parent: Kind::of_custom::<R::Parent>(),
        children: R::children(),
        related: R::related(),
        finalizer: R::FINALIZER.map(str::to_owned),
        crd: R::crd(),
    }
}

pub(crate) fn select<R: Reconciler>(parent: &str) -> Result<Vec<Selection>, Error> {
    let parent = decode_parent::<R::Parent>(parent)?;
    R::select(&parent)
}

/// One call's input as the contract carries it: the parent, its cluster, and each observed
/// object with its cluster (an empty name: the parent's).
pub(crate) struct Request<'a> {
    pub parent: &'a str,
    pub cluster: String,
    pub children: Vec<(String, String)>,
    pub related: Vec<(String, String)>,
}

pub(crate) fn reconcile<R: Reconciler>(request: Request<'_>) -> Result<Response, Error> {
    let parent = decode_parent::<R::Parent>(request.parent)?;
    let observed = decode_children(request)?;
    let outcome = R::reconcile(&parent, &observed)?;
    encode(outcome)
}

pub(crate) fn finalize<R: Reconciler>(request: Request<'_>) -> Result<Finalize, Error> {
    let parent = decode_parent::<R::Parent>(request.parent)?;
    let observed = decode_children(request)?;
    R::finalize(&parent, &observed)
}

/// Decodes the parent, naming the object and the offending field on failure:
/// a parent that does not match its type is an invalid spec, so permanent.
fn decode_parent<P: kube::Resource<DynamicType = ()> + DeserializeOwned>(
    json: &str,
) -> Result<P, Error> {
    if let Ok(parent) = serde_json::from_str(json) {
        return Ok(parent);
    }
    // Only a failed decode pays for a second pass that tracks where it fails.
    let kind = P::kind(&());
    let value: Value = serde_json::from_str(json)
        .map_err(|e| Error::permanent(format!("the {kind} parent is not JSON: {e}")))?;
    let key = object_key(&value);
    serde_path_to_error::deserialize(&value)
        .map_err(|e| Error::permanent(format!("{kind} {key} is invalid: {e}")))
}

fn decode_children(request: Request<'_>) -> Result<Children, Error> {
    Ok(Children::placed(request.children)
        .map_err(|e| Error::permanent(format!("an observed child is not a JSON object: {e}")))?
        .with_related(request.related)
        .map_err(|e| Error::permanent(format!("a related object is not a JSON object: {e}")))?
        .in_parent_cluster(request.cluster))
}

pub(crate) fn encode(outcome: Outcome) -> Result<Response, Error> {
    let (children, clusters): (Vec<_>, Vec<_>) = outcome
        .children
        .into_iter()
        .map(|child| child.json.map(|json| (json, child.cluster)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::permanent(format!("a desired child does not serialize: {e}")))?
        .into_iter()
        .unzip();
    let status = outcome
        .status
        .transpose()
        .map_err(|e| Error::permanent(format!("the status does not serialize: {e}")))?;
    Ok(Response {
        children,
        clusters,
        status,
        requeue: outcome.requeue,
    })
}

/// `namespace/name` (or `name`) for messages; never fails, even on garbage.
fn object_key(object: &Value) -> String {
    let field = |f: &str| {
        object
            .pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
    };
    match (field("namespace"), field("name")) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.to_owned(),
        _ => "(unnamed)".to_owned(),
    }
}
