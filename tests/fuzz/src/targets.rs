//! One module per target; each `run` asserts the target's properties.

#[cfg(feature = "host")]
mod archive;
#[cfg(feature = "host")]
pub mod headers_json;
mod json_guards;
pub mod jwt;
pub mod manifest;
pub mod mcp_http;
pub mod mcp_line;
#[cfg(feature = "host")]
pub mod package;
pub mod redact;
#[cfg(feature = "host")]
pub mod sums;
pub mod tape;
