//! Authentication of the streamable HTTP endpoint: refused without it off
//! loopback; with a bearer token, a request without the right token never
//! reaches MCP and is answered `401` with a `WWW-Authenticate` challenge.

use std::net::SocketAddr;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warden_mcp::{BearerToken, Error, HttpAuth, HttpConfig, MCP_PATH};

use crate::{client::TestClient, fake::Fake};

const TOKEN: &str = "tok-7f3a9c1e5b2d4f6a8c0e2b4d6f8a0c2e";

fn with_token() -> HttpConfig {
    HttpConfig::default().with_auth(HttpAuth::Bearer(BearerToken::new(TOKEN).unwrap()))
}

/// An MCP `initialize` POSTed by hand with `authorization` (if any): the
/// status and the `WWW-Authenticate` header of the answer.
async fn initialize(addr: SocketAddr, authorization: Option<&str>) -> (u16, Option<String>) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    })
    .to_string();
    let auth = authorization
        .map(|value| format!("Authorization: {value}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = Vec::new();
    // The head is enough; an SSE answer may stay open.
    let mut buf = [0u8; 4096];
    while !response.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        response.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&response);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    let challenge = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("www-authenticate")
            .then(|| value.trim().to_owned())
    });
    (status, challenge)
}

#[tokio::test]
async fn serving_off_loopback_without_authentication_is_refused() {
    let refused = warden_mcp::serve_http(Fake::new(), "0.0.0.0:0".parse().unwrap()).await;
    assert!(
        matches!(refused, Err(Error::Unauthenticated { .. })),
        "{refused:?}"
    );
    // With a token it serves, and still only to callers that present it.
    let server =
        warden_mcp::serve_http_with(Fake::new(), "0.0.0.0:0".parse().unwrap(), with_token())
            .await
            .expect("serves with a token");
    let addr = SocketAddr::from(([127, 0, 0, 1], server.local_addr().port()));
    assert_eq!(initialize(addr, None).await.0, 401);
    assert_eq!(
        initialize(addr, Some(&format!("Bearer {TOKEN}"))).await.0,
        200
    );
}

#[tokio::test]
async fn only_the_configured_bearer_token_gets_through() {
    let server =
        warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), with_token())
            .await
            .expect("bind");
    let addr = server.local_addr();

    let (status, challenge) = initialize(addr, None).await;
    assert_eq!(status, 401);
    assert_eq!(challenge.as_deref(), Some(r#"Bearer realm="warden""#));
    for wrong in [
        format!("Bearer {TOKEN}0"),
        format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
        "Bearer ".to_owned() + &"x".repeat(TOKEN.len()),
    ] {
        let (status, challenge) = initialize(addr, Some(&wrong)).await;
        assert_eq!(status, 401, "{wrong}");
        assert!(
            challenge
                .as_deref()
                .is_some_and(|c| c.contains(r#"error="invalid_token""#)),
            "{wrong}: {challenge:?}"
        );
    }
    // The token in another scheme is not a bearer token.
    assert_eq!(
        initialize(addr, Some(&format!("Basic {TOKEN}"))).await.0,
        401
    );

    // A real client with the token lists and calls tools.
    let config = StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(TOKEN);
    let client = TestClient::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("handshake with the token");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"));
    // Without it, the same client cannot even start.
    let refused = TestClient::default()
        .serve(StreamableHttpClientTransport::from_uri(server.url()))
        .await;
    assert!(refused.is_err(), "no token, no session");
    client.cancel().await.expect("close");
}
