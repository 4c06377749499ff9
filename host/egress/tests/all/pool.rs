//! Connections and name lookups stay bounded whatever hosts a call reaches.

use std::sync::Arc;

use warden_core::net::CallNetwork as _;

use warden_egress::secrets::MemoryStore;
use warden_egress::testing::{self, TestCa, TestResponse, TestServer};
use warden_egress::{Egress, MAX_IDLE_CONNECTIONS};

use crate::support::{CALL, get, target};

/// Each host of a wildcard target is a pool key of its own: one connection
/// kept idle per host a call reached, never dropped while the server kept
/// it open, until the host ran out of file descriptors.
#[tokio::test]
async fn idle_connections_stay_bounded_across_hosts() {
    let hosts: Vec<String> = (0..MAX_IDLE_CONNECTIONS + 16)
        .map(|i| format!("h{i}.pool.test"))
        .collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &names, |_| TestResponse::ok("{}"))
        .await
        .unwrap();
    let origins: Vec<(&str, u16)> = names.iter().map(|h| (*h, 443)).collect();
    let egress = Egress::new(
        testing::config(&ca, &origins),
        Arc::new(MemoryStore::new()),
        Arc::new(server.resolver(&names)),
    )
    .unwrap();
    for host in &hosts {
        // A call of its own for each (a call's requests are bounded).
        let session = egress
            .session("pool.fetch", "pool", &[], &[target("*.pool.test")], 4 << 20)
            .await
            .unwrap();
        let answer = session
            .send(get(&format!("https://{host}/")), None, CALL)
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
        assert!(egress.idle_connections() <= MAX_IDLE_CONNECTIONS);
    }
    assert_eq!(egress.idle_connections(), MAX_IDLE_CONNECTIONS);
}

/// A name server that never answers.
#[derive(Debug)]
struct Silent;

impl warden_egress::resolve::Resolver for Silent {
    fn resolve<'a>(
        &'a self,
        _host: &'a str,
        _port: u16,
    ) -> warden_core::net::BoxFuture<
        'a,
        Result<Vec<std::net::SocketAddr>, warden_egress::resolve::AddressError>,
    > {
        Box::pin(std::future::pending())
    }
}

/// Resolving counts toward the connect timeout, as the configuration says:
/// a name server that never answered held the call to its whole deadline.
/// That deadline is two minutes here, the connect timeout 200 ms: the call
/// must end by the connect timeout (the bound allows it seconds more, which
/// a loaded machine keeps), and could not within the bound by the other.
#[tokio::test]
async fn a_name_server_that_never_answers_times_out_with_the_connect_timeout() {
    let ca = TestCa::new();
    let mut config = testing::config(&ca, &[]);
    let connect_timeout = std::time::Duration::from_millis(200);
    config.connect_timeout = connect_timeout;
    config.total_timeout = std::time::Duration::from_secs(120);
    let egress = Egress::new(config, Arc::new(MemoryStore::new()), Arc::new(Silent)).unwrap();
    let session = egress
        .session(
            "pool.fetch",
            "pool",
            &[],
            &[target("api.example.com")],
            4 << 20,
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let error = session
        .send(
            get("https://api.example.com/"),
            None,
            std::time::Duration::from_secs(120),
        )
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(error, warden_core::net::HttpError::Timeout);
    assert!(
        took < connect_timeout + std::time::Duration::from_secs(10),
        "{took:?}"
    );
}

/// A streamed answer (an MCP server's answer to a `tools/call` comes as an
/// event stream) gives its HTTP/1.1 connection back once read to its end,
/// or once dropped and read to its end in the background (rmcp drops an
/// answer's stream as soon as the answer is in): each one opened a
/// connection of its own, a TLS handshake per call.
#[tokio::test]
async fn a_stream_read_to_its_end_gives_its_connection_back() {
    let ca = TestCa::new();
    let host = "mcp.pool.test";
    let server = TestServer::start_http1(&ca, &[host], |request| {
        let size = if request.target.ends_with("large") {
            100 << 10
        } else {
            1
        };
        TestResponse::ok(format!("data: {}\n\n", "a".repeat(size)))
            .with_header("content-type", "text/event-stream")
    })
    .await
    .unwrap();
    let egress = Egress::new(
        testing::config(&ca, &[(host, 443)]),
        Arc::new(MemoryStore::new()),
        Arc::new(server.resolver(&[host])),
    )
    .unwrap();
    let session = egress
        .session("pool.fetch", "pool", &[], &[target(host)], 4 << 20)
        .await
        .unwrap()
        .for_host_client(&[]);
    let url = format!("https://{host}/mcp");
    for _ in 0..3 {
        let mut response = session.open_stream(get(&url), None).await.unwrap();
        let mut body = Vec::new();
        while let Some(chunk) = response.body.next_chunk().await {
            body.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(body, b"data: a\n\n");
    }
    // A plain request takes the same connection too.
    let answer = session.send(get(&url), None, CALL).await.unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(server.requests().len(), 4);
    assert_eq!(server.connections(), 1, "one connection for all four");
    // Dropped before its end: read to its end in the background, then pooled.
    drop(session.open_stream(get(&url), None).await.unwrap());
    let by = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while egress.idle_connections() == 0 && std::time::Instant::now() < by {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(egress.idle_connections(), 1, "drained and pooled");
    session.send(get(&url), None, CALL).await.unwrap();
    assert_eq!(server.connections(), 1);
    // More left than is worth reading: the connection is closed.
    drop(
        session
            .open_stream(get(&format!("{url}?large")), None)
            .await
            .unwrap(),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(egress.idle_connections(), 0, "not pooled");
    session.send(get(&url), None, CALL).await.unwrap();
    assert_eq!(server.connections(), 2);
}
