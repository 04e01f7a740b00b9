//! The served kinds: the registry of resource types, and the documents kubectl reads from it.
//!
//! In reading order: `events` (core/v1 ⇄ events.k8s.io/v1 Event fields, one store behind both
//! APIs), `resources` (the registry: the built-in kinds plus every kind a CRD declares, served as
//! soon as the CRD is created), `discovery` (`/version`, `/api`, `/apis` and the resource lists),
//! `openapi` (`/openapi/v3`, and `/openapi/v2` rewritten from the same schemas, in JSON or as
//! gnostic protobuf).

pub mod events;
pub mod resources;
pub mod discovery;
pub mod openapi;
