//! Reconciler plugins: load a component, check it, and call it under limits.
//!
//! ```no_run
//! use weir::plugin::{Engine, EngineConfig, Limits, ReconcileRequest};
//!
//! # fn main() -> anyhow::Result<()> {
//! let engine = Engine::new(EngineConfig::default())?;
//! let plugin = engine.load_file("target/plugins/blog.wasm".as_ref(), Limits::default())?;
//! let parent = r#"{"apiVersion":"weir.dev/v1alpha1","kind":"Blog","metadata":{"name":"b"},"spec":{"title":"Hi"}}"#;
//! let answer = plugin.reconcile(&ReconcileRequest { parent: parent.into(), children: vec![] })?;
//! println!("{} wants {} children", plugin.info().name, answer.children.len());
//! # Ok(())
//! # }
//! ```

mod bindings;
mod engine;
mod limits;
mod log;
mod precompiled;
mod response;
mod reused;
mod sandbox;
mod store;
mod text;
mod types;

pub use engine::{CONTRACT_VERSION, Engine, EngineConfig, LoadError};
pub use limits::Limits;
pub use reused::ReusedInstance;
pub use sandbox::{CallError, Plugin};
pub use text::truncate;
pub use types::{
    ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
    Requeue, ResourceKind,
};
