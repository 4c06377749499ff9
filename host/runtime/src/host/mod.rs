//! Host implementations of the contract's imports, one file per interface;
//! an interface both versions share is written once for both.

pub(crate) mod call;
pub(crate) mod credential;
pub(crate) mod http;
pub(crate) mod log;
