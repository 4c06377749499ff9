//! Traces: a span per call, with child spans for its authorization, its
//! lane's run and each egress request, in OpenTelemetry.
//!
//! Off unless the host is built with [`HostBuilder::traces`]. The library
//! uses the OpenTelemetry API only, through the global tracer provider, as
//! libraries do: the application installs the SDK and its exporter
//! (`warden serve --otlp-endpoint` installs the OTLP/HTTP one). A call's
//! parent is the caller's W3C trace context when it sent one (an MCP client
//! puts `traceparent` and `tracestate` in the request's `_meta`).
//!
//! No attribute holds a call's input or output, or a secret: spans carry the
//! capability id, lane, origin, Location, outcome code and the rule that
//! decided, and an egress span the target as the manifest declared it (see
//! [`warden_egress::policy::NetworkPolicy::target_label`]) and the status.
//!
//! [`HostBuilder::traces`]: crate::HostBuilder::traces

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue, global};
use warden_egress::EgressObserver;

/// The instrumentation scope spans are made under.
const SCOPE: &str = "warden";

/// A caller's trace context, as the W3C Trace Context headers carry it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceParent {
    /// `version-traceid-parentid-flags`, e.g.
    /// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
    pub traceparent: String,
    /// Vendor entries (`rojo=00f067aa0ba902b7,congo=t61rcWkgMzE`), if any.
    pub tracestate: Option<String>,
}

impl TraceParent {
    /// `traceparent` with `tracestate`, as received (checked when used: a
    /// malformed one starts a new trace, as the W3C specification asks).
    pub fn new(traceparent: impl Into<String>, tracestate: Option<String>) -> Self {
        TraceParent {
            traceparent: traceparent.into(),
            tracestate,
        }
    }

    /// The remote span this names, or `None` when `traceparent` is not a
    /// valid version-00 header (or names the all-zero ids).
    pub fn span_context(&self) -> Option<SpanContext> {
        let mut parts = self.traceparent.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        // Version 00 has exactly four fields; a later version may add more.
        let later = version != "00";
        if version.len() != 2 || version == "ff" || (!later && parts.next().is_some()) {
            return None;
        }
        let lower_hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !lower_hex(version, 2) || !lower_hex(trace, 32) || !lower_hex(span, 16) {
            return None;
        }
        if !lower_hex(flags, 2) {
            return None;
        }
        let trace_id = TraceId::from_hex(trace).ok()?;
        let span_id = SpanId::from_hex(span).ok()?;
        if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
            return None;
        }
        let flags = u8::from_str_radix(flags, 16).ok()?;
        let state = self
            .tracestate
            .as_deref()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        Some(SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::new(flags & 1),
            true,
            state,
        ))
    }
}

/// The span of one call, while it is decided and run.
#[derive(Debug)]
pub(crate) struct CallTrace {
    cx: Context,
}

impl CallTrace {
    /// Start the span of a call of `capability` (empty for a tool nobody
    /// published: the model's words are no attribute), under `parent`.
    pub(crate) fn start(
        parent: Option<&TraceParent>,
        capability: &str,
        origin: &'static str,
        location: &str,
    ) -> Self {
        let tracer = global::tracer(SCOPE);
        let parent_cx = parent
            .and_then(TraceParent::span_context)
            .map_or_else(Context::new, |remote| {
                Context::new().with_remote_span_context(remote)
            });
        let span = tracer
            .span_builder("warden.call")
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("warden.capability", capability.to_owned()),
                KeyValue::new("warden.origin", origin),
                KeyValue::new("warden.location", location.to_owned()),
            ])
            .start_with_context(&tracer, &parent_cx);
        CallTrace {
            cx: parent_cx.with_span(span),
        }
    }

    /// A child span named `name`, open until the returned value is dropped
    /// or [`Child::end`]ed.
    pub(crate) fn child(&self, name: &'static str) -> Child {
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .start_with_context(&tracer, &self.cx);
        Child {
            cx: self.cx.with_span(span),
        }
    }

    /// End the call's span with its outcome (`ok`, `approval_required` or
    /// a failure's code) and, once known, its lane.
    pub(crate) fn finish(self, outcome: &'static str, lane: Option<&'static str>) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("warden.outcome", outcome));
        if let Some(lane) = lane {
            span.set_attribute(KeyValue::new("warden.lane", lane));
        }
        if !matches!(outcome, "ok" | "approval_required") {
            span.set_status(Status::error(outcome));
        }
        span.end();
    }
}

/// An open child span of a call.
#[derive(Debug)]
pub(crate) struct Child {
    cx: Context,
}

impl Child {
    /// Note `key` = `value` on the span.
    pub(crate) fn set(&self, key: &'static str, value: &'static str) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// What hears this span's egress requests (each becomes a child).
    pub(crate) fn egress(&self) -> Arc<dyn EgressObserver> {
        Arc::new(EgressSpans {
            cx: self.cx.clone(),
        })
    }

    /// End the span now.
    pub(crate) fn end(self) {
        self.cx.span().end();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Ending twice is a no-op; a span dropped unended is ended here.
        self.cx.span().end();
    }
}

/// A span per egress request of one call, under its lane's span.
#[derive(Debug)]
struct EgressSpans {
    cx: Context,
}

impl EgressObserver for EgressSpans {
    fn exchanged(&self, target: &str, status: u16, bytes_sent: u64, started: Instant) {
        let tracer = global::tracer(SCOPE);
        let start = SystemTime::now()
            .checked_sub(started.elapsed())
            .unwrap_or_else(SystemTime::now);
        let mut span = tracer
            .span_builder("warden.egress")
            .with_kind(SpanKind::Client)
            .with_start_time(start)
            .with_attributes([
                KeyValue::new("warden.target", target.to_owned()),
                KeyValue::new("http.response.status_code", i64::from(status)),
                KeyValue::new(
                    "http.request.body.size",
                    i64::try_from(bytes_sent).unwrap_or(i64::MAX),
                ),
            ])
            .start_with_context(&tracer, &self.cx);
        if status >= 500 {
            span.set_status(Status::error("server error"));
        }
        span.end();
    }

    fn received(&self, _target: &str, _bytes: u64) {}

    fn denied(&self, rule: &'static str) {
        self.cx.span().add_event(
            "warden.egress_denied",
            vec![KeyValue::new("warden.rule", rule)],
        );
    }

    fn redacted(&self) {
        self.cx.span().add_event("warden.redacted", Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(traceparent: &str) -> Option<SpanContext> {
        TraceParent::new(traceparent, None).span_context()
    }

    #[test]
    fn a_valid_traceparent_names_the_remote_span() {
        let cx = parent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(
            cx.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
        assert!(cx.is_remote() && cx.is_sampled());
        let with_state = TraceParent::new(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            Some("rojo=00f067aa0ba902b7".into()),
        );
        let cx = with_state.span_context().unwrap();
        assert!(!cx.is_sampled());
        assert_eq!(cx.trace_state().get("rojo"), Some("00f067aa0ba902b7"));
    }

    #[test]
    fn a_malformed_traceparent_starts_a_new_trace() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(parent(bad).is_none(), "{bad:?}");
        }
    }
}
