//! Hosted-MCP lane tests against a local HTTPS MCP server (test CA,
//! resolver override: the endpoint keeps its real host).

mod discovery;
mod lane;
mod rmcp;
mod support;
