//! `packages/web-access` against a fake Exa MCP endpoint.

use serde_json::{Value, json};
use warden_egress::testing::{RecordedRequest, TestResponse};

use crate::{Fixture, body};

fn rpc(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn exa(request: &RecordedRequest) -> TestResponse {
    if request.method != "POST" || request.target != "/mcp" {
        return TestResponse::status(404);
    }
    let message = body(request);
    let id = &message["id"];
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => TestResponse::json(&rpc(
            id,
            json!({
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "exa", "version": "1"}}),
        ))
        .with_header("mcp-session-id", "sess-1"),
        "notifications/initialized" => TestResponse::status(202),
        "tools/call" => {
            let arguments = &message["params"]["arguments"];
            match message["params"]["name"].as_str().unwrap_or_default() {
                // As an event stream, as Streamable HTTP servers may answer.
                "web_search_exa" => {
                    let found = format!(
                        "Title: Rust async\nURL: https://blog.test/async\nText: About {}\n---\n\
                         Title: Tokio\nURL: https://tokio.test\nHighlights:\nRuntime docs",
                        arguments["query"].as_str().unwrap_or_default()
                    );
                    let event = format!("event: message\ndata: {}\n\n", rpc(id, text(&found)));
                    TestResponse::ok(event).with_header("content-type", "text/event-stream")
                }
                "web_fetch_exa" => {
                    let url = arguments["urls"][0].as_str().unwrap_or_default();
                    if url == "https://huge.test/" {
                        return TestResponse::json(&rpc(id, text(&"x".repeat(3 << 20))));
                    }
                    let pages = format!("# Async in Rust\nURL: {url}\n\nFutures are lazy.");
                    TestResponse::json(&rpc(id, text(&pages)))
                }
                _ => TestResponse::json(&json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32602, "message": "unknown tool"}})),
            }
        }
        _ => TestResponse::status(400),
    }
}

async fn fixture() -> Fixture {
    Fixture::start("web-access", None, &["mcp.exa.ai"], exa).await
}

#[tokio::test(flavor = "multi_thread")]
async fn search_and_read_go_through_exas_mcp_endpoint() {
    let web = fixture().await;
    let found = web
        .call(
            "web-access.search",
            json!({"query": "async rust", "domains": ["blog.test"], "recency": "month", "num_results": 2}),
        )
        .await
        .unwrap();
    let results = &found["queries"][0]["results"];
    assert_eq!(found["queries"][0]["query"], "async rust");
    assert_eq!(results[0]["url"], "https://blog.test/async");
    assert_eq!(
        results[0]["snippet"],
        "About async rust site:blog.test past month"
    );
    assert_eq!(results[1]["snippet"], "Runtime docs");

    let read = web
        .call(
            "web-access.get_content",
            json!({"url": "https://blog.test/async"}),
        )
        .await
        .unwrap();
    assert_eq!(
        read["contents"],
        json!([{"title": "Async in Rust", "url": "https://blog.test/async", "content": "Futures are lazy."}])
    );

    let requests = web.server.requests();
    assert_eq!(requests.len(), 6, "initialize, initialized, call: twice");
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            request.header("authorization"),
            None,
            "no credential goes to Exa"
        );
        let session = request.header("mcp-session-id");
        assert_eq!(session, (i % 3 != 0).then_some("sess-1"), "request {i}");
    }
    let call = body(&requests[2]);
    assert_eq!(call["params"]["name"], "web_search_exa");
    assert_eq!(call["params"]["arguments"]["numResults"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_call_may_not_read_or_fetch_is_refused() {
    let web = fixture().await;
    // Past the package's 2 MiB egress cap.
    let huge = web
        .call(
            "web-access.get_content",
            json!({"url": "https://huge.test/"}),
        )
        .await
        .unwrap_err();
    assert!(
        huge.message().contains("byte") || huge.message().contains("limit"),
        "{huge}"
    );
    // An address with credentials in it is not sent anywhere.
    let before = web.server.requests().len();
    let refused = web
        .call(
            "web-access.get_content",
            json!({"url": "https://user:pw@intranet.test/"}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        warden_core::ErrorCode::InvalidInput,
        "{refused}"
    );
    assert_eq!(web.server.requests().len(), before);
    // The schema: one of query or queries.
    let nothing = web.call("web-access.search", json!({})).await.unwrap_err();
    assert_eq!(
        nothing.code(),
        warden_core::ErrorCode::InvalidInput,
        "{nothing}"
    );
}
