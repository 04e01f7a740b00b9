//! Reconciler plugins: load a component, check it, and call it under limits.
//!
//! ```no_run
//! use weir::plugin::{Engine, EngineConfig, Limits, ReconcileRequest};
//!
//! # fn main() -> anyhow::Result<()> {
//! let engine = Engine::new(EngineConfig::default())?;
//! let plugin = engine.load_file("target/plugins/blog.wasm".as_ref(), Limits::default())?;
//! let parent = r#"{"apiVersion":"weir.dev/v1alpha1","kind":"Blog","metadata":{"name":"b"},"spec":{"title":"Hi"}}"#;
//! let answer = plugin.reconcile(&ReconcileRequest { parent: parent.into(), ..Default::default() })?;
//! println!("{} wants {} children", plugin.info().name, answer.children.len());
//! # Ok(())
//! # }
//! ```

mod apart;
mod bindings;
mod call_error;
mod engine;
mod guest;
mod ledger;
mod limits;
mod load;
mod log;
mod memory;
mod phases;
mod placement;
mod precompiled;
mod response;
mod reused;
mod sandbox;
mod selection;
mod store;
#[cfg(test)]
pub(crate) mod test_info;
mod text;
mod types;

pub use call_error::CallError;
pub use engine::{
    CONTRACT_VERSION, Engine, EngineConfig, LoadError, POOL_KEEP_RESIDENT, VERSION_LINE,
};
pub use limits::Limits;
pub use memory::MemoryGauges;
pub use phases::Phases;
pub use placement::{Clusters, LOCAL_CLUSTER};
pub use reused::ReusedInstance;
pub use sandbox::Plugin;
pub use selection::{LabelRequirement, LabelSelector, Selection, Selector, SelectorOperator};
pub use text::truncate;
pub use types::{
    Contract, ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest,
    ReconcileResponse, Requeue, ResourceKind,
};
