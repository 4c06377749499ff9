//! Run tool components under fuel, memory and time limits with typed outcomes (all wasmtime code).
