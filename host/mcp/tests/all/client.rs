//! rmcp's own client, over a duplex pipe (the stdio transport) or real
//! streamable HTTP on 127.0.0.1.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
        ElicitRequestParams, ElicitResult, Implementation,
    },
    service::{NotificationContext, RequestContext, RunningService, ServiceError},
    transport::StreamableHttpClientTransport,
};
use serde_json::Value;
use tokio::sync::Notify;
use warden_mcp::HttpServer;

use crate::fake::Fake;

/// Which transport a test runs over.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Stdio,
    Http,
}

/// A test client: optionally answers elicitations with a fixed reply, and
/// records `tools/list_changed` notifications.
#[derive(Debug, Clone, Default)]
pub(crate) struct TestClient {
    /// `Some`: declare the elicitation capability and answer with this.
    pub(crate) reply: Option<ElicitResult>,
    pub(crate) elicitations: Arc<AtomicUsize>,
    pub(crate) list_changed: Arc<Notify>,
}

impl TestClient {
    pub(crate) fn answering(reply: ElicitResult) -> Self {
        Self {
            reply: Some(reply),
            ..Self::default()
        }
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.reply.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("warden-mcp-test", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.elicitations.fetch_add(1, Ordering::SeqCst);
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Err(ErrorData::invalid_params(
                "expected a form elicitation",
                None,
            ));
        };
        assert!(message.contains(crate::fake::APPROVAL_ID), "{message}");
        Ok(self
            .reply
            .clone()
            .expect("elicitation capability not declared"))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }
}

/// A connected client and what keeps its server alive.
pub(crate) struct Session {
    pub(crate) client: RunningService<RoleClient, TestClient>,
    pub(crate) handler: TestClient,
    _http: Option<HttpServer>,
}

impl Session {
    pub(crate) async fn connect(kind: Kind, backend: Arc<Fake>, handler: TestClient) -> Self {
        match kind {
            Kind::Stdio => {
                let (client_io, server_io) = tokio::io::duplex(64 * 1024);
                tokio::spawn(warden_mcp::serve_io(backend, tokio::io::split(server_io)));
                let client = handler
                    .clone()
                    .serve(client_io)
                    .await
                    .expect("stdio handshake");
                Self {
                    client,
                    handler,
                    _http: None,
                }
            }
            Kind::Http => {
                let server = warden_mcp::serve_http(backend, "127.0.0.1:0".parse().unwrap())
                    .await
                    .expect("bind");
                let transport = StreamableHttpClientTransport::from_uri(server.url());
                let client = handler
                    .clone()
                    .serve(transport)
                    .await
                    .expect("http handshake");
                Self {
                    client,
                    handler,
                    _http: Some(server),
                }
            }
        }
    }

    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ServiceError> {
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object");
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        tokio::time::timeout(Duration::from_secs(10), self.client.call_tool(params))
            .await
            .expect("call timed out")
    }
}

/// The text of a result's first content block.
pub(crate) fn text(result: &CallToolResult) -> &str {
    result
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|text| text.text.as_str())
        .expect("a text content block")
}
