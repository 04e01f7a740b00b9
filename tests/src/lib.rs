//! Shared set-up for the end-to-end tests.
