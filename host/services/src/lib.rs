//! The first-party services the `warden` binary ships: native code for the
//! `[runtime] kind = "first_party"` packages built into it (`packages/gmail`,
//! `packages/google-calendar`, `packages/web-access`).
//!
//! Each is a [`FirstPartyService`] the binary registers on its host with
//! [`register`]; an embedding may register them too (or not: a built-in
//! package whose service is not registered is left out). They run behind the
//! same executor as every tool: the host checks the input against the
//! package's schema, authorizes the call, and gives the service only the
//! call's egress session ([`warden_host::CallHttp`]), which enforces the
//! capability's network targets and byte cap, injects the user's token
//! toward its audience alone and redacts it from every answer. A service
//! never sees a secret and has no client of its own; its output is checked
//! against the output schema, bounded and redacted again by the host.
//!
//! - [`Gmail`]: list, read, send, draft, reply to and trash messages.
//! - [`Calendar`]: calendars, events (list, read, create, change, delete,
//!   attendees, reminders) and free slots computed from free/busy.
//! - [`WebAccess`]: web search and page content through Exa's MCP endpoint.

mod calendar;
mod gmail;
mod google;
mod support;
mod web_access;

use std::sync::Arc;

pub use calendar::Calendar;
pub use gmail::Gmail;
use warden_host::{FirstPartyService, HostBuilder};
pub use web_access::WebAccess;

/// Every service, by the name its package's `[runtime] service` gives.
pub fn all() -> Vec<(&'static str, Arc<dyn FirstPartyService>)> {
    vec![
        ("gmail", Arc::new(Gmail)),
        ("google-calendar", Arc::new(Calendar)),
        ("web-access", Arc::new(WebAccess)),
    ]
}

/// `builder` with every service registered.
pub fn register(builder: HostBuilder) -> HostBuilder {
    all().into_iter().fold(builder, |builder, (name, service)| {
        builder.first_party_service(name, service)
    })
}
