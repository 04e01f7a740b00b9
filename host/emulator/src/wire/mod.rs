//! The bottom layer: one object and how it crosses the wire, with no store behind it.
//!
//! In reading order: `yaml` (YAML bodies and files), `http_util` (JSON responses, query
//! strings), `object` (paths into JSON objects, resourceVersion), `fieldset` (field paths of
//! `managedFields`), `changes` (what an update changed, as such paths), `fields_v1` (a stored
//! `fieldsV1` read in place), `selector` (label and field selectors), `shard_selector`
//! (KEP-5866's `shardSelector`, behind a flag), `stored` (an object kept as its JSON text,
//! parsed again only where a reader looks inside), `schema` (CRD `openAPIV3Schema` validation,
//! 422 with field paths, and pruning), `builtin_schema` (the OpenAPI schemas of the built-in
//! kinds, from k8s-openapi), `builtin_prune` (their unknown fields dropped, over those schemas
//! compiled once), `protobuf` (protobuf bodies of the built-in kinds as JSON, through
//! message descriptors generated from k8s-pb), `apierror` (failures as `Status`).

pub mod yaml;
pub mod http_util;
pub mod object;
pub mod fieldset;
pub mod changes;
pub mod fields_v1;
pub mod selector;
pub mod shard_selector;
pub mod stored;
pub mod schema;
pub mod builtin_schema;
pub mod builtin_prune;
pub mod protobuf;
pub mod apierror;
