//! Hosted-MCP lane tests.
