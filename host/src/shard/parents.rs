//! The parents as the coordinator reads and writes them: their metadata a page at a time, each
//! page on a connection of its own, and label patches conditional on the version it read.

use std::collections::BTreeMap;

use kube::api::{DynamicObject, ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::{Value, json};

use super::FIELD_MANAGER;
use crate::plugin::ResourceKind;

/// Parents listed per request. A page is read whole before it is decoded: at 500 a whole pass
/// held about 1.5 MiB more at once (heaptrack, 3,000 Blogs), and at 100 a whole pass over
/// 30,000 parents is 300 requests every [`super::coordinator::WHOLE_EVERY`]. Each page also
/// comes on a connection of its own ([`page`]).
pub(super) const PAGE: u32 = 100;

/// A page of parents as the coordinator lists them. Each parent's metadata is read down to its
/// name, namespace, UID, `resourceVersion` and labels: its `managedFields`, often most of a
/// listed parent, are skipped unparsed rather than decoded into JSON trees and dropped (a page
/// of 500 decoded in full grew each worker thread's heap by about 10 MiB).
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct ListedPage {
    #[serde(default)]
    pub(super) metadata: ListedPageMeta,
    #[serde(default)]
    pub(super) items: Vec<Listed>,
}

/// The list's own metadata: where the next page starts.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct ListedPageMeta {
    #[serde(rename = "continue")]
    pub(super) continue_: Option<String>,
}

/// One listed parent.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Listed {
    #[serde(default)]
    pub(super) metadata: ListedMeta,
}

/// The fields of a parent's metadata a placement reads.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListedMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

impl ListedMeta {
    pub(super) fn into_object_meta(self) -> ObjectMeta {
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            labels: self.labels,
            ..ObjectMeta::default()
        }
    }
}

/// One page of a parent kind's metadata, each parent read down to what a placement needs,
/// on a connection closed once it is read.
///
/// A connection's read buffer grows to the largest answer it carried (a page: up to about
/// 300 KiB) and keeps that size for as long as the connection lives, and kube's connection
/// pool keeps an idle connection open until the server closes it. The label writes keep up
/// to `PLACING` ([`super::coordinator`]) connections open, so one page after another landed on another of them:
/// at 3,000 Blogs the coordinator held 1.8 MiB more of such buffers than a replica of the
/// same share (heaptrack), and its peak RSS was 2–2.5 MiB higher; with each page's
/// connection closed the two are level. The cost is a connection per page (a TLS handshake
/// on a cluster): one a pass, plus one per [`PAGE`] parents on a whole pass.
pub(super) async fn page(
    client: &Client,
    list: &kube::core::Request,
    params: &ListParams,
) -> Result<ListedPage, kube::Error> {
    client.request(page_request(list, params)?).await
}

/// Requests on `kind`'s collection in `namespace` (all namespaces when `None`, or when the kind
/// is cluster-scoped).
pub(super) fn collection(kind: &ResourceKind, namespace: Option<&str>) -> kube::core::Request {
    let namespace = namespace.filter(|_| kind.namespaced);
    kube::core::Request::new(DynamicObject::url_path(&kind.api_resource(), namespace))
}

/// The request for one page of `list` (see [`page`]): metadata only, and
/// `Connection: close`.
fn page_request(
    list: &kube::core::Request,
    params: &ListParams,
) -> Result<http::Request<Vec<u8>>, kube::Error> {
    let mut request = list
        .list_metadata(params)
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("list_metadata");
    request.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    Ok(request)
}

/// A merge patch of `labels` on the parent `meta` describes, only if it is still at `meta`'s
/// `resourceVersion`; API errors (a 409 among them) as kube's client reports them.
pub(super) async fn relabel(
    client: &Client,
    kind: &ResourceKind,
    meta: &ObjectMeta,
    labels: Value,
) -> Result<(), kube::Error> {
    let patch = json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "labels": labels,
    }});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    let name = meta.name.clone().unwrap_or_default();
    let mut request = collection(kind, meta.namespace.as_deref())
        .patch(&name, &params, &Patch::Merge(&patch))
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("patch");
    // The parent written comes back whole; nothing here reads it, so it is not decoded (at the
    // first pass over 30,000 new parents, decoding each answer was most of the coordinator's
    // own memory).
    client.request_text(request).await?;
    tracing::debug!(kind = %kind.kind, parent = %name, labels = %patch["metadata"]["labels"], "relabelled");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{DRAIN_LABEL, OWNER_LABEL, unowned};

    #[test]
    fn a_page_is_asked_for_as_metadata_on_a_connection_closed_after_it() {
        let kind = ResourceKind::of_v1("example.dev", "Blog", "blogs", true);
        let params = ListParams::default()
            .limit(PAGE)
            .labels(&unowned())
            .continue_token("next");
        let request = page_request(&collection(&kind, Some("ns")), &params)
            .unwrap_or_else(|e| panic!("a page request: {e}"));
        let header = |name| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
        };
        assert_eq!(header(http::header::CONNECTION), "close");
        assert!(
            header(http::header::ACCEPT).contains("as=PartialObjectMetadataList"),
            "{:?}",
            request.headers()
        );
        let query = request.uri().query().unwrap_or_default();
        assert!(
            request.uri().path().ends_with("/namespaces/ns/blogs"),
            "{}",
            request.uri()
        );
        for part in ["limit=100", "continue=next", "labelSelector="] {
            assert!(query.contains(part), "{part} in {query}");
        }
    }

    #[test]
    fn a_listed_page_keeps_what_a_placement_reads_and_where_the_next_page_starts() {
        let served = json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": {"resourceVersion": "9", "continue": "next"},
            "items": [{
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadata",
                "metadata": {
                    "name": "b1", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                    "generation": 2, "finalizers": ["weir.dev/cleanup"],
                    "labels": {OWNER_LABEL: "a", DRAIN_LABEL: "true"},
                    "managedFields": [{"manager": "weir", "operation": "Apply",
                        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:title": {}}}}]
                }
            }]
        });
        let page: ListedPage =
            serde_json::from_value(served).unwrap_or_else(|e| panic!("a served page: {e}"));
        assert_eq!(page.metadata.continue_.as_deref(), Some("next"));
        let metas: Vec<ObjectMeta> = page
            .items
            .into_iter()
            .map(|p| p.metadata.into_object_meta())
            .collect();
        let want = ObjectMeta {
            name: Some("b1".into()),
            namespace: Some("ns".into()),
            uid: Some("u1".into()),
            resource_version: Some("7".into()),
            labels: Some(BTreeMap::from([
                (OWNER_LABEL.into(), "a".into()),
                (DRAIN_LABEL.into(), "true".into()),
            ])),
            ..ObjectMeta::default()
        };
        assert_eq!(metas, [want]);
    }
}
