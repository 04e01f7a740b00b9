//! A plugin steered by its parent, for host end-to-end scenarios.
