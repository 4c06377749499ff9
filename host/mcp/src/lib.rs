//! An MCP server over a Warden tool backend.
