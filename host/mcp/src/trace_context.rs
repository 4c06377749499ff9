//! The caller's W3C trace context, as MCP clients send it: `traceparent`
//! and `tracestate` in the request's `_meta` (the keys the W3C headers
//! use). Taken as text, bounded; the backend checks the format.

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// The longest `traceparent` taken: version 00 is 55 bytes; a later version
/// may append fields.
const MAX_TRACEPARENT: usize = 256;

/// The longest `tracestate` taken (the W3C limit is 32 entries of at most
/// 256 bytes; 512 is what it asks a receiver to keep at least).
const MAX_TRACESTATE: usize = 512;

/// `(traceparent, tracestate)` from `context`'s `_meta`, when a string
/// `traceparent` within bounds is there.
pub(crate) fn trace_context(
    context: &RequestContext<RoleServer>,
) -> Option<(String, Option<String>)> {
    let text = |key: &str, max: usize| {
        context
            .meta
            .get(key)
            .and_then(|v| v.as_str())
            .filter(|s| s.len() <= max)
            .map(str::to_owned)
    };
    let parent = text("traceparent", MAX_TRACEPARENT)?;
    Some((parent, text("tracestate", MAX_TRACESTATE)))
}
