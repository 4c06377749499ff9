//! `warden serve`: the tools over MCP.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Result;

use super::Context;

/// Serve stdio (default) or streamable HTTP.
pub(crate) async fn run(cx: &Context, http: Option<SocketAddr>) -> Result<ExitCode> {
    let (host, location) = cx.open()?;
    let backend = crate::backend::HostBackend::new(host, location);
    match http {
        None => warden_mcp::serve_stdio(backend).await?,
        Some(addr) => {
            let server = warden_mcp::serve_http(backend, addr).await?;
            eprintln!(
                "warden: MCP over streamable HTTP at {} (Ctrl-C stops)",
                server.url()
            );
            tokio::signal::ctrl_c().await?;
            server.shutdown().await;
        }
    }
    Ok(ExitCode::SUCCESS)
}
