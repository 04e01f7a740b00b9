//! Embedded Kubernetes API server emulator.
