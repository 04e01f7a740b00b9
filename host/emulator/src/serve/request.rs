//! One parsed resource request: what its URL names, and what its query, headers and body ask for.

use axum::body::Bytes;
use http::{HeaderMap, Method};
use serde_json::{Value, json};

use crate::kinds::resources::ResourceType;
use crate::serve::table;
use crate::state::shared::Shared;
use crate::store::ObjKey;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::http_util::is_true;
use crate::wire::selector::{FieldSelector, LabelSelector};
use crate::wire::shard_selector::{self, ShardSelector};
use crate::write::opts::{Validation, WriteOpts};

/// A parsed resource URL.
pub struct Target {
    /// The served resource type.
    pub rt: ResourceType,
    /// Namespace from the URL, if any.
    pub ns: Option<String>,
    /// Object name, if the URL names one.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`), if any.
    pub sub: Option<String>,
}

/// One parsed resource request.
pub struct Request {
    /// HTTP method.
    pub method: Method,
    /// What the URL names.
    pub target: Target,
    /// Decoded query parameters.
    pub query: Vec<(String, String)>,
    /// Request headers.
    pub headers: HeaderMap,
    /// Raw body.
    pub body: Bytes,
}

impl Request {
    /// The query parameter `name`, if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the query parameter `name` is true.
    pub fn flag(&self, name: &str) -> bool {
        self.param(name).is_some_and(is_true)
    }

    /// The header `name` as text (empty when absent or not text).
    pub fn header(&self, name: http::header::HeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Whether `Accept` asks for `PartialObjectMetadata`.
    pub fn metadata_only(&self) -> bool {
        self.header(http::header::ACCEPT)
            .contains("as=PartialObjectMetadata")
    }

    /// The `Table` output `Accept` asks for, if any.
    pub fn table(&self) -> Option<table::Include> {
        table::wanted(self.header(http::header::ACCEPT))
            .then(|| table::Include::parse(self.param("includeObject")))
    }

    /// What a write asks for, from the query (the field manager defaults to the User-Agent's
    /// product).
    pub fn write_opts(&self) -> WriteOpts {
        let agent = self.header(http::header::USER_AGENT);
        let default_manager = agent
            .split('/')
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or("unknown")
            .to_string();
        WriteOpts {
            manager: self
                .param("fieldManager")
                .map(String::from)
                .unwrap_or(default_manager),
            validation: match self.param("fieldValidation") {
                Some("Strict") => Validation::Strict,
                Some("Ignore") => Validation::Ignore,
                _ => Validation::Warn,
            },
            dry_run: self.param("dryRun") == Some("All"),
            force: self.flag("force"),
        }
    }

    /// The address of the object the URL names, if it names one.
    pub fn key(&self) -> Option<ObjKey> {
        let name = self.target.name.clone()?;
        Some(ObjKey {
            res: self.target.rt.key(),
            ns: self.target.ns.clone().unwrap_or_default(),
            name,
        })
    }

    /// The body as JSON, from JSON, YAML or protobuf (CBOR gets 415).
    pub fn json_body(&self) -> ApiResult<Value> {
        let ct = self.header(http::header::CONTENT_TYPE);
        if ct.contains("protobuf") {
            // kubectl's generators (`create namespace`, `create configmap`, ...) send protobuf.
            return crate::wire::protobuf::decode(&self.body)
                .map_err(|e| ApiError::new(415, "UnsupportedMediaType", e.to_string()));
        }
        if ct.contains("cbor") {
            return Err(ApiError::unsupported_media(ct));
        }
        serde_json::from_slice(&self.body)
            .or_else(|_| crate::wire::yaml::from_slice(&self.body))
            .map_err(|e| {
                ApiError::bad_request(format!("the request body could not be decoded: {e}"))
            })
    }
}

/// The request's label and field selectors (400 when one does not parse, or names a field a
/// custom resource cannot be selected by).
pub fn selectors(req: &Request) -> ApiResult<(LabelSelector, FieldSelector)> {
    let labels = LabelSelector::parse(req.param("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
    let fields = FieldSelector::parse(req.param("fieldSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
    // A custom resource supports only these two field labels (plus the CRD's
    // `selectableFields`, not read here); kube-apiserver refuses any other with 400.
    if req.target.rt.from_crd
        && let Some(f) = fields
            .fields()
            .find(|f| !matches!(*f, "metadata.name" | "metadata.namespace"))
    {
        return Err(ApiError::bad_request(format!(
            "field label not supported: {f}"
        )));
    }
    Ok((labels, fields))
}

/// The request's `shardSelector` when the emulator serves it (empty otherwise: an unknown
/// parameter is ignored, as by a server without the feature).
pub fn shard(shared: &Shared, req: &Request) -> ApiResult<ShardSelector> {
    match req.param(shard_selector::PARAM) {
        Some(text) if shared.config.sharded_list_watch => {
            ShardSelector::parse(text).map_err(|e| ApiError::bad_request(e.to_string()))
        }
        _ => Ok(ShardSelector::default()),
    }
}

/// `obj` as `PartialObjectMetadata` (what [`Request::metadata_only`] asks for).
pub fn partial(obj: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))})
}
