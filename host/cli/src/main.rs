//! The warden binary: CLI and MCP server.
fn main() {}
