//! `warden serve --metrics`: a real Prometheus scrapes the host and PromQL
//! over what it scraped counts the calls the test made; the same text is
//! served at `/metrics` on the MCP endpoint, behind its authentication.

use std::net::SocketAddr;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use warden_tests::prometheus::Target;
use warden_tests::{FakeGitHub, TestPrometheus};

use crate::serve_auth::{send, serve_on};

const TOKEN: &str = "e2e-metrics-token-7c6a180b36896a0a8c02787eeafb0e4c";

async fn client(port: u16) -> RunningService<RoleClient, ()> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{port}/mcp"))
            .auth_header(TOKEN);
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.expect("initialize over HTTP")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, arguments: Value) -> bool {
    let Value::Object(arguments) = arguments else {
        panic!("object arguments")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .expect("tools/call");
    result.is_error != Some(true)
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_scrapes_the_calls_the_test_made() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);
    let token_file = warden.data_dir().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let metrics_at = free_addr();
    let (_serving, port) = serve_on(
        &warden,
        "127.0.0.1:0",
        &[
            "--auth-token-file",
            token_file.to_str().unwrap(),
            "--metrics",
            &metrics_at.to_string(),
        ],
    );
    let client = client(port).await;
    for n in 0..3 {
        let text = format!("private input {n}");
        let ran = call(&client, "echo_echo", json!({ "text": text })).await;
        assert!(ran, "echo_echo ran");
    }
    // Reading a repository from the model waits for a person.
    let arguments = json!({ "owner": "octo", "repo": "private-repo-name" });
    assert!(!call(&client, "github_get_repo", arguments).await);

    let prometheus = TestPrometheus::start(&[
        Target {
            job: "warden".into(),
            addr: metrics_at,
            path: "/metrics".into(),
            bearer: None,
        },
        // The endpoint's own `/metrics`, scraped with the callers' token.
        Target {
            job: "endpoint".into(),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            path: "/metrics".into(),
            bearer: Some(TOKEN.into()),
        },
    ]);
    let within = Duration::from_secs(60);
    prometheus.wait_for(
        r#"sum(warden_calls_total{job="warden",capability="echo.echo",outcome="ok"})"#,
        3.0,
        within,
    );
    prometheus.wait_for(
        r#"sum(warden_calls_total{job="endpoint",outcome="approval_required"})"#,
        1.0,
        within,
    );
    prometheus.wait_for(
        r#"sum(warden_approvals_pending{job="warden"})"#,
        1.0,
        within,
    );
    prometheus.wait_for(r#"sum(warden_mcp_sessions{job="endpoint"})"#, 1.0, within);
    prometheus.wait_for(
        r#"sum(warden_authorizations_total{decision="needs_approval",job="warden"})"#,
        1.0,
        within,
    );

    // Without the token the endpoint's metrics are refused; the text never
    // holds what the calls carried.
    let refused = send(port, "GET", "/metrics", None, "");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let answered = get(metrics_at, &metrics_at.to_string());
    assert!(answered.contains("warden_calls_total"), "{answered}");
    // A page whose own name was pointed at 127.0.0.1 (DNS rebinding) is
    // not answered; a loopback name is.
    let rebound = get(
        metrics_at,
        &format!("attacker.example:{}", metrics_at.port()),
    );
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    let named = get(metrics_at, &format!("localhost:{}", metrics_at.port()));
    assert!(named.starts_with("HTTP/1.1 200"), "{named}");
    for never in ["private input", "private-repo-name", TOKEN] {
        assert!(!answered.contains(never), "`{never}` in\n{answered}");
    }
    let _ = client.cancel().await;
}

/// `GET /metrics` on the metrics listener naming `host`, the whole answer.
fn get(addr: SocketAddr, host: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn metrics_over_stdio_need_an_address_of_their_own() {
    let warden = crate::warden();
    let refused = warden.run(&["serve", "--metrics"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.stderr.contains("an address of its own"),
        "{refused:?}"
    );
}
