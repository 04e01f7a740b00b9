//! The Blog reconciler.
