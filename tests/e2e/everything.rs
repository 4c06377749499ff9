//! Issue 44's acceptance with real third-party software on both sides of
//! Warden: `@modelcontextprotocol/server-everything` (Node, streamable
//! HTTP, behind a TLS front as `mcp.example.com`) registered with `warden
//! mcp add`, and an rmcp client of `warden serve` that declares
//! elicitation and sampling and approves each call through its own
//! elicitation. An image arrives as an image block, a 15 s operation
//! completes with its progress relayed, the server's elicitation is
//! answered by the client and its sampling request reaches the client.

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use warden_tests::everything::{Everything, URL};

/// The MCP client: approves Warden's prompts, fills in the remote
/// server's form, answers its sampling request, keeps its progress.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<f64>>>,
    forms: Arc<Mutex<Vec<String>>>,
    sampled: Arc<Mutex<u32>>,
}

impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}, "sampling": {}})).unwrap();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("e2e", "1"))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let asked = serde_json::to_value(&request).unwrap();
        let message = asked["message"].as_str().unwrap_or_default().to_owned();
        let content = if message.starts_with("Approve this tool call?") {
            json!({"decision": "approve_once"})
        } else {
            json!({"name": "Grace Hopper"})
        };
        self.forms.lock().unwrap().push(message);
        Ok(serde_json::from_value(json!({"action": "accept", "content": content})).unwrap())
    }

    #[expect(
        deprecated,
        reason = "sampling is still what servers of 2025-11-25 use"
    )]
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        *self.sampled.lock().unwrap() += 1;
        Ok(
            serde_json::from_value(json!({"role": "assistant", "model": "e2e-model",
            "content": {"type": "text", "text": "a sampled answer"}}))
            .unwrap(),
        )
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }
}

fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|b| b.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_through_warden_serve_keeps_content_progress_and_requests() {
    let everything = Everything::start().await;
    let warden = crate::warden();
    everything.configure(&warden);
    crate::hosted::add_and_refresh(&warden, "everything", URL);
    let client = Client::default();
    let (session, tools) = crate::hosted::serve_with(&warden, client.clone()).await;
    let name = |remote: &str| crate::hosted::tool_named(&tools, remote);
    let call = |tool: String, arguments: Value| {
        let session = &session;
        async move {
            let request = CallToolRequestParams::new(tool)
                .with_arguments(arguments.as_object().cloned().unwrap_or_default());
            let result = session.call_tool(request).await.unwrap();
            assert_ne!(result.is_error, Some(true), "{result:?}");
            result
        }
    };

    // An image arrives as an image block.
    let image = call(name("get-tiny-image"), json!({})).await;
    let blocks: Vec<Value> = image
        .content
        .iter()
        .map(|b| serde_json::to_value(b).unwrap())
        .collect();
    let png = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block: {blocks:?}"));
    assert_eq!(png["mimeType"], "image/png");
    assert!(
        png["data"].as_str().is_some_and(|d| d.starts_with("iVBOR")),
        "{png}"
    );

    // A 15 s operation completes, its progress relayed as it goes.
    let long = call(
        name("trigger-long-running-operation"),
        json!({"duration": 15, "steps": 5}),
    )
    .await;
    assert!(
        texts(&long).contains("Long running operation completed"),
        "{long:?}"
    );
    crate::hosted::until("five progress reports", || {
        client.progress.lock().unwrap().len() >= 5
    })
    .await;
    assert_eq!(*client.progress.lock().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0]);

    // The server's form is answered by this client.
    let form = call(name("trigger-elicitation-request"), json!({})).await;
    assert!(texts(&form).contains("Grace Hopper"), "{form:?}");
    assert!(
        client
            .forms
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.starts_with("Please provide inputs")),
        "the remote form reached the client"
    );

    // Its sampling request reaches this client's model.
    let sampled = call(
        name("trigger-sampling-request"),
        json!({"prompt": "Say something", "maxTokens": 20}),
    )
    .await;
    assert!(texts(&sampled).contains("a sampled answer"), "{sampled:?}");
    assert_eq!(*client.sampled.lock().unwrap(), 1);
    session.cancel().await.unwrap();
}
