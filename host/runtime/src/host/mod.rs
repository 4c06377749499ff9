//! Host implementations of the contract's imports, one file per interface.

pub(crate) mod credential;
pub(crate) mod http;
pub(crate) mod log;
