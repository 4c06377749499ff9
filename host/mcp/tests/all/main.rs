//! The MCP server end to end: rmcp's client against a fake backend, over the
//! stdio transport (a duplex pipe) and over streamable HTTP on 127.0.0.1.

mod auth;
mod client;
mod fake;

use std::{sync::atomic::Ordering, time::Duration};

use rmcp::{
    model::{ElicitResult, ElicitationAction, ErrorCode},
    service::ServiceError,
};
use serde_json::{Value, json};
use warden_mcp::{APPROVAL_REQUIRED, ApprovalAnswer, META_APPROVAL_ID, META_ERROR_CODE};

use crate::{
    client::{Kind, Session, TestClient, text},
    fake::{APPROVAL_ID, Fake},
};

/// Runs one async test body over both transports.
macro_rules! both_transports {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn stdio() {
                super::$name(super::Kind::Stdio).await;
            }
            #[tokio::test]
            async fn http() {
                super::$name(super::Kind::Http).await;
            }
        }
    )*};
}

both_transports!(
    lists_tools_with_schemas_and_annotations,
    echo_returns_structured_content,
    content_blocks_arrive_as_blocks,
    a_failing_tool_is_an_error_result_with_its_code,
    an_unknown_tool_is_a_protocol_error,
    approval_through_elicitation_resumes_the_call_once,
    a_declined_elicitation_denies,
    approval_without_elicitation_returns_the_approval_id,
    a_tool_change_notifies_the_client,
    requests_over_the_limits_are_answered_and_serving_goes_on,
);

async fn lists_tools_with_schemas_and_annotations(kind: Kind) {
    let session = Session::connect(kind, Fake::new(), TestClient::default()).await;
    let info = session.client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("warden")
    );
    let list_changed = info
        .capabilities
        .tools
        .as_ref()
        .and_then(|t| t.list_changed);
    assert_eq!(list_changed, Some(true));

    let tools = session.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["echo", "fail", "write", "picture"]);

    let echo = &tools[0];
    assert_eq!(echo.title.as_deref(), Some("Echo"));
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    let output = echo
        .output_schema
        .as_ref()
        .expect("echo has an output schema");
    assert_eq!(output["properties"]["text"]["type"], "string");
    let hints = echo.annotations.as_ref().expect("annotations");
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));
    assert_eq!(hints.open_world_hint, Some(false));
    assert_eq!(hints.idempotent_hint, Some(true));

    let write = tools[2].annotations.as_ref().expect("annotations");
    assert_eq!(write.read_only_hint, Some(false));
    assert_eq!(write.destructive_hint, Some(true));
    assert_eq!(write.open_world_hint, Some(true));
    assert!(tools[1].output_schema.is_none());
}

async fn echo_returns_structured_content(kind: Kind) {
    let session = Session::connect(kind, Fake::new(), TestClient::default()).await;
    let result = session
        .call("echo", json!({"text": "hi"}))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(json!({"text": "hi"})));
    assert_eq!(text(&result), r#"{"text":"hi"}"#);
    // The next call on the same connection still works.
    let again = session
        .call("echo", json!({"text": "again"}))
        .await
        .expect("call");
    assert_eq!(again.structured_content, Some(json!({"text": "again"})));
}

/// An image stays an image block (its bytes, media type and annotations
/// intact), a link a link; no structured content without an output schema.
async fn content_blocks_arrive_as_blocks(kind: Kind) {
    let session = Session::connect(kind, Fake::new(), TestClient::default()).await;
    let result = session.call("picture", json!({})).await.expect("call");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, None);
    let blocks: Vec<Value> = result
        .content
        .iter()
        .map(|b| serde_json::to_value(b).unwrap())
        .collect();
    assert_eq!(
        blocks,
        [
            json!({"type": "text", "text": "a picture"}),
            json!({"type": "image", "mimeType": "image/png", "data": "iVBORw==",
                "annotations": {"audience": ["user"]}}),
            json!({"type": "resource_link", "uri": "file:///p.png", "name": "p.png"}),
        ]
    );
}

async fn a_failing_tool_is_an_error_result_with_its_code(kind: Kind) {
    let session = Session::connect(kind, Fake::new(), TestClient::default()).await;
    let result = session
        .call("fail", json!({}))
        .await
        .expect("a result, not a protocol error");
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).starts_with("[operation-failed] "),
        "{}",
        text(&result)
    );
    let meta = result.meta.as_ref().expect("_meta");
    assert_eq!(meta[META_ERROR_CODE], "operation-failed");
    assert!(result.structured_content.is_none());
}

async fn an_unknown_tool_is_a_protocol_error(kind: Kind) {
    let session = Session::connect(kind, Fake::new(), TestClient::default()).await;
    match session.call("nope", json!({})).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert!(error.message.contains("nope"), "{}", error.message);
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

async fn approval_through_elicitation_resumes_the_call_once(kind: Kind) {
    let backend = Fake::new();
    let approve = ElicitResult::new(ElicitationAction::Accept)
        .with_content(json!({"decision": "approve_once"}));
    let session = Session::connect(kind, backend.clone(), TestClient::answering(approve)).await;
    let result = session
        .call("write", json!({"text": "x"}))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"written": true})));
    assert_eq!(session.handler.elicitations.load(Ordering::SeqCst), 1);
    assert_eq!(
        backend.resolved(),
        [(APPROVAL_ID.to_owned(), ApprovalAnswer::ApproveOnce)]
    );
}

async fn a_declined_elicitation_denies(kind: Kind) {
    let backend = Fake::new();
    let decline = ElicitResult::new(ElicitationAction::Decline);
    let session = Session::connect(kind, backend.clone(), TestClient::answering(decline)).await;
    let result = session
        .call("write", json!({"text": "x"}))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).starts_with("[denied] "), "{}", text(&result));
    assert_eq!(
        backend.resolved(),
        [(APPROVAL_ID.to_owned(), ApprovalAnswer::Deny)]
    );
}

async fn approval_without_elicitation_returns_the_approval_id(kind: Kind) {
    let backend = Fake::new();
    let session = Session::connect(kind, backend.clone(), TestClient::default()).await;
    let result = session
        .call("write", json!({"text": "x"}))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(true));
    let message = text(&result);
    assert!(
        message.starts_with(&format!("[{APPROVAL_REQUIRED}] ")),
        "{message}"
    );
    assert!(message.contains(APPROVAL_ID), "{message}");
    assert!(
        message.contains("warden approvals approve appr-7"),
        "{message}"
    );
    let meta = result.meta.as_ref().expect("_meta");
    assert_eq!(meta[META_APPROVAL_ID], APPROVAL_ID);
    assert_eq!(meta[META_ERROR_CODE], APPROVAL_REQUIRED);
    assert_eq!(session.handler.elicitations.load(Ordering::SeqCst), 0);
    assert!(
        backend.resolved().is_empty(),
        "nothing is resolved without a person"
    );
}

async fn a_tool_change_notifies_the_client(kind: Kind) {
    let backend = Fake::new();
    let session = Session::connect(kind, backend.clone(), TestClient::default()).await;
    assert_eq!(
        session
            .client
            .list_all_tools()
            .await
            .expect("tools/list")
            .len(),
        4
    );
    // The server starts watching once it has handled `initialized`, which the
    // client sends without waiting: tick until a notification arrives.
    // Bounded by seconds in all (a loaded machine can take a while to
    // start the watch), not by a count of short tries.
    let mut notified = false;
    let waited = std::time::Instant::now();
    for attempt in 0.. {
        if waited.elapsed() > Duration::from_secs(30) {
            break;
        }
        backend.add_tool(&format!("later{attempt}"));
        let wait = session.handler.list_changed.notified();
        if tokio::time::timeout(Duration::from_millis(100), wait)
            .await
            .is_ok()
        {
            notified = true;
            break;
        }
    }
    assert!(notified, "no notifications/tools/list_changed arrived");
    let tools = session.client.list_all_tools().await.expect("tools/list");
    assert!(
        tools.iter().any(|tool| tool.name == "later0"),
        "the cached list was refreshed"
    );
}

#[tokio::test]
async fn stdio_serving_ends_when_the_client_hangs_up() {
    use rmcp::ServiceExt;

    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(warden_mcp::serve_io(
        Fake::new(),
        tokio::io::split(server_io),
    ));
    let client = TestClient::default()
        .serve(client_io)
        .await
        .expect("handshake");
    client.cancel().await.expect("client closes");
    let served = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server stops after the client leaves")
        .expect("server task");
    assert!(served.is_ok(), "{served:?}");
}

#[tokio::test]
async fn http_serves_only_the_mcp_path_and_shuts_down() {
    let server = warden_mcp::serve_http(Fake::new(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    let addr = server.local_addr();
    assert!(server.url().ends_with(warden_mcp::MCP_PATH));
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let status = raw_get(&mut stream, "/elsewhere").await;
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    server.shutdown().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the listener is closed after shutdown"
    );
}

async fn raw_get(stream: &mut tokio::net::TcpStream, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
}

/// Arguments nested `levels` deep: `{"text": "x", "deep": [[[...]]]}`.
fn nested(levels: usize) -> serde_json::Value {
    let deep: serde_json::Value =
        serde_json::from_str(&format!("{}{}", "[".repeat(levels), "]".repeat(levels)))
            .unwrap_or_else(|_| {
                // serde_json cannot parse past its limit: build the value by hand.
                let mut value = json!([]);
                for _ in 1..levels {
                    value = json!([value]);
                }
                value
            });
    json!({ "text": "x", "deep": deep })
}

async fn requests_over_the_limits_are_answered_and_serving_goes_on(kind: Kind) {
    let session = Session::connect(kind, Fake::new(), TestClient::default()).await;
    // Deeper than serde_json parses: answered with a parse error, not dropped.
    match session.call("echo", nested(200)).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::PARSE_ERROR, "{error:?}");
            assert!(error.message.contains("127 levels"), "{}", error.message);
        }
        other => panic!("expected a JSON-RPC parse error, got {other:?}"),
    }
    // Larger than 16 MiB: answered with an invalid-request error.
    let huge = json!({ "text": "y".repeat(17 << 20) });
    match session.call("echo", huge).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_REQUEST, "{error:?}");
            assert!(error.message.contains("larger than"), "{}", error.message);
        }
        other => panic!("expected a JSON-RPC invalid request error, got {other:?}"),
    }
    // Within the limits, nesting is fine and the server still serves.
    let result = session.call("echo", nested(100)).await.expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(
        text(&result).contains(r#""deep":[[[["#),
        "{}",
        text(&result)
    );
}
