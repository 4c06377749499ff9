//! "Approve, then call again" for an MCP client that cannot elicit: it gets
//! the approval id, a person approves with the CLI, and the identical call
//! then runs exactly once — even across a restart of `warden serve`; an
//! account stored from the CLI meanwhile is used without a restart.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use warden_tests::{FakeGitHub, Warden};

/// A client without the elicitation capability (rmcp's default client).
async fn plain_client(warden: &Warden) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let transport = TokioChildProcess::new(command).expect("warden serve starts");
    ().serve(transport)
        .await
        .expect("MCP handshake with warden serve")
}

async fn get_repo(client: &RunningService<RoleClient, ()>, repo: &str) -> CallToolResult {
    let Value::Object(arguments) = json!({ "owner": "octo", "repo": repo }) else {
        unreachable!("object literal")
    };
    client
        .call_tool(CallToolRequestParams::new("github_get_repo").with_arguments(arguments))
        .await
        .expect("tools/call")
}

/// `result` is the repository `octo/hello`, fetched.
fn ran_hello(result: &CallToolResult) {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        result.structured_content.as_ref().expect("structured")["full_name"],
        "octo/hello"
    );
}

/// The approval id of a result that asks for approval.
fn approval_id(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let meta = &result.meta.as_ref().expect("_meta").0;
    assert_eq!(meta["warden/errorCode"], "approval_required", "{result:?}");
    meta["warden/approvalId"]
        .as_str()
        .expect("approval id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_elicitation_approves_with_the_cli_and_calls_again_once() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);

    let client = plain_client(&warden).await;
    let first = approval_id(&get_repo(&client, "hello").await);
    // Calling again before anyone answered waits on the same request.
    let again = approval_id(&get_repo(&client, "hello").await);
    assert_eq!(again, first, "an identical call opens no second approval");
    // The host restarts; the pending approval is in the store, not in memory.
    client.cancel().await.expect("close");
    let listed = warden.run(&["--json", "approvals", "list"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let pending: Vec<Value> = serde_json::from_value(listed.json()).expect("a list");
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["id"], first.as_str());

    let approved = warden.run(&["approvals", "approve", &first]);
    assert_eq!(approved.code, 0, "{approved:?}");
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 0);

    let client = plain_client(&warden).await;
    // A different call does not use the approval.
    let other = approval_id(&get_repo(&client, "other").await);
    assert_ne!(other, first);
    assert_eq!(fake.count("GET", "/repos/octo/other"), 0);
    // The identical call claims it and runs.
    let ran = get_repo(&client, "hello").await;
    ran_hello(&ran);
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);
    // Once: the next identical call needs a new approval.
    let next = approval_id(&get_repo(&client, "hello").await);
    assert_ne!(next, first);
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);
    client.cancel().await.expect("close");
}

/// An account stored from a terminal while `warden serve` runs (two
/// processes on one data directory and `secrets.enc`) is used by the
/// server's next call, without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_serve_uses_an_account_stored_from_the_cli_meanwhile() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let client = plain_client(&warden).await;
    // The server has read the (empty) store before the account exists.
    assert!(
        client.list_all_tools().await.expect("tools/list").len() > 1,
        "the server is up"
    );
    FakeGitHub::store_token(&warden);

    let id = approval_id(&get_repo(&client, "hello").await);
    let approved = warden.run(&["approvals", "approve", &id]);
    assert_eq!(approved.code, 0, "{approved:?}");
    let ran = get_repo(&client, "hello").await;
    ran_hello(&ran);
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);
    client.cancel().await.expect("close");
}
