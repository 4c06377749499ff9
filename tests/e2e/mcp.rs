//! A real MCP client (rmcp's) spawning `warden serve` over stdio.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use warden_tests::{FakeGitHub, Warden};

/// A client that approves every elicitation once and counts them.
#[derive(Clone, Default)]
struct ApprovingClient {
    elicitations: Arc<AtomicUsize>,
}

impl ClientHandler for ApprovingClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("e2e", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.elicitations.fetch_add(1, Ordering::SeqCst);
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({ "decision": "approve_once" })))
    }
}

async fn serve(
    warden: &Warden,
    client: ApprovingClient,
) -> RunningService<RoleClient, ApprovingClient> {
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let transport = TokioChildProcess::new(command).expect("warden serve starts");
    client
        .serve(transport)
        .await
        .expect("MCP handshake with warden serve")
}

async fn call(
    client: &RunningService<RoleClient, ApprovingClient>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("object arguments")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .expect("tools/call")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_lists_the_tools_and_calls_echo_and_github() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);

    let handler = ApprovingClient::default();
    let client = serve(&warden, handler.clone()).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"echo_echo") && names.contains(&"github_create_issue"),
        "{names:?}"
    );
    let create = tools
        .iter()
        .find(|t| t.name == "github_create_issue")
        .unwrap();
    let hints = create.annotations.as_ref().expect("annotations");
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.read_only_hint, Some(false));
    let echo = tools.iter().find(|t| t.name == "echo_echo").unwrap();
    assert_eq!(
        echo.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert!(echo.output_schema.is_some());
    // The effective trust the host gave the package, not what it asked for.
    let meta = &echo.meta.as_ref().expect("_meta").0;
    assert_eq!(meta["warden/trust"], "first_party");
    assert_eq!(meta["warden/provenance"], "bundled");

    let echoed = call(
        &client,
        "echo_echo",
        json!({ "text": "mcp", "transform": "upper" }),
    )
    .await;
    assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
    assert_eq!(
        echoed.structured_content,
        Some(json!({ "text": "MCP", "chars": 3 }))
    );
    assert_eq!(
        handler.elicitations.load(Ordering::SeqCst),
        0,
        "echo is ungated for the model"
    );

    // The model's origin gates GitHub reads; the client approves through elicitation.
    let repo = call(
        &client,
        "github_get_repo",
        json!({ "owner": "octo", "repo": "hello" }),
    )
    .await;
    assert_ne!(repo.is_error, Some(true), "{repo:?}");
    assert_eq!(
        repo.structured_content.as_ref().unwrap()["full_name"],
        "octo/hello"
    );
    assert_eq!(handler.elicitations.load(Ordering::SeqCst), 1);
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);

    let unknown = call(
        &client,
        "github_get_repo",
        json!({ "owner": "octo", "repo": "hello", "extra": 1 }),
    )
    .await;
    assert_eq!(
        unknown.is_error,
        Some(true),
        "unknown fields are refused before any approval: {unknown:?}"
    );
    assert_eq!(handler.elicitations.load(Ordering::SeqCst), 1);
    client.cancel().await.expect("close");
}
