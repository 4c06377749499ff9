//! Listing, calling, sessions, credentials and the endpoint lock.

use serde_json::json;
use warden_egress::testing::{TestResponse, TestServer};
use warden_hosted::{HostedError, HostedServer};
use warden_tests::fake_mcp::{FakeMcp, MCP_HOST, MCP_TOKEN, Script};

use crate::support::{egress, egress_with, lane, limits, spec};

#[tokio::test]
async fn lists_and_calls_with_the_credential_injected_and_redacted() {
    let (fake, server) = lane(Script {
        require_token: true,
        ..Script::default()
    })
    .await;
    let catalog = server.catalog().await.unwrap();
    let names: Vec<&str> = catalog.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "weather"]);
    let out = server.call("echo", json!({"text": "hi"})).await.unwrap();
    let json = out.to_json();
    let text = json["content"][0]["text"].as_str().unwrap();
    // The server saw the token; what comes back has it redacted.
    assert!(text.starts_with("hi (auth: Bearer "), "{text}");
    assert!(!text.contains(MCP_TOKEN), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    // Every request reached the endpoint path with the token, and one session served them all.
    let requests = fake.requests();
    assert!(requests.iter().all(|r| r.target == "/mcp"));
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some(&format!("Bearer {MCP_TOKEN}")))
    );
    let methods = fake.methods();
    assert_eq!(methods.iter().filter(|m| *m == "initialize").count(), 1);
    assert!(
        requests
            .iter()
            .skip(1)
            .all(|r| r.header("mcp-session-id") == Some("session-1"))
    );
    assert!(
        requests
            .iter()
            .skip(1)
            .all(|r| r.header("mcp-protocol-version") == Some("2025-06-18")),
        "protocol header on every request after initialize"
    );
}

#[tokio::test]
async fn structured_output_is_checked_against_the_output_schema() {
    let (_fake, server) = lane(Script::default()).await;
    let mut script_tools = Script::default().tools;
    script_tools.push(json!({"name": "liar", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}}}));
    _fake.script(|s| s.tools = script_tools);
    server.catalog().await.unwrap();
    let out = server
        .call("weather", json!({"city": "Oslo"}))
        .await
        .unwrap();
    assert_eq!(out.to_json(), json!({"celsius": 21.5}));
    let error = server.call("liar", json!({})).await.unwrap_err();
    assert!(matches!(error, HostedError::OutputSchema(_)), "{error}");
}

#[tokio::test]
async fn a_remote_tool_error_is_sanitized() {
    let (_fake, server) = lane(Script::default()).await;
    let error = server.call("fail", json!({})).await.unwrap_err();
    let HostedError::Remote(text) = &error else {
        panic!("{error:?}")
    };
    assert!(!text.contains('\u{0007}'), "{text:?}");
    assert!(text.len() <= 300);
}

#[tokio::test]
async fn a_session_dropped_by_the_server_is_reinitialized() {
    let (fake, server) = lane(Script::default()).await;
    server.call("weather", json!({})).await.unwrap();
    fake.drop_sessions();
    let out = server.call("weather", json!({})).await.unwrap();
    assert_eq!(out.to_json()["celsius"], 21.5);
    let methods = fake.methods();
    assert_eq!(
        methods.iter().filter(|m| *m == "initialize").count(),
        2,
        "{methods:?}"
    );
    let last = fake.requests().pop().unwrap();
    assert_eq!(last.header("mcp-session-id"), Some("session-2"));
}

#[tokio::test]
async fn list_changed_from_the_server_refreshes_the_catalog() {
    let (fake, server) = lane(Script::default()).await;
    assert_eq!(server.catalog().await.unwrap().len(), 2);
    let mut changes = server.changes();
    fake.script(|s| {
        s.notify_list_changed = true;
        s.tools
            .push(json!({"name": "later", "inputSchema": {"type": "object"}}));
    });
    server.call("weather", json!({})).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed())
        .await
        .expect("list_changed arrives")
        .unwrap();
    let catalog = server.catalog().await.unwrap();
    assert!(catalog.iter().any(|t| t.name == "later"));
}

/// A server that ends its event stream at once and asks to be reconnected
/// at once (`retry: 0`) gets its stream reopened ever later, not in a loop.
/// The openings are counted against what the spacing allows in the time
/// that actually passed (a loaded machine lets more pass, and allows more),
/// not within a window a loaded machine overruns; a loop opens hundreds.
/// The spacing's own schedule is tested with an injected clock in
/// `transport.rs`.
#[tokio::test]
async fn an_event_stream_ended_at_once_is_not_reopened_in_a_loop() {
    let (fake, server) = lane(Script {
        event_stream: Some("retry: 0\n\n".into()),
        ..Script::default()
    })
    .await;
    // Before the session (and so its first stream) exists.
    let began = std::time::Instant::now();
    server.catalog().await.unwrap();
    let gets = || fake.requests().iter().filter(|r| r.method == "GET").count();
    let first = async {
        while gets() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), first)
        .await
        .expect("the event stream is opened");
    // Long enough for a loop to show itself.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let opened = gets();
    let passed = began.elapsed();
    assert!(
        (1..=openings_within(passed)).contains(&opened),
        "the stream was opened {opened} times in {passed:?}"
    );
    // The lane still works meanwhile.
    server.call("weather", json!({})).await.unwrap();
}

/// How many times a stream that ends at once can be opened within `passed`
/// of the first: at 0 s, then 1 s, 2 s, 4 s, ... after the one before.
fn openings_within(passed: std::time::Duration) -> usize {
    let (mut at, mut wait, mut openings) = (0, 1, 0);
    while at <= passed.as_secs() {
        openings += 1;
        at += wait;
        wait = (wait * 2).min(60);
    }
    openings
}

/// The redirect's target is reachable by this egress (resolved to a live
/// server, its loopback address allowed): only the lane's refusal keeps the
/// call from arriving there.
#[tokio::test]
async fn a_redirect_off_the_endpoint_is_refused_and_nothing_reaches_the_target() {
    const EVIL: &str = "evil.example.net";
    let fake = FakeMcp::start(Script::default()).await;
    let evil = TestServer::start(fake.ca(), &[EVIL], |_| TestResponse::ok("{}"))
        .await
        .unwrap();
    fake.script(|s| s.redirect_to = Some("https://evil.example.net/steal".into()));
    let resolver = fake
        .server()
        .resolver(&[MCP_HOST])
        .with_socket(EVIL, [evil.addr()]);
    let egress = egress_with(fake.ca(), resolver, &[MCP_HOST, EVIL]);
    let server = HostedServer::new(egress, &spec(8), limits()).unwrap();
    let error = server.call("echo", json!({"text": "x"})).await.unwrap_err();
    assert!(
        evil.requests().is_empty(),
        "the redirect was followed: {:?}",
        evil.requests()
            .iter()
            .map(|r| (r.server_name.clone(), r.target.clone()))
            .collect::<Vec<_>>()
    );
    assert!(
        matches!(error, HostedError::Redirect { status: 307 }),
        "{error:?}"
    );
    // Same-origin, other path: refused too (the path is locked).
    fake.script(|s| s.redirect_to = Some("/other".into()));
    let error = server.call("echo", json!({"text": "x"})).await.unwrap_err();
    assert!(matches!(error, HostedError::Redirect { .. }), "{error:?}");
    assert!(evil.requests().is_empty());
    assert!(fake.requests().iter().all(|r| r.target == "/mcp"));
}

#[tokio::test]
async fn a_private_address_is_refused_unless_the_host_allows_it() {
    let fake = FakeMcp::start(Script::default()).await;
    // The resolver sends the endpoint to 127.0.0.1, which this egress does not allow.
    let egress = egress(&fake, &[]);
    let egress_with_resolver = {
        let _ = egress;
        let config = warden_egress::testing::config(fake.ca(), &[]);
        warden_egress::Egress::new(
            config,
            std::sync::Arc::new(warden_egress::secrets::MemoryStore::new()),
            std::sync::Arc::new(fake.server().resolver(&[MCP_HOST])),
        )
        .unwrap()
    };
    let server = HostedServer::new(egress_with_resolver, &spec(8), limits()).unwrap();
    let error = server.catalog().await.unwrap_err();
    assert!(matches!(error, HostedError::Egress(_)), "{error:?}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_401_names_the_missing_authorization() {
    let fake = FakeMcp::start(Script {
        require_token: true,
        ..Script::default()
    })
    .await;
    let mut spec = spec(8);
    spec.credentials.clear();
    let server = HostedServer::new(egress(&fake, &[MCP_HOST]), &spec, limits()).unwrap();
    let error = server.catalog().await.unwrap_err();
    assert!(
        matches!(error, HostedError::Unauthorized { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_endpoint_that_could_widen_the_lock_is_refused() {
    let fake = FakeMcp::start(Script::default()).await;
    let mut spec = spec(8);
    spec.server = format!("https://{MCP_HOST}/mcp?x=1");
    let error = HostedServer::new(egress(&fake, &[MCP_HOST]), &spec, limits()).unwrap_err();
    assert!(matches!(error, HostedError::Endpoint { .. }), "{error:?}");
}

/// Issue 44: a server on protocol `2025-03-26` (still widely deployed) was
/// refused whole; it is spoken to. One older than that is still refused,
/// with the version named.
#[tokio::test]
async fn a_2025_03_26_server_is_spoken_to_and_an_older_one_refused() {
    let (_fake, server) = lane(Script {
        protocol_version: "2025-03-26".into(),
        ..Script::default()
    })
    .await;
    let catalog = server.catalog().await.unwrap();
    assert!(catalog.iter().any(|t| t.name == "echo"));
    let out = server.call("echo", json!({"text": "hi"})).await.unwrap();
    assert!(
        out.to_json()["content"][0]["text"].is_string(),
        "{}",
        out.to_json()
    );

    let (_fake, old) = lane(Script {
        protocol_version: "2024-11-05".into(),
        ..Script::default()
    })
    .await;
    match old.catalog().await {
        Err(HostedError::Protocol(version)) => assert_eq!(version, "2024-11-05"),
        other => panic!("{other:?}"),
    }
}

/// Issue 44: a server that is simply down was `network_denied`, which says
/// the host refused it; it is `server_unavailable`, and so is a name that
/// does not resolve. A policy refusal stays `network_denied`.
#[tokio::test]
async fn a_server_that_is_down_is_unavailable_not_denied() {
    let fake = FakeMcp::start(Script::default()).await;
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = warden_egress::resolve::OverrideResolver::new().with_socket(MCP_HOST, [closed]);
    let server = HostedServer::new(
        egress_with(fake.ca(), down, &[MCP_HOST]),
        &spec(8),
        limits(),
    )
    .unwrap();
    let error = server.catalog().await.unwrap_err();
    assert_eq!(error.code(), "server_unavailable", "{error}");

    let nowhere = warden_egress::resolve::OverrideResolver::new();
    let server = HostedServer::new(
        egress_with(fake.ca(), nowhere, &[MCP_HOST]),
        &spec(8),
        limits(),
    )
    .unwrap();
    let error = server.catalog().await.unwrap_err();
    assert_eq!(error.code(), "server_unavailable", "{error}");
}
