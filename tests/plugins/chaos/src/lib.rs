//! A misbehaving plugin for the sandbox tests.
