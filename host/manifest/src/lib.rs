//! Parse and validate v3 extension manifests into a resolved package model (no wasmtime).
