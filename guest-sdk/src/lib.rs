//! Write Weir reconciler plugins as small pure Rust functions.
//!
//! A plugin is a type implementing [`Reconciler`] for one custom resource
//! (the *parent*), plus one line, [`export!`], that turns it into the
//! WebAssembly component the Weir host loads. The host does every API call;
//! the plugin only maps *parent + observed children* to *desired children +
//! status + when to look again*. Built natively, the same crate is plain
//! Rust: [`testing`] runs it through the component's own JSON conversion, so
//! logic tests need no WebAssembly.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::{CustomResource, ResourceExt};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use weir_guest_sdk::{Children, Error, Kind, Outcome, Reconciler};
//!
//! /// A note kept in a ConfigMap.
//! #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.dev", version = "v1", kind = "Note", namespaced)]
//! pub struct NoteSpec {
//!     text: String,
//! }
//!
//! pub struct Notes;
//!
//! impl Reconciler for Notes {
//!     type Parent = Note;
//!     const NAME: &'static str = "note";
//!     const VERSION: &'static str = env!("CARGO_PKG_VERSION");
//!
//!     fn children() -> Vec<Kind> {
//!         vec![Kind::of::<ConfigMap>()]
//!     }
//!
//!     fn reconcile(note: &Note, _observed: &Children) -> Result<Outcome, Error> {
//!         if note.spec.text.is_empty() {
//!             return Err(Error::permanent("spec.text must not be empty"));
//!         }
//!         let mut page = ConfigMap::default();
//!         page.metadata.name = Some(note.name_any());
//!         page.data = Some([("text".to_owned(), note.spec.text.clone())].into());
//!         Ok(Outcome::apply(vec![page.into()]))
//!     }
//! }
//!
//! weir_guest_sdk::export!(Notes);
//!
//! let note = Note::new("hello", NoteSpec { text: "hi".into() });
//! let out = weir_guest_sdk::testing::reconcile::<Notes>(&note, vec![]).unwrap();
//! let page = out.children.get::<ConfigMap>("hello").unwrap().unwrap();
//! assert_eq!(page.data.unwrap()["text"], "hi");
//! ```
//!
//! Related objects (contract `weir:reconciler@0.2.0`): a plugin that reads
//! objects it does not own declares their kinds in [`Reconciler::related`],
//! says per parent what it reads in [`Reconciler::select`], and finds what
//! exists in `observed.related()` ([`Children::related`]).
//!
//! Clusters (contract `weir:reconciler@0.4.0`): the parent's cluster is
//! [`Children::cluster`]; a child goes elsewhere with [`Child::in_cluster`], is
//! observed there through [`Children::in_cluster`], and a selection reads another
//! cluster with [`Selection::in_cluster`].
//!
//! Build the component with `cargo build --target wasm32-wasip2 --profile plugin`
//! (or `plugins/build.sh`), then check it offline with `weir test`.

mod children;
mod condition;
mod error;
pub mod log;
mod outcome;
mod reconciler;
mod selection;
pub mod testing;
mod wire;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
#[path = "export.rs"]
pub mod __private;

pub use children::{Children, InCluster, Related};
pub use condition::Condition;
pub use error::{Error, Result};
pub use outcome::{Child, Finalize, Outcome, Requeue};
pub use reconciler::{Kind, Reconciler};
pub use selection::{Selection, Selector};

/// Exports a [`Reconciler`] as the plugin's component interface.
///
/// Write it once, at the top level of the plugin's `lib.rs`. Natively it
/// expands to nothing, so the crate stays an ordinary, testable library.
#[macro_export]
macro_rules! export {
    ($reconciler:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type WeirExports = $crate::__private::Adapter<$reconciler>;
            $crate::__private::__export_reconciler!(
                WeirExports with_types_in $crate::__private
            );
        };
    };
}
