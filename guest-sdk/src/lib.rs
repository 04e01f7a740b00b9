//! Write Weir reconciler plugins as small pure Rust functions.
