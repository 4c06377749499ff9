//! `serve --otlp-endpoint URL`: the host's call spans exported with the
//! OpenTelemetry SDK over OTLP/HTTP (protobuf) to `URL/v1/traces`, the path
//! every OTLP receiver serves (a collector, Jaeger, Tempo).
//!
//! Spans are batched on the SDK's own thread (at most every 5 s by
//! default; `OTEL_BSP_SCHEDULE_DELAY` and the other standard `OTEL_BSP_*`
//! variables tune it), so a slow collector never holds a call; what is
//! still queued is sent when `serve` stops. The resource names the service
//! `warden` and its version; `OTEL_RESOURCE_ATTRIBUTES` adds to it (a
//! host's name, say).

use anyhow::{Context as _, Result, bail};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// The installed exporter; [`Exporter::shutdown`] sends what is queued.
pub(crate) struct Exporter(SdkTracerProvider);

/// Install the OTLP/HTTP exporter as the global tracer provider.
pub(crate) fn install(endpoint: &str) -> Result<Exporter> {
    let url = url::Url::parse(endpoint)
        .with_context(|| format!("--otlp-endpoint {endpoint}: not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        bail!("--otlp-endpoint {endpoint}: an http:// or https:// URL is needed");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!("--otlp-endpoint {endpoint}: the base URL takes no query or fragment");
    }
    let traces = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(traces)
        .build()
        .with_context(|| format!("--otlp-endpoint {endpoint}"))?;
    let resource = Resource::builder()
        .with_service_name("warden")
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    Ok(Exporter(provider))
}

impl Exporter {
    /// Send what is queued and stop (off the runtime's threads: the SDK
    /// waits for its batch thread).
    pub(crate) async fn shutdown(self) {
        let provider = self.0;
        let stopped = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = stopped {
            tracing::warn!(%error, "could not send the last spans");
        }
    }
}
