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
    serve_with(warden, client, &[]).await
}

async fn serve_with(
    warden: &Warden,
    client: ApprovingClient,
    args: &[&str],
) -> RunningService<RoleClient, ApprovingClient> {
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve").args(args);
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

/// `component prepared` lines of `warden_runtime`'s debug log for `component`.
fn prepared(log: &str, component: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            l.contains("component prepared") && l.contains(&format!("component={component} "))
        })
        .map(str::to_owned)
        .collect()
}

/// The first call comes right after the handshake, long before the
/// background warm-up can have compiled echo's optimized code (a debug
/// build's Cranelift, at `nice` 10, after its Winch code): it waits for echo
/// and gets the baseline code.
#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread")]
async fn a_cold_servers_first_call_runs_baseline_code_until_the_optimized_code_lands() {
    let warden = crate::warden();
    let log_path = warden.data_dir().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve").env("RUST_LOG", "warden_runtime=debug");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(log)
        .spawn()
        .expect("warden serve starts");
    let client = ApprovingClient::default()
        .serve(transport)
        .await
        .expect("MCP handshake with warden serve");
    let result = call(&client, "echo_echo", json!({ "text": "cold" })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    // Calls keep working while the optimized code lands and after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let lines = loop {
        let result = call(&client, "echo_echo", json!({ "text": "again" })).await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        let lines = prepared(&std::fs::read_to_string(&log_path).unwrap(), "echo");
        if lines.iter().any(|l| l.contains("cache=External")) {
            break lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no optimized code for echo: {lines:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(lines[0].contains("cache=Baseline"), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    client.cancel().await.unwrap();
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

/// `packages/echo` as package `bigecho`, whose tool declares a 128 MiB
/// memory limit, in `dir`.
fn big_echo(dir: &std::path::Path) {
    let echo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages/echo");
    for sub in ["schemas/echo", "prompts/echo", "wasm"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for file in [
        "schemas/echo/echo.input.v1.json",
        "schemas/echo/echo.output.v1.json",
        "prompts/echo/echo.md",
        "wasm/echo.wasm",
    ] {
        std::fs::copy(echo.join(file), dir.join(file)).unwrap();
    }
    let manifest = std::fs::read_to_string(echo.join("manifest.toml"))
        .unwrap()
        .replace(r#"id = "echo""#, r#"id = "bigecho""#)
        .replace(r#"id = "echo.echo""#, r#"id = "bigecho.echo""#)
        .replace(
            r#"loop_run = "ungated""#,
            r#"loop_run = "gated_unless_granted""#,
        );
    let manifest = format!(
        "{manifest}\n[tools.resource_profile]\ndefault_estimate = {{}}\nhard_ceiling = {{ sandbox = {{ memory_bytes = {} }} }}\n",
        128 << 20
    );
    std::fs::write(dir.join("manifest.toml"), manifest).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_refuses_a_tool_whose_memory_limit_exceeds_the_budget() {
    let warden = crate::warden();
    let refused = warden.run(&["serve", "--memory-budget", "1MiB"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.all().contains("--memory-budget"), "{refused:?}");

    let package = tempfile::tempdir().unwrap();
    big_echo(package.path());
    let installed = warden.run(&["install", package.path().to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");

    let client = serve_with(
        &warden,
        ApprovingClient::default(),
        &["--memory-budget", "64MiB"],
    )
    .await;
    let big = call(&client, "bigecho_echo", json!({ "text": "big" })).await;
    assert_eq!(big.is_error, Some(true), "{big:?}");
    let shown = format!("{big:?}");
    assert!(shown.contains("memory_budget_exceeded"), "{shown}");
    assert!(
        shown.contains("134217728"),
        "names the tool's limit: {shown}"
    );
    // Calls that fit still run.
    let echoed = call(&client, "echo_echo", json!({ "text": "small" })).await;
    assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
    client.cancel().await.ok();
}
