//! Authentication of the streamable HTTP endpoint: refused without it off
//! loopback; with a bearer token, a request without the right token never
//! reaches MCP and is answered `401` with a `WWW-Authenticate` challenge.

use std::net::SocketAddr;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
use serde_json::{Value, json};
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
    initialize_as(addr, &addr.to_string(), authorization).await
}

/// [`initialize`] with `host` as the `Host` header.
async fn initialize_as(
    addr: SocketAddr,
    host: &str,
    authorization: Option<&str>,
) -> (u16, Option<String>) {
    let (status, challenge, _) = exchange_as(addr, host, "POST", MCP_PATH, authorization).await;
    (status, challenge)
}

/// One request sent by hand: the status, the `WWW-Authenticate` header and
/// what was read of the body.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    authorization: Option<&str>,
) -> (u16, Option<String>, String) {
    exchange_as(addr, &addr.to_string(), method, path, authorization).await
}

/// [`exchange`] with `host` as the `Host` header.
async fn exchange_as(
    addr: SocketAddr,
    host: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
) -> (u16, Option<String>, String) {
    let body = initialize_body();
    let auth = authorization
        .map(|value| format!("Authorization: {value}\r\n"))
        .unwrap_or_default();
    let body = if method == "POST" {
        body
    } else {
        String::new()
    };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, head) = answer_to(addr, &request).await;
    let challenge = header(&head, "www-authenticate");
    let body = head
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, challenge, body)
}

/// Send `request` to `addr`: the answer's status, and its head with what
/// came with it (an SSE answer may stay open).
async fn answer_to(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    while !response.windows(4).any(|w| w == b"\r\n\r\n") || response.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        response.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&response).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    (status, head)
}

/// The value of header `name` in `head`.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (found, value) = line.split_once(':')?;
        found
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

/// Off loopback the endpoint never serves without authentication. Bound to
/// every address, it accepted only loopback `Host` names (and `0.0.0.0`,
/// which no client sends): it started, and answered every remote client
/// `403`. It now refuses to start without the name clients use, and serves
/// that name, to callers that present the token.
#[tokio::test]
async fn off_loopback_it_needs_a_token_and_the_host_named_for_it() {
    let refused = warden_mcp::serve_http(Fake::new(), "0.0.0.0:0".parse().unwrap()).await;
    assert!(
        matches!(refused, Err(Error::Unauthenticated { .. })),
        "{refused:?}"
    );
    let refused =
        warden_mcp::serve_http_with(Fake::new(), "0.0.0.0:0".parse().unwrap(), with_token()).await;
    assert!(
        matches!(refused, Err(Error::NoAllowedHost { .. })),
        "{refused:?}"
    );
    let server = warden_mcp::serve_http_with(
        Fake::new(),
        "0.0.0.0:0".parse().unwrap(),
        with_token().allow_host("mcp.example.com"),
    )
    .await
    .expect("serves");
    let addr = SocketAddr::from(([127, 0, 0, 1], server.local_addr().port()));
    assert_eq!(initialize(addr, None).await.0, 401);
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(initialize(addr, Some(&bearer)).await.0, 200);
    let port = addr.port();
    for host in [
        "mcp.example.com".to_owned(),
        format!("mcp.example.com:{port}"),
    ] {
        assert_eq!(
            initialize_as(addr, &host, Some(&bearer)).await.0,
            200,
            "{host}"
        );
    }
    // GETs: refused before any body is read (a refused POST's unread body
    // may reset the connection before its answer is read).
    for host in ["0.0.0.0".to_owned(), format!("elsewhere.example:{port}")] {
        let (status, _, _) = exchange_as(addr, &host, "GET", MCP_PATH, Some(&bearer)).await;
        assert_eq!(status, 403, "{host}");
    }
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

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://warden.test/mcp";

/// A local OAuth issuer: one ES256 key, tokens signed on demand.
type Issuer = warden_tests::jwt_issuer::JwtIssuer;

#[tokio::test]
async fn jwt_access_tokens_are_checked_and_the_metadata_is_public() {
    let issuer = Issuer::new(ISSUER);
    let jwt =
        warden_mcp::JwtAuth::new(ISSUER, AUDIENCE, &issuer.jwks(), vec!["mcp".into()]).unwrap();
    let config = HttpConfig::default().with_auth(HttpAuth::Jwt(jwt));
    let server = warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    let addr = server.local_addr();
    let metadata_url = "https://warden.test/.well-known/oauth-protected-resource";

    let (status, _, body) = exchange(addr, "GET", warden_mcp::METADATA_PATH, None).await;
    assert_eq!(status, 200);
    let metadata: serde_json::Value = serde_json::from_str(&body).expect("metadata JSON");
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));

    let (status, challenge) = initialize(addr, None).await;
    assert_eq!(status, 401);
    assert!(
        challenge
            .as_deref()
            .is_some_and(|c| c.contains(&format!(r#"resource_metadata="{metadata_url}""#))),
        "{challenge:?}"
    );
    for (what, token) in [
        ("expired", issuer.bearer(AUDIENCE, "mcp", -3600)),
        (
            "other audience",
            issuer.bearer("https://other.test/mcp", "mcp", 300),
        ),
        (
            "other issuer's key",
            Issuer::new(ISSUER).bearer(AUDIENCE, "mcp", 300),
        ),
    ] {
        let (status, challenge) = initialize(addr, Some(&token)).await;
        assert_eq!(status, 401, "{what}");
        assert!(
            challenge
                .as_deref()
                .is_some_and(|c| c.contains(r#"error="invalid_token""#)),
            "{what}: {challenge:?}"
        );
    }
    let (status, challenge) = initialize(addr, Some(&issuer.bearer(AUDIENCE, "openid", 300))).await;
    assert_eq!(status, 403);
    assert!(
        challenge
            .as_deref()
            .is_some_and(|c| c.contains(r#"error="insufficient_scope", scope="mcp""#)),
        "{challenge:?}"
    );
    let good = issuer.bearer(AUDIENCE, "openid mcp", 300);
    assert_eq!(initialize(addr, Some(&good)).await.0, 200);
}

#[tokio::test]
async fn the_token_subject_reaches_the_backend_as_the_caller() {
    let issuer = Issuer::new(ISSUER);
    let jwt = warden_mcp::JwtAuth::new(ISSUER, AUDIENCE, &issuer.jwks(), vec![]).unwrap();
    let fake = Fake::new();
    let config = HttpConfig::default().with_auth(HttpAuth::Jwt(jwt));
    let server = warden_mcp::serve_http_with(fake.clone(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    let token = issuer.bearer(AUDIENCE, "", 300);
    let config = StreamableHttpClientTransportConfig::with_uri(server.url())
        .auth_header(token.trim_start_matches("Bearer "));
    let client = TestClient::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("handshake with a JWT");
    let Value::Object(arguments) = json!({"text": "hi"}) else {
        unreachable!()
    };
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .expect("tools/call");
    assert_eq!(result.structured_content, Some(json!({"text": "hi"})));
    assert_eq!(*fake.callers.lock().unwrap(), [Some("alice".to_owned())]);
    client.cancel().await.expect("close");
}

/// One request by hand, its session id (if any) and its token: the status
/// and the `mcp-session-id` the answer names.
async fn in_session(
    addr: SocketAddr,
    method: &str,
    session: Option<&str>,
    authorization: &str,
    body: &str,
) -> (u16, Option<String>) {
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {MCP_PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: {authorization}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\n{session}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, head) = answer_to(addr, &request).await;
    (status, header(&head, "mcp-session-id"))
}

/// A JWT-authenticated server with sessions, and two of its callers.
struct Callers {
    server: warden_mcp::HttpServer,
    /// `Authorization` values of `alice` and `bob`.
    alice: String,
    bob: String,
    /// An `initialize` request body.
    init: String,
    /// Their tokens' issuer.
    issuer: Issuer,
}

async fn two_callers() -> Callers {
    let issuer = Issuer::new(ISSUER);
    let jwt = warden_mcp::JwtAuth::new(ISSUER, AUDIENCE, &issuer.jwks(), vec![]).unwrap();
    let config = HttpConfig::default()
        .with_auth(HttpAuth::Jwt(jwt))
        .with_sessions(warden_mcp::Sessions::All);
    let server = warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    Callers {
        server,
        alice: issuer.bearer_for("alice", AUDIENCE, "", 300),
        bob: issuer.bearer_for("bob", AUDIENCE, "", 300),
        init: initialize_body(),
        issuer,
    }
}

/// An `initialize` request body.
fn initialize_body() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    })
    .to_string()
}

/// A session is its opener's: another caller with a valid token and the
/// session's id is told it does not exist, and cannot end it. Before, the
/// id alone was enough to post into the session (answer its approval
/// prompts), read its stream or end it.
#[tokio::test]
async fn a_session_serves_only_the_caller_that_opened_it() {
    let Callers {
        server,
        alice,
        bob,
        init,
        ..
    } = two_callers().await;
    let addr = server.local_addr();
    let (status, session) = in_session(addr, "POST", None, &alice, &init).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let as_bob = in_session(addr, "POST", Some(&session), &bob, INITIALIZED).await;
    assert_eq!(as_bob.0, 404, "bob posts into alice's session");
    let as_bob = in_session(addr, "DELETE", Some(&session), &bob, "").await;
    assert_eq!(as_bob.0, 404, "bob ends alice's session");
    let as_alice = in_session(addr, "POST", Some(&session), &alice, INITIALIZED).await;
    assert_eq!(as_alice.0, 202);
    let as_alice = in_session(addr, "POST", Some(&session), &alice, list).await;
    assert_eq!(as_alice.0, 200, "alice's session is still there");
    let as_bob = in_session(addr, "GET", Some(&session), &bob, "").await;
    assert_eq!(as_bob.0, 404, "bob reads alice's event stream");
}

/// One caller holds at most 64 live sessions (each is a task until it ends
/// or idles out): opening another ends its oldest (whose client is told it
/// is gone); another caller's are not touched. Before, one token opened
/// sessions without end.
#[tokio::test]
async fn a_caller_holds_a_bounded_number_of_sessions() {
    let Callers {
        server,
        alice,
        bob,
        init,
        ..
    } = two_callers().await;
    let addr = server.local_addr();
    let mut sessions = Vec::new();
    for _ in 0..64 {
        let (status, session) = in_session(addr, "POST", None, &alice, &init).await;
        assert_eq!(status, 200);
        sessions.push(session.expect("a session id"));
    }
    let (status, bobs) = in_session(addr, "POST", None, &bob, &init).await;
    assert_eq!(status, 200);
    let (status, newest) = in_session(addr, "POST", None, &alice, &init).await;
    assert_eq!(status, 200);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let in_oldest = in_session(addr, "POST", Some(&sessions[0]), &alice, list).await;
    assert_eq!(in_oldest.0, 404, "the oldest was ended");
    for (session, token) in [
        (&sessions[1], &alice),
        (&newest.unwrap(), &alice),
        (&bobs.unwrap(), &bob),
    ] {
        let status = in_session(addr, "POST", Some(session), token, INITIALIZED)
            .await
            .0;
        assert_eq!(status, 202, "{session} is still open");
    }
}

/// A client that sends part of a request head and then nothing is cut off
/// once the head's time (10 s) is up, before anyone authenticated it,
/// instead of holding its connection for ever.
#[tokio::test]
async fn a_trickled_request_head_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = warden_mcp::serve_http(Fake::new(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    let mut stream = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        stream.read_to_end(&mut rest),
    )
    .await;
    assert!(read.is_ok(), "the server still holds the connection");
    // Cut off: closed without an answer (an answer, of any status, would
    // mean the head was taken as a request).
    assert!(
        rest.is_empty(),
        "answered: {}",
        String::from_utf8_lossy(&rest)
    );
}

/// A body sent slower than its time allows is answered `408` and its
/// connection closed; before, a head with a `Content-Length` and a body
/// that never came held the connection for ever.
#[tokio::test]
async fn a_trickled_request_body_is_cut_off() {
    use std::time::Duration;
    let config = with_token().with_body_timeout(Duration::from_millis(500));
    let server = warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    let addr = server.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the server still holds the connection");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// At the connection cap, before any authentication, a further client is
/// not served while the open connections stay open (it waits in the listen
/// backlog), and is served once one of them closes.
#[tokio::test]
async fn connections_past_the_cap_wait_until_one_closes() {
    use std::time::Duration;
    let config = HttpConfig::default().with_max_connections(2);
    let server = warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    let addr = server.local_addr();
    let connect = || tokio::net::TcpStream::connect(addr);
    // Accepted first (the backlog is in connection order), and left idle.
    let mut idle = vec![connect().await.unwrap(), connect().await.unwrap()];
    let mut third = connect().await.unwrap();
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    third.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    // On loopback an answer comes in well under this while there is room.
    let early =
        tokio::time::timeout(Duration::from_millis(300), third.read_to_end(&mut answer)).await;
    assert!(
        early.is_err(),
        "served past the cap: {}",
        String::from_utf8_lossy(&answer)
    );

    drop(idle.pop());
    // Under the 10 s after which hyper closes the idle connections itself:
    // only the closed one's slot can serve the third in time.
    tokio::time::timeout(Duration::from_secs(5), third.read_to_end(&mut answer))
        .await
        .expect("served once a connection closed")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}

/// One peer held every connection slot (each for the 10 s hyper gives a
/// request head) before authenticating: past its share a peer's further
/// connection is closed at once, while another peer is still served.
#[tokio::test]
async fn a_peer_past_its_share_of_connections_is_closed_and_others_are_served() {
    use std::time::Duration;
    let config = HttpConfig::default()
        .with_max_connections(8)
        .with_max_connections_per_peer(2);
    let server = warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    let addr = server.local_addr();
    let from = |source: &'static str| async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        socket.connect(addr).await.unwrap()
    };
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let _idle = [from("127.0.0.1").await, from("127.0.0.1").await];
    let mut third = from("127.0.0.1").await;
    let _ = third.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), third.read_to_end(&mut answer))
        .await
        .expect("closed, not held");
    assert!(
        closed.is_err() || answer.is_empty(),
        "served past the peer's share: {}",
        String::from_utf8_lossy(&answer)
    );

    let mut other = from("127.0.0.2").await;
    other.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), other.read_to_end(&mut answer))
        .await
        .expect("another peer is served")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}

/// The SDK checks the allowed hosts against the first `Host` line only: a
/// second line, or an absolute-form target whose authority nobody checked,
/// named a host the check never saw. Both are answered 400 (RFC 9112 §3.2)
/// before anything else. Shown with DELETE on a live session: before, each
/// such request ended the session.
#[tokio::test]
async fn a_request_naming_two_hosts_is_refused() {
    let server = warden_mcp::serve_http(Fake::new(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind");
    let addr = server.local_addr();
    let good = addr.to_string();
    let bearer = "Bearer none";
    let init = initialize_body();
    let (status, session) = in_session(addr, "POST", None, bearer, &init).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let end = |target: String, hosts: String| {
        let request = format!(
            "DELETE {target} HTTP/1.1\r\n{hosts}Mcp-Session-Id: {session}\r\n\
             MCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
        );
        async move { answer_to(addr, &request).await.0 }
    };
    let two_lines = format!("Host: {good}\r\nHost: elsewhere.example\r\n");
    assert_eq!(end(MCP_PATH.into(), two_lines).await, 400, "two Host lines");
    let one = format!("Host: {good}\r\n");
    let absolute = format!("http://elsewhere.example{MCP_PATH}");
    assert_eq!(
        end(absolute, one.clone()).await,
        400,
        "an absolute-form target naming another host"
    );
    let alive = || in_session(addr, "POST", Some(&session), bearer, INITIALIZED);
    assert_eq!(alive().await.0, 202, "the session was not ended");
    let absolute = format!("http://{good}{MCP_PATH}");
    let ended = end(absolute, one).await;
    // Issue 44: 202 made the Python SDK log a failed termination.
    assert_eq!(ended, 200, "an ended session is answered 200");
    assert_eq!(alive().await.0, 404, "a target naming the Host ends it");
}

/// An event stream is one request that can stay open for hours, and its
/// token was checked once, when it opened: it now ends when that token is
/// no longer accepted (the client reconnects with the token it has then).
/// Before, a stream opened with a token about to expire stayed open.
#[tokio::test]
async fn an_event_stream_ends_when_the_token_that_opened_it_expires() {
    let Callers {
        server,
        alice: lasting,
        issuer,
        ..
    } = two_callers().await;
    let addr = server.local_addr();
    let session = initialized_session(addr, &lasting).await;
    // Accepted for two more seconds (expired, within the leeway).
    let leeway = warden_mcp::LEEWAY_SECS;
    let ending = issuer.bearer_for("alice", AUDIENCE, "", 2 - leeway);
    let mut stream = open_event_stream(addr, &session, &ending).await;
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("the stream ended")
    .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("text/event-stream"), "{answer}");
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A session opened and initialized by the caller with `authorization`.
async fn initialized_session(addr: SocketAddr, authorization: &str) -> String {
    let (status, session) = in_session(addr, "POST", None, authorization, &initialize_body()).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let (status, _) = in_session(addr, "POST", Some(&session), authorization, INITIALIZED).await;
    assert_eq!(status, 202);
    session
}

/// The connection of a `GET` event stream on `session`, its request sent.
async fn open_event_stream(
    addr: SocketAddr,
    session: &str,
    authorization: &str,
) -> tokio::net::TcpStream {
    let request = format!(
        "GET {MCP_PATH} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Authorization: {authorization}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Mcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    stream
}

/// The issuer's current key set, as an operator's JWKS file or `jwks_uri`
/// would serve it.
#[derive(Debug)]
struct Published(std::sync::Mutex<String>);

#[async_trait::async_trait]
impl warden_mcp::JwksSource for Published {
    async fn fetch(&self) -> Result<String, String> {
        Ok(self.0.lock().unwrap().clone())
    }
}

/// Issue 42: an event stream was checked once, when it opened, so it
/// outlived the withdrawal of its token's signing key (a revocation): it now
/// ends at the first periodic check after the key left the issuer's set,
/// while a stream whose token stays good stays open.
#[tokio::test]
async fn an_event_stream_ends_when_the_key_of_its_token_is_withdrawn() {
    let old = Issuer::with_kid(ISSUER, "k1");
    let new = Issuer::with_kid(ISSUER, "k2");
    let published = std::sync::Arc::new(Published(std::sync::Mutex::new(old.jwks())));
    let jwt = warden_mcp::JwtAuth::new(ISSUER, AUDIENCE, &old.jwks(), vec![])
        .unwrap()
        .with_rotation(published.clone())
        .with_stream_recheck(std::time::Duration::from_millis(100));
    let config = HttpConfig::default()
        .with_auth(HttpAuth::Jwt(jwt))
        .with_sessions(warden_mcp::Sessions::All);
    let server = warden_mcp::serve_http_with(Fake::new(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("bind");
    let addr = server.local_addr();
    let alice = old.bearer_for("alice", AUDIENCE, "", 3600);
    let session = initialized_session(addr, &alice).await;
    let mut stream = open_event_stream(addr, &session, &alice).await;
    let mut answer = Vec::new();
    // Several checks pass while the key is published: the stream stays open.
    let open = tokio::time::timeout(
        std::time::Duration::from_millis(800),
        stream.read_to_end(&mut answer),
    )
    .await;
    assert!(open.is_err(), "a stream whose token is good stays open");

    // The issuer rotates: k1 is withdrawn, and a token signed with k2 makes
    // the server fetch the keys again.
    *published.0.lock().unwrap() = new.jwks();
    let rotated = new.bearer_for("carol", AUDIENCE, "", 3600);
    assert_eq!(
        in_session(addr, "POST", None, &rotated, &initialize_body())
            .await
            .0,
        200
    );
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        stream.read_to_end(&mut answer),
    )
    .await;
    assert!(
        matches!(ended, Ok(Ok(_))),
        "the stream of the withdrawn key's token ended"
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // A new request with the old token is refused.
    assert_eq!(
        in_session(addr, "POST", Some(&session), &alice, INITIALIZED)
            .await
            .0,
        401
    );
}
