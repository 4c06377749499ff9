//! Integration tests of the runtime against real, built components
//! (`packages/echo` and the hostile fixture). Run `cargo xtask bundle` first.

mod cache;
mod concurrency;
mod echo;
mod hostile;
mod imports;
mod limits;
mod network;
mod support;
