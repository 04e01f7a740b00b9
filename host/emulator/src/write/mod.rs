//! The rules of one write, and the writes themselves, applied to the store.
//!
//! In reading order: `opts` (what a write asks for: field manager, `fieldValidation`, dry run,
//! force), `patch` (merge, JSON and strategic merge patches), `apply` (server-side apply with
//! `managedFields`, conflicts and field removal), `track` (the `managedFields` of every other
//! write: the writer owns what it changed, the entries it does not touch stay as stored), `crd` (a stored CRD registers its kinds), `gc`
//! (finalizers, `deletionTimestamp`, Background/Foreground/Orphan propagation, owner-reference
//! garbage collection), `namespace` (a deleted Namespace `Terminating`: the lifecycle admission
//! that refuses new content, the namespace controller that deletes its content kind by kind with
//! its conditions, and `/finalize`), `defaults` (kube-apiserver's defaulting of the built-in
//! kinds, one module per kind), `admission` (type checks, strict field validation of built-in
//! kinds, CRD schemas), `ops` (create, update, patch, apply, delete, with optimistic concurrency and
//! `DeleteOptions.preconditions`).

pub mod opts;
pub mod patch;
pub mod apply;
pub mod track;
pub mod crd;
pub mod gc;
pub mod namespace;
pub mod defaults;
pub mod admission;
pub mod ops;
