//! The lane against a real MCP server: rmcp's streamable-HTTP server over
//! HTTPS, as `mcp.example.com` through a resolver override.

use std::time::Duration;

use serde_json::{Value, json};
use warden_egress::testing::{TestResponse, TestServer};
use warden_hosted::{CatalogBoundError, HostedError, HostedServer, LaneLimits};
use warden_tests::fake_mcp::MCP_TOKEN;
use warden_tests::rmcp_mcp::{Catalog, HOST, RmcpServer};

use crate::support::{egress_with, limits, spec};

async fn start(catalog: Catalog, limits: LaneLimits) -> (RmcpServer, HostedServer) {
    let rmcp = RmcpServer::start(catalog).await;
    let egress = egress_with(rmcp.ca(), rmcp.resolver(), &[HOST]);
    let server = HostedServer::new(egress, &spec(8), limits).unwrap();
    (rmcp, server)
}

/// Whether a refusal is the expected one.
type Expected = fn(&CatalogBoundError) -> bool;

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

fn initializes(rmcp: &RmcpServer) -> usize {
    rmcp.received()
        .iter()
        .filter(|r| r.method == "POST" && r.header("mcp-session-id").is_none())
        .count()
}

#[tokio::test]
async fn lists_and_calls_one_session_with_the_credential_only_at_the_endpoint() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    let catalog = server.catalog().await.unwrap();
    let names: Vec<&str> = catalog.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "weather"]);
    let out = server.call("echo", json!({"text": "hi"})).await.unwrap();
    let json = out.to_json();
    let text = json["content"][0]["text"].as_str().unwrap();
    // The server got the token; what came back has it redacted.
    assert!(text.starts_with("hi (auth: Bearer "), "{text}");
    assert!(
        text.contains("[REDACTED]") && !text.contains(MCP_TOKEN),
        "{text}"
    );
    server.call("echo", json!({"text": "again"})).await.unwrap();
    // Asserted on the server: every request went to the endpoint path with
    // the token, and one session served them all.
    let received = rmcp.received();
    assert!(!received.is_empty());
    for request in &received {
        assert_eq!(request.path, "/mcp", "{request:?}");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {MCP_TOKEN}").as_str())
        );
    }
    assert_eq!(initializes(&rmcp), 1);
    assert_eq!(rmcp.session_count().await, 1);
    let ids: Vec<_> = received
        .iter()
        .filter_map(|r| r.header("mcp-session-id"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");
    assert_eq!(rmcp.calls(), 2);
}

#[tokio::test]
async fn structured_output_is_returned_and_checked_against_the_output_schema() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    let out = server
        .call("weather", json!({"city": "Oslo"}))
        .await
        .map(|o| o.to_json());
    // Called before any listing: no schema known yet, the output passes.
    assert_eq!(out.unwrap(), json!({"city": "Oslo", "celsius": 21}));
    rmcp.catalog(|c| {
        c.tools
            .push(json!({"name": "liar", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}}}));
    });
    server.refresh().await.unwrap();
    let out = server.call("weather", json!({"city": "Oslo"})).await;
    assert_eq!(out.unwrap().to_json()["celsius"], 21);
    match server.call("liar", json!({})).await {
        Err(HostedError::OutputSchema(reason)) => assert!(reason.contains("celsius"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_tool_error_comes_back_sanitized() {
    let (_rmcp, server) = start(Catalog::default(), limits()).await;
    match server.call("fail", json!({})).await {
        Err(HostedError::Remote(text)) => {
            assert!(text.contains("the tool failed"), "{text}");
            assert!(!text.chars().any(char::is_control), "{text:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn pages_are_followed_and_each_bound_refuses_the_whole_catalog() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    rmcp.catalog(|c| {
        c.tools = (0..7).map(|i| tool(&format!("t{i}"))).collect();
        c.page_size = 2;
    });
    let first = server.refresh().await.unwrap();
    assert_eq!(first.len(), 7);
    let nested = (0..40).fold(
        json!({"type": "string"}),
        |inner, _| json!({"type": "object", "properties": {"a": inner}}),
    );
    let cases: Vec<(Vec<Value>, Expected)> = vec![
        ((0..9).map(|i| tool(&format!("t{i}"))).collect(), |e| {
            matches!(e, CatalogBoundError::TooManyTools { max: 8 })
        }),
        (vec![tool(&"n".repeat(129))], |e| {
            matches!(e, CatalogBoundError::NameTooLong { max: 128 })
        }),
        (vec![json!({"name": "deep", "inputSchema": nested})], |e| {
            matches!(e, CatalogBoundError::SchemaTooDeep { max: 32, .. })
        }),
        (
            (0..4)
                .map(|i| {
                    json!({"name": format!("big{i}"), "inputSchema": {"type": "object",
                        "description": "x".repeat(600 << 10)}})
                })
                .collect(),
            |e| matches!(e, CatalogBoundError::ResponseTooLarge { .. }),
        ),
    ];
    for (tools, expected) in cases {
        rmcp.catalog(|c| {
            c.tools = tools;
            c.page_size = 100;
        });
        match server.refresh().await {
            Err(HostedError::Discovery(bound)) => assert!(expected(&bound), "{bound:?}"),
            other => panic!("{other:?}"),
        }
        // All or nothing: the previous catalog stays.
        assert_eq!(server.current().unwrap(), first);
    }
}

#[tokio::test]
async fn a_session_dropped_by_the_server_is_opened_again() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    server.call("echo", json!({"text": "one"})).await.unwrap();
    rmcp.drop_sessions().await;
    assert_eq!(rmcp.session_count().await, 0);
    let out = server.call("echo", json!({"text": "two"})).await.unwrap();
    assert!(
        out.to_json()["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("two")
    );
    assert_eq!(initializes(&rmcp), 2);
    assert_eq!(rmcp.session_count().await, 1);
}

/// The redirect's target is a live server this egress can reach (resolved
/// to it, its loopback address allowed, its certificate trusted): only the
/// lane's refusal keeps the call, and its token, from arriving there.
#[tokio::test]
async fn a_redirect_off_the_endpoint_is_refused_and_nothing_reaches_its_target() {
    const ELSEWHERE: &str = "collect.example.net";
    let rmcp = RmcpServer::start(Catalog::default()).await;
    let elsewhere = TestServer::start(rmcp.ca(), &[ELSEWHERE], |_| TestResponse::ok("{}"))
        .await
        .unwrap();
    let resolver = rmcp.resolver().with_socket(ELSEWHERE, [elsewhere.addr()]);
    let egress = egress_with(rmcp.ca(), resolver, &[HOST, ELSEWHERE]);
    let server = HostedServer::new(egress, &spec(8), limits()).unwrap();
    server.catalog().await.unwrap();
    rmcp.redirect_to(Some("https://collect.example.net/mcp"));
    let called = server.call("echo", json!({"text": "hi"})).await;
    assert!(
        elsewhere.requests().is_empty(),
        "the redirect was followed: {:?}",
        elsewhere
            .requests()
            .iter()
            .map(|r| (r.server_name.clone(), r.target.clone()))
            .collect::<Vec<_>>()
    );
    match called {
        Err(HostedError::Redirect { status: 307 }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(rmcp.calls(), 0);
}

#[tokio::test]
async fn a_catalog_older_than_the_refresh_interval_is_listed_again() {
    let lists = |rmcp: &RmcpServer| rmcp.received().len();
    // A long interval: the change is not seen, nothing is sent.
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    server.catalog().await.unwrap();
    rmcp.catalog(|c| c.tools.push(tool("added")));
    let before = lists(&rmcp);
    assert_eq!(server.catalog().await.unwrap().len(), 2);
    assert!(!server.is_stale());
    assert_eq!(lists(&rmcp), before);
    // An interval that has passed: the next use lists again.
    let eager = LaneLimits {
        refresh_interval: Duration::ZERO,
        ..limits()
    };
    let (rmcp, server) = start(Catalog::default(), eager).await;
    assert_eq!(server.catalog().await.unwrap().len(), 2);
    rmcp.catalog(|c| c.tools.push(tool("added")));
    assert!(server.is_stale());
    let names: Vec<String> = server
        .catalog()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["echo", "weather", "added"]);
}

/// Announce `tools/list_changed` until `server` hears it (bounded): the
/// client opens its event stream after initializing.
async fn announce_until_heard(rmcp: &RmcpServer, server: &HostedServer) {
    let mut changes = server.changes();
    let heard = async {
        loop {
            rmcp.notify_list_changed().await;
            if tokio::time::timeout(Duration::from_millis(200), changes.changed())
                .await
                .is_ok()
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), heard)
        .await
        .expect("list_changed reaches the lane");
}

/// A refresh dropped midway (its caller cancelled: a call timed out, a
/// follower was stopped) had already cleared the mark an announcement left,
/// so the next use kept the old catalog until the refresh interval.
#[tokio::test]
async fn a_refresh_dropped_midway_leaves_the_catalog_stale() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    assert_eq!(server.catalog().await.unwrap().len(), 2);
    rmcp.catalog(|c| c.tools.push(tool("added")));
    announce_until_heard(&rmcp, &server).await;
    // Polled once (the listing is sent), then dropped.
    let dropped = tokio::time::timeout(Duration::ZERO, server.refresh()).await;
    assert!(dropped.is_err(), "the listing was under way");
    assert!(server.is_stale());
    assert_eq!(server.catalog().await.unwrap().len(), 3);
}

/// Two listings at once: the answer to the one begun earlier, arriving
/// last, replaced the newer catalog with the older one.
#[tokio::test]
async fn a_listing_begun_earlier_never_replaces_a_newer_one() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    assert_eq!(server.catalog().await.unwrap().len(), 2);
    let (rmcp, server) = (&rmcp, &server);
    let held = rmcp.hold_next_listing();
    let earlier = server.refresh();
    let later = async move {
        held.entered().await;
        rmcp.catalog(|c| c.tools.push(tool("added")));
        // The earlier listing is released while the later one runs (or
        // waits for its turn).
        let release = async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            held.release();
        };
        tokio::join!(server.refresh(), release).0
    };
    let (earlier, later) = tokio::join!(earlier, later);
    assert_eq!(earlier.unwrap().len(), 2);
    assert_eq!(later.unwrap().len(), 3);
    assert_eq!(
        server.current().unwrap().len(),
        3,
        "the newer listing stays"
    );
}

#[tokio::test]
async fn list_changed_on_the_servers_event_stream_marks_the_catalog_stale() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    assert_eq!(server.catalog().await.unwrap().len(), 2);
    rmcp.catalog(|c| c.tools.push(tool("added")));
    announce_until_heard(&rmcp, &server).await;
    assert!(server.is_stale());
    let names: Vec<String> = server
        .catalog()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["echo", "weather", "added"]);
    // The stream was a GET through egress, with the credential, at the endpoint.
    let stream = rmcp
        .received()
        .into_iter()
        .find(|r| r.method == "GET")
        .expect("the event stream was opened");
    assert_eq!(stream.path, "/mcp");
    assert_eq!(
        stream.header("authorization"),
        Some(format!("Bearer {MCP_TOKEN}").as_str())
    );
    assert_eq!(stream.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn a_server_echoing_the_token_in_any_encoding_gets_nothing_through() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    // A small answer, and one past the size where the redactor switches
    // from per-form searchers to its automaton.
    for pad in [0, 80_000] {
        let out = server.call("leak", json!({ "pad": pad })).await.unwrap();
        let text = out.to_json().to_string();
        for form in warden_tests::rmcp_mcp::leaked_forms(MCP_TOKEN) {
            assert!(!text.contains(&form), "pad {pad}: {form} came back");
        }
        assert!(text.contains("[REDACTED]"), "pad {pad}");
    }
    assert_eq!(rmcp.calls(), 2, "the server got the calls (and the token)");
}

/// Calls answered as event streams (rmcp answers every `tools/call` so)
/// share one connection: each one opened its own, a TLS handshake per call.
/// (A call may start before the end of the stream before it was read in the
/// background: one connection more is allowed.)
#[tokio::test]
async fn calls_answered_as_streams_reuse_one_connection() {
    let (rmcp, server) = start(Catalog::default(), limits()).await;
    server.call("echo", json!({"text": "first"})).await.unwrap();
    let after_first = rmcp.connections();
    for _ in 0..5 {
        server.call("echo", json!({"text": "again"})).await.unwrap();
    }
    let opened = rmcp.connections() - after_first;
    assert!(opened <= 1, "{opened} connections for 5 calls");
}
