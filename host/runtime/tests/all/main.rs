//! Integration tests of the runtime against real, built components
//! (`packages/echo`, the hostile and the wasm32-wasip2 `wasi-tool` fixtures, and
//! `near-probe` of the `near:agent@0.4.1` world). Run `cargo xtask bundle` first.

mod cache;
mod compat;
mod compile_limits;
mod concurrency;
mod echo;
mod external;
mod hostile;
mod imports;
mod lazy;
mod limits;
mod network;
mod support;
#[cfg(target_arch = "x86_64")]
mod tiered;
mod wasi;
mod worlds;
