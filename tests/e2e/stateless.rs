//! `warden serve --http --sessions none`: two hosts on one data dir behind
//! no shared memory. A client that cannot elicit gets an approval id from
//! one host, a person approves it with the CLI, and the identical call made
//! to the *other* host runs, exactly once, even when both hosts get it at
//! the same moment.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use warden_tests::FakeGitHub;

use crate::serve_auth::{send, serve_on};

pub(crate) async fn client(port: u16) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(format!("http://127.0.0.1:{port}/mcp"));
    ().serve(transport).await.expect("initialize over HTTP")
}

pub(crate) async fn get_repo(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    let Value::Object(arguments) = json!({ "owner": "octo", "repo": "hello" }) else {
        unreachable!("object literal")
    };
    client
        .call_tool(CallToolRequestParams::new("github_get_repo").with_arguments(arguments))
        .await
        .expect("tools/call")
}

pub(crate) fn approval_id(result: &CallToolResult) -> Option<String> {
    let meta = &result.meta.as_ref()?.0;
    meta["warden/approvalId"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_stateless_hosts_share_approvals_and_dispatch_once() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);
    let (_a, port_a) = serve_on(&warden, "127.0.0.1:0", &["--sessions", "none"]);
    let (_b, port_b) = serve_on(&warden, "127.0.0.1:0", &["--sessions", "none"]);
    // No session: an initialize gets none, and a request needs none (a load
    // balancer may send any request to any host).
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let answered = send(port_a, "POST", "/mcp", None, initialize);
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(
        !answered.to_ascii_lowercase().contains("mcp-session-id"),
        "{answered}"
    );
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    let listed = send(port_b, "POST", "/mcp", None, list);
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    // A host with sessions (the default) wants one.
    let (_stateful, port_c) = serve_on(&warden, "127.0.0.1:0", &[]);
    let refused = send(port_c, "POST", "/mcp", None, list);
    assert!(!refused.starts_with("HTTP/1.1 200"), "{refused}");
    let (a, b) = (client(port_a).await, client(port_b).await);

    // Host A opens the approval; host B sees the same pending request.
    let first = approval_id(&get_repo(&a).await).expect("an approval id");
    let again = approval_id(&get_repo(&b).await).expect("an approval id");
    assert_eq!(again, first, "one pending approval across hosts");
    let approved = warden.run(&["approvals", "approve", &first]);
    assert_eq!(approved.code, 0, "{approved:?}");

    // Both hosts get the identical call at once: one claims the approval.
    let (from_a, from_b) = tokio::join!(get_repo(&a), get_repo(&b));
    let ran: Vec<&CallToolResult> = [&from_a, &from_b]
        .into_iter()
        .filter(|r| r.is_error != Some(true))
        .collect();
    assert_eq!(ran.len(), 1, "{from_a:?}\n{from_b:?}");
    assert_eq!(
        ran[0].structured_content.as_ref().expect("structured")["full_name"],
        "octo/hello"
    );
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);
    let _ = tokio::join!(a.cancel(), b.cancel());
}
