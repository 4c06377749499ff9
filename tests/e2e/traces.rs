//! `warden serve --otlp-endpoint`: a call is exported over OTLP/HTTP as a
//! span tree (the call; its authorization, its lane's run and, under the
//! lane, each egress request) under the trace context the MCP client sent
//! in `_meta`, to a receiver that decodes the protobuf.

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, RequestMetaObject};
use rmcp::service::RunningService;
use serde_json::{Value, json};
use warden_tests::FakeGitHub;
use warden_tests::otlp::OtlpReceiver;

use crate::stateless::{approval_id, client};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

async fn get_repo(client: &RunningService<RoleClient, ()>, traced: bool) -> CallToolResult {
    let Value::Object(arguments) = json!({ "owner": "octo", "repo": "hello" }) else {
        unreachable!("object literal")
    };
    let mut params = CallToolRequestParams::new("github_get_repo").with_arguments(arguments);
    if traced {
        let meta = json!({
            "traceparent": format!("00-{TRACE}-{CALLER_SPAN}-01"),
            "tracestate": "caller=1",
        });
        params.meta = Some(serde_json::from_value::<RequestMetaObject>(meta).unwrap());
    }
    client.call_tool(params).await.expect("tools/call")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_is_a_span_tree_under_the_callers_trace() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);
    let receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint();
    let (_serving, port) = warden.serve_http_with_env(
        "127.0.0.1:0",
        &["--otlp-endpoint", &endpoint],
        // Batches go out every 100 ms (the standard SDK variable).
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    let client = client(port).await;
    // Approve, then call again: the second call runs, under our trace.
    let asked = approval_id(&get_repo(&client, false).await).expect("an approval id");
    let approved = warden.run(&["approvals", "approve", &asked]);
    assert_eq!(approved.code, 0, "{approved:?}");
    let ran = get_repo(&client, true).await;
    assert_ne!(ran.is_error, Some(true), "{ran:?}");

    let within = Duration::from_secs(30);
    let call = receiver.wait_for(TRACE, "warden.call", within).await;
    assert_eq!(call.parent_span_id, CALLER_SPAN, "{call:?}");
    assert_eq!(call.service, "warden");
    assert_eq!(call.attributes["warden.capability"], "github.get_repo");
    assert_eq!(call.attributes["warden.outcome"], "ok");
    assert_eq!(call.attributes["warden.lane"], "wasm");
    assert_eq!(call.attributes["warden.origin"], "loop_run");
    let authorize = receiver.wait_for(TRACE, "warden.authorize", within).await;
    assert_eq!(authorize.parent_span_id, call.span_id);
    assert_eq!(authorize.attributes["warden.decision"], "approved");
    let lane = receiver.wait_for(TRACE, "warden.lane", within).await;
    assert_eq!(lane.parent_span_id, call.span_id);
    let egress = receiver.wait_for(TRACE, "warden.egress", within).await;
    assert_eq!(egress.parent_span_id, lane.span_id, "{egress:?}");
    assert_eq!(egress.attributes["warden.target"], "api.github.com");
    assert_eq!(egress.attributes["http.response.status_code"], "200");
    // No attribute carries the input, the answer or the account's token.
    for span in receiver.spans() {
        for value in span.attributes.values() {
            for never in ["octo", "hello", warden_tests::TOKEN] {
                assert!(!value.contains(never), "`{never}` in {span:?}");
            }
        }
    }
    let _ = client.cancel().await;
}
