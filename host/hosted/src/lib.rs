//! The hosted-MCP lane: tools implemented by a remote MCP server (`[mcp]`
//! packages), reached by rmcp's client whose HTTP transport *is* Warden's
//! egress.
//!
//! - [`Endpoint`] locks the manifest's `server` URL: https only, exact
//!   host, port and path, no userinfo, query or fragment.
//! - [`EgressHttp`] implements rmcp's streamable-HTTP client over egress:
//!   one network target, `[[mcp.credentials]]` injected for that origin
//!   only, private addresses refused, staged secrets redacted, redirects
//!   refused.
//! - [`HostedServer`] keeps one MCP session per server, lists its tools
//!   under the [`discovery`] bounds (all or nothing), and calls them with a
//!   deadline, a result bound and an `outputSchema` check; the content
//!   blocks a tool returns pass on in the [`warden_core::content`] model,
//!   binary data scanned for secrets in its decoded form.
//!
//! ```no_run
//! # async fn demo(egress: warden_egress::Egress) -> Result<(), warden_hosted::HostedError> {
//! use warden_hosted::{HostedServer, LaneLimits, ServerSpec};
//! let spec = ServerSpec {
//!     extension_id: "notion".into(),
//!     content: None,
//!     server: "https://mcp.notion.com/mcp".into(),
//!     credentials: Vec::new(),
//!     max_tools: 64,
//!     loopback_http: false,
//!     settings: Default::default(),
//! };
//! let server = HostedServer::new(egress, &spec, LaneLimits::default())?;
//! for tool in server.catalog().await?.iter() {
//!     println!("{}", tool.name);
//! }
//! # Ok(()) }
//! ```

mod calls;
mod content;
pub mod discovery;
mod endpoint;
mod error;
mod listener;
mod schema;
mod server;
mod size;
mod tasks;
mod transport;

pub use discovery::{Bounds, CatalogBoundError, RemoteTool};
pub use endpoint::Endpoint;
pub use error::HostedError;
pub use schema::InputCheck;
pub use server::{
    CallOutput, DEFAULT_REFRESH_INTERVAL, HostedServer, LaneLimits, Reporting, ServerSettings,
    ServerSpec,
};
pub use transport::EgressHttp;
