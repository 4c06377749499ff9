//! An OTLP/HTTP trace receiver for the tracing tests: `POST /v1/traces`
//! with an `application/x-protobuf` body, decoded with the OpenTelemetry
//! project's own message types (`opentelemetry-proto`, prost), the spans
//! kept for the test to read. Anything else is answered `404`/`415`/`400`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode, body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message as _;

/// One span as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// Hex trace id.
    pub trace_id: String,
    /// Hex span id.
    pub span_id: String,
    /// Hex parent span id (empty for a root).
    pub parent_span_id: String,
    /// The span's name.
    pub name: String,
    /// String and integer attributes, as text.
    pub attributes: HashMap<String, String>,
    /// The names of its events.
    pub events: Vec<String>,
    /// The `service.name` of the resource that sent it.
    pub service: String,
}

/// A running receiver; stops when dropped.
#[derive(Debug)]
pub struct OtlpReceiver {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    task: tokio::task::JoinHandle<()>,
}

impl OtlpReceiver {
    /// Listen on a free loopback port.
    pub async fn start() -> OtlpReceiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let kept = kept.clone();
                        async move { Ok::<_, Infallible>(receive(request, &kept).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        OtlpReceiver { addr, spans, task }
    }

    /// The endpoint to export to (`http://127.0.0.1:PORT`; the exporter
    /// appends `/v1/traces`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().unwrap().clone()
    }

    /// Wait until a span `name` of trace `trace_id` arrived; panics with
    /// what did arrive after `within`.
    pub async fn wait_for(&self, trace_id: &str, name: &str, within: Duration) -> ReceivedSpan {
        let deadline = Instant::now() + within;
        loop {
            let found = self
                .spans()
                .into_iter()
                .find(|s| s.trace_id == trace_id && s.name == name);
            if let Some(span) = found {
                return span;
            }
            assert!(
                Instant::now() < deadline,
                "no span `{name}` in trace {trace_id}; received: {:#?}",
                self.spans()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(
    request: Request<Incoming>,
    kept: &Mutex<Vec<ReceivedSpan>>,
) -> Response<Full<Bytes>> {
    let answer = |status: StatusCode| {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != "/v1/traces" || request.method() != hyper::Method::POST {
        return answer(StatusCode::NOT_FOUND);
    }
    let protobuf = request
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/x-protobuf");
    if !protobuf {
        return answer(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    let Ok(body) = request.into_body().collect().await else {
        return answer(StatusCode::BAD_REQUEST);
    };
    let Ok(export) = ExportTraceServiceRequest::decode(body.to_bytes()) else {
        return answer(StatusCode::BAD_REQUEST);
    };
    let mut spans = kept.lock().unwrap();
    for resource in export.resource_spans {
        let service = resource
            .resource
            .as_ref()
            .and_then(|r| {
                r.attributes
                    .iter()
                    .find(|kv| kv.key == "service.name")
                    .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?))
            })
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push(ReceivedSpan {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    name: span.name,
                    attributes: span
                        .attributes
                        .iter()
                        .filter_map(|kv| {
                            Some((kv.key.clone(), text(kv.value.as_ref()?.value.as_ref()?)?))
                        })
                        .collect(),
                    events: span.events.into_iter().map(|e| e.name).collect(),
                    service: service.clone(),
                });
            }
        }
    }
    answer(StatusCode::OK)
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(n) => Some(n.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
