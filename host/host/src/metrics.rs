//! What an operator watches: the host's metrics in the Prometheus text
//! format (the Prometheus project's own client, `prometheus-client`).
//!
//! Off unless the host is built with [`HostBuilder::metrics`]
//! (`warden serve --metrics`). Events are counted as they happen (a call,
//! an authorization decision, an egress request or refusal, a redaction);
//! what is a state rather than an event (approvals waiting, MCP sessions,
//! the memory budget, the compile cache's totals) is sampled when the
//! metrics are read ([`Host::render_metrics`]).
//!
//! No label carries a call's input or output or a secret: a call is
//! labelled by its capability id (from an installed manifest), its lane and
//! its outcome code; a decision by the rule's name; an egress request by the
//! target it matched as the manifest declared it (a wildcard pattern, not
//! the name a guest chose under it) and its status class; a refused request
//! by the rule that refused it. A tool name nobody published is counted
//! with an empty capability: the model's words are not a label.
//!
//! [`HostBuilder::metrics`]: crate::HostBuilder::metrics
//! [`Host::render_metrics`]: crate::Host::render_metrics

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use warden_registry::LocationId;
use warden_runtime::{MemoryUse, RuntimeStats};

/// The `Content-Type` of `Metrics::render`'s text (format 0.0.4).
pub const METRICS_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    capability: String,
    lane: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    capability: String,
    lane: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    decision: &'static str,
    rule: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExchangeLabels {
    target: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LocationLabels {
    location: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// A call's run time: 1 ms to about 33 s, doubling.
fn call_seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The metrics of one host.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    call_seconds: Histograms<RunLabels>,
    decisions: Family<DecisionLabels, Counter>,
    egress_requests: Family<ExchangeLabels, Counter>,
    egress_sent: Family<TargetLabels, Counter>,
    egress_received: Family<TargetLabels, Counter>,
    egress_denied: Family<RuleLabels, Counter>,
    redactions: Counter,
    sampled: Sampled,
    /// One reader samples and encodes at a time (sampled counters advance
    /// by the difference since the last read).
    reading: tokio::sync::Mutex<()>,
}

/// One capability's series on the hot path: its completed calls and its
/// run times, resolved once (each lookup in a family builds its labels).
#[derive(Debug)]
pub(crate) struct CapabilitySeries {
    completed: Counter,
    run_time: Histogram,
}

impl CapabilitySeries {
    /// Count one completed call.
    pub(crate) fn completed(&self) {
        self.completed.inc();
    }

    /// Note how long a lane took.
    pub(crate) fn ran(&self, took: Duration) {
        self.run_time.observe(took.as_secs_f64());
    }
}

/// What is read when the metrics are.
#[derive(Debug, Default)]
struct Sampled {
    approvals_pending: Family<LocationLabels, Gauge>,
    sessions: Gauge,
    memory_budget: Gauge<u64, AtomicU64>,
    memory_reserved: Gauge<u64, AtomicU64>,
    memory_peak: Gauge<u64, AtomicU64>,
    compiled: Counter,
    cache_hits: Counter,
    cache_rebuilt: Counter,
    long_calls: Counter,
    idle_connections: Gauge,
}

/// What [`Metrics::sample`] reads from the host.
#[derive(Debug, Default)]
pub(crate) struct Sample {
    pub(crate) approvals_pending: Vec<(String, usize)>,
    pub(crate) memory: Option<MemoryUse>,
    pub(crate) runtime: Option<RuntimeStats>,
    pub(crate) idle_connections: usize,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric registered, each at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("warden");
        let calls = Family::default();
        let call_seconds: Histograms<RunLabels> = Family::new_with_constructor(call_seconds);
        let decisions = Family::default();
        let egress_requests = Family::default();
        let egress_sent = Family::default();
        let egress_received = Family::default();
        let egress_denied = Family::default();
        let redactions = Counter::default();
        let sampled = Sampled::default();
        registry.register(
            "calls",
            "Tool calls by capability, lane and outcome (`ok`, `approval_required` or the failure's code)",
            calls.clone(),
        );
        registry.register_with_unit(
            "call_duration",
            "Run time of the calls a lane ran, from the credential precheck to the bounded output",
            Unit::Seconds,
            call_seconds.clone(),
        );
        registry.register(
            "authorizations",
            "Authorization decisions by decision (allow, approved, needs_approval, deny, refused) and rule",
            decisions.clone(),
        );
        registry.register(
            "approvals_pending",
            "Approval requests waiting for an answer, by Location (the store's view)",
            sampled.approvals_pending.clone(),
        );
        registry.register(
            "egress_requests",
            "Requests tools sent, by declared target and status class",
            egress_requests.clone(),
        );
        registry.register_with_unit(
            "egress_sent",
            "Request body bytes tools sent, by declared target",
            Unit::Bytes,
            egress_sent.clone(),
        );
        registry.register_with_unit(
            "egress_received",
            "Response body bytes tools received, by declared target",
            Unit::Bytes,
            egress_received.clone(),
        );
        registry.register(
            "egress_denied",
            "Requests the network policy refused before sending, by rule",
            egress_denied.clone(),
        );
        registry.register(
            "redactions",
            "Responses in which a staged secret was found and redacted",
            redactions.clone(),
        );
        registry.register(
            "mcp_sessions",
            "MCP sessions open on this server",
            sampled.sessions.clone(),
        );
        registry.register_with_unit(
            "memory_budget",
            "The host-wide memory budget of running calls",
            Unit::Bytes,
            sampled.memory_budget.clone(),
        );
        registry.register_with_unit(
            "memory_reserved",
            "Memory reserved by the calls running now",
            Unit::Bytes,
            sampled.memory_reserved.clone(),
        );
        registry.register_with_unit(
            "memory_peak_reserved",
            "The most memory ever reserved at once",
            Unit::Bytes,
            sampled.memory_peak.clone(),
        );
        registry.register(
            "components_compiled",
            "Components compiled by this host",
            sampled.compiled.clone(),
        );
        registry.register(
            "compile_cache_hits",
            "Components loaded from the compile cache instead of compiled",
            sampled.cache_hits.clone(),
        );
        registry.register(
            "compile_cache_rebuilt",
            "Compile cache entries found unusable and rebuilt",
            sampled.cache_rebuilt.clone(),
        );
        registry.register(
            "long_calls",
            "Calls moved to the long-call lane",
            sampled.long_calls.clone(),
        );
        registry.register(
            "egress_idle_connections",
            "Connections kept idle for reuse",
            sampled.idle_connections.clone(),
        );
        Metrics {
            registry,
            calls,
            call_seconds,
            decisions,
            egress_requests,
            egress_sent,
            egress_received,
            egress_denied,
            redactions,
            sampled,
            reading: tokio::sync::Mutex::const_new(()),
        }
    }

    /// The series of `capability` on `lane` (see [`CapabilitySeries`]).
    pub(crate) fn series(&self, capability: &str, lane: &'static str) -> CapabilitySeries {
        let completed = self
            .calls
            .get_or_create(&CallLabels {
                capability: capability.to_owned(),
                lane,
                outcome: "ok",
            })
            .clone();
        let run_time = self
            .call_seconds
            .get_or_create(&RunLabels {
                capability: capability.to_owned(),
                lane,
            })
            .clone();
        CapabilitySeries {
            completed,
            run_time,
        }
    }

    /// One call decided (and maybe run): `lane` is `None` for a tool no
    /// published tool answers (its capability label is then empty).
    pub(crate) fn call(&self, capability: &str, lane: Option<&'static str>, outcome: &'static str) {
        let (capability, lane) = match lane {
            Some(lane) => (capability.to_owned(), lane),
            None => (String::new(), "none"),
        };
        self.calls
            .get_or_create(&CallLabels {
                capability,
                lane,
                outcome,
            })
            .inc();
    }

    /// One authorization decision.
    pub(crate) fn decision(&self, decision: &'static str, rule: &'static str) {
        self.decisions
            .get_or_create(&DecisionLabels { decision, rule })
            .inc();
    }

    /// How many MCP sessions are open now (set by whoever serves MCP before
    /// the metrics are read).
    pub fn set_mcp_sessions(&self, open: usize) {
        self.sampled
            .sessions
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    /// Take `sample` in and encode every metric.
    pub(crate) async fn render(&self, sample: Sample) -> String {
        let _one_reader = self.reading.lock().await;
        let sampled = &self.sampled;
        sampled.approvals_pending.clear();
        for (location, pending) in sample.approvals_pending {
            sampled
                .approvals_pending
                .get_or_create(&LocationLabels { location })
                .set(i64::try_from(pending).unwrap_or(i64::MAX));
        }
        if let Some(memory) = sample.memory {
            sampled.memory_budget.set(memory.budget_bytes);
            sampled.memory_reserved.set(memory.reserved_bytes);
            sampled.memory_peak.set(memory.peak_reserved_bytes);
        }
        if let Some(stats) = sample.runtime {
            advance(&sampled.compiled, stats.compiled);
            advance(&sampled.cache_hits, stats.cache_hits);
            advance(&sampled.cache_rebuilt, stats.cache_rebuilt);
            advance(&sampled.long_calls, stats.long_calls);
        }
        sampled
            .idle_connections
            .set(i64::try_from(sample.idle_connections).unwrap_or(i64::MAX));
        let mut text = String::new();
        if let Err(error) =
            prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
        {
            // Writing to a String fails only on a label that cannot encode.
            tracing::error!(%error, "could not encode the metrics");
        }
        text
    }
}

/// Move a counter sampled from a running total up to `total`.
fn advance(counter: &Counter, total: u64) {
    counter.inc_by(total.saturating_sub(counter.get()));
}

impl warden_egress::EgressObserver for Metrics {
    fn exchanged(&self, target: &str, status: u16, bytes_sent: u64, _started: Instant) {
        self.egress_requests
            .get_or_create(&ExchangeLabels {
                target: target.to_owned(),
                status: status_class(status),
            })
            .inc();
        if bytes_sent > 0 {
            self.egress_sent
                .get_or_create(&TargetLabels {
                    target: target.to_owned(),
                })
                .inc_by(bytes_sent);
        }
    }

    fn received(&self, target: &str, bytes: u64) {
        self.egress_received
            .get_or_create(&TargetLabels {
                target: target.to_owned(),
            })
            .inc_by(bytes);
    }

    fn denied(&self, rule: &'static str) {
        self.egress_denied.get_or_create(&RuleLabels { rule }).inc();
    }

    fn redacted(&self) {
        self.redactions.inc();
    }
}

/// `2xx`, `4xx`, ...: a status's class (a label per code says little more).
fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

impl crate::Host {
    /// The metrics this host counts into, when built with
    /// [`crate::HostBuilder::metrics`].
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.shared.metrics.as_ref()
    }

    /// The metrics in the Prometheus text format
    /// ([`crate::METRICS_CONTENT_TYPE`]), with what is a state sampled now:
    /// the approvals pending in each open Location, the memory budget, the
    /// compile cache. `None` when the host counts none.
    pub async fn render_metrics(&self) -> Option<String> {
        let metrics = self.shared.metrics.as_ref()?;
        let open: Vec<LocationId> = {
            let locations = self.locations.lock().expect("locations lock");
            locations.values().map(|l| l.id.clone()).collect()
        };
        let mut sample = Sample {
            memory: Some(self.shared.runtime.memory()),
            runtime: Some(self.shared.runtime.stats()),
            idle_connections: self.shared.egress.idle_connections(),
            ..Sample::default()
        };
        for location in open {
            match self
                .shared
                .approvals
                .store()
                .pending_approvals(&location)
                .await
            {
                Ok(pending) => sample.approvals_pending.push((location.0, pending.len())),
                // The gauge is left out, not reported as zero.
                Err(error) => {
                    tracing::warn!(location = %location.0, %error, "could not count the pending approvals");
                }
            }
        }
        Some(metrics.render(sample).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A label value is escaped as the format says: a name holding a quote
    // and a line break cannot close its label set and forge a series.
    #[tokio::test]
    async fn a_crafted_name_cannot_forge_a_series() {
        let metrics = Metrics::new();
        let forged = "x\"} 1\nwarden_calls_total{capability=\"forged\",lane=\"wasm\",outcome=\"ok";
        metrics.call(forged, Some("wasm"), "ok");
        let text = metrics.render(Sample::default()).await;
        let calls: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("warden_calls_total"))
            .collect();
        assert_eq!(calls.len(), 1, "{text}");
        assert!(calls[0].ends_with(" 1"), "{text}");
        assert!(
            !text.contains("\nwarden_calls_total{capability=\"forged\""),
            "{text}"
        );
    }
}
