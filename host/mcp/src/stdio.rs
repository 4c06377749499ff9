//! The stdio transport (and any byte stream pair, for tests and embedders).

use std::sync::Arc;

use rmcp::{ServiceExt, service::QuitReason};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{Backend, Error, WardenServer, lines::LineTransport};

/// Serves MCP over this process's stdin and stdout until the client closes
/// stdin (or the handshake fails).
///
/// Uses non-blocking pipes when stdin and stdout are FIFOs (how MCP clients
/// spawn servers), so no message crosses the blocking thread pool.
pub async fn serve_stdio<B: Backend>(backend: Arc<B>) -> Result<(), Error> {
    serve_io(backend, rmcp::transport::io::stdio_pipes()).await
}

/// Serves MCP over any `(reader, writer)` pair of newline-delimited JSON-RPC
/// streams, e.g. the halves of a `tokio::io::duplex`, until the reader ends.
///
/// A line longer than 16 MiB, or nested deeper than serde_json parses, is
/// answered with a JSON-RPC error (`-32600` or `-32700`) when its top-level
/// `"id"` can be found, and the connection keeps serving.
pub async fn serve_io<B, R, W>(backend: Arc<B>, (reader, writer): (R, W)) -> Result<(), Error>
where
    B: Backend,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = WardenServer::new(backend)
        .serve(LineTransport::new(reader, writer))
        .await
        .map_err(|error| Error::Handshake(Box::new(error)))?;
    match running.waiting().await.map_err(Error::Task)? {
        QuitReason::JoinError(error) => Err(Error::Task(error)),
        _ => Ok(()),
    }
}
