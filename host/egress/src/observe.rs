//! What egress reports to whoever watches it (the host's metrics).
//!
//! The observer hears about every request that went on the wire and every
//! one the policy refused, named only by what the host itself declared: the
//! target a request matched (a declared host, or the wildcard pattern a
//! host matched, never the name a guest chose under it) and the rule that
//! refused. Nothing of a request's path, query, headers or body, and no
//! secret, ever reaches it.
//!
//! A host has one for all its requests ([`crate::Egress::observed`]); a
//! call's session may have one of its own as well
//! ([`crate::CallSession::observed_by`]: the call's trace).

use std::fmt;
use std::time::Instant;

/// Hears what egress does. Calls are made on the request's task: keep them
/// cheap (an atomic add), never blocking.
pub trait EgressObserver: Send + Sync + fmt::Debug {
    /// A response's head came back from `target` (see
    /// [`crate::policy::NetworkPolicy::target_label`]) with `status`, for a
    /// request that sent `bytes_sent` of body and was `started` then
    /// (resolution, connection and TLS included).
    fn exchanged(&self, target: &str, status: u16, bytes_sent: u64, started: Instant);

    /// `bytes` of a response body from `target` arrived (once for a whole
    /// body, per chunk for a streamed one).
    fn received(&self, target: &str, bytes: u64);

    /// A request was refused before anything was sent; `rule` is
    /// [`crate::policy::Denial::kind`], or `non_public_address`.
    fn denied(&self, rule: &'static str);

    /// A secret was found and replaced in what came back.
    fn redacted(&self);
}
