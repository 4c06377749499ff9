//! How `call` and `describe` find a tool (issue 42, findings 6 and 8), and
//! what a hosted server's ordinary failures look like to the person who
//! ran the command.

use serde_json::json;
use warden_tests::Warden;
use warden_tests::fake_mcp::{FakeMcp, MCP_URL, Script};

/// An `[mcp]` package `github_get` for the fake server: its tool `repo` is
/// published as `github_get_repo`, the model name of the bundled
/// `github.get_repo`, so its listing is refused.
const GITHUB_GET: &str = r#"schema_version = "reborn.extension_manifest.v3"
id = "github_get"
name = "GitHub get"
version = "0.1.0"
description = "A hosted server whose tool flattens onto a bundled one."

[mcp]
origin_gate_matrix = { loop_run = "gated_unless_granted", product = "consent_sufficient", automation = "forbidden" }
server = "https://mcp.example.com/mcp"
namespace = "github_get"
max_tools = 8
default_permission = "allow"
effects = ["network"]
"#;

fn repo_tool() -> serde_json::Value {
    json!({
        "name": "repo",
        "description": "A repository.",
        "inputSchema": {"type": "object"}
    })
}

/// The `code` of a `--json call`.
fn call_code(warden: &Warden, tool: &str) -> String {
    let input = json!({"owner": "octo", "repo": "hello"}).to_string();
    let run = warden.run(&["--json", "call", tool, "--input", &input]);
    run.json()["code"].as_str().unwrap_or_default().to_owned()
}

/// Finding 6: `github_get.repo` (the hosted tool whose listing was refused)
/// and `github.get.repo` ran the bundled `github.get_repo` with the GitHub
/// account, because a name that was no tool was sanitized into a model
/// name. Capability ids match exactly; model names only as published.
#[tokio::test(flavor = "multi_thread")]
async fn a_name_that_flattens_onto_a_tool_is_not_that_tool() {
    let fake = FakeMcp::start(Script {
        tools: vec![repo_tool()],
        ..Script::default()
    })
    .await;
    let warden = crate::warden();
    fake.configure(&warden);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("manifest.toml"), GITHUB_GET).unwrap();
    let installed = warden.run(&["install", dir.path().to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");

    // The listing is refused: `repo` would take the bundled tool's name.
    let input = json!({"owner": "octo", "repo": "hello"}).to_string();
    let hosted = warden.run(&["--json", "call", "github_get.repo", "--input", &input]);
    assert!(
        hosted.stderr.contains("github_get_repo"),
        "the refusal is said: {hosted:?}"
    );
    assert_eq!(hosted.json()["code"], "unknown_tool", "{hosted:?}");
    assert!(
        !fake.methods().iter().any(|m| m == "tools/call"),
        "nothing was called on the server"
    );
    for near in ["github.get.repo", "github_get.get_repo", "GitHub.get_repo"] {
        assert_eq!(call_code(&warden, near), "unknown_tool", "{near}");
    }
    // The bundled tool, named as it is: found (it needs an account).
    for exact in ["github.get_repo", "github_get_repo"] {
        assert_eq!(call_code(&warden, exact), "auth_required", "{exact}");
    }
}

/// Finding 8: `describe` of a discovered hosted tool said "no tool" while
/// `list` showed it and `call` ran it.
#[tokio::test(flavor = "multi_thread")]
async fn describe_finds_a_discovered_hosted_tool() {
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);
    let added = warden.run(&["mcp", "add", "fake", MCP_URL]);
    assert_eq!(added.code, 0, "{added:?}");
    let refreshed = warden.run(&["mcp", "refresh", "mcp-fake"]);
    assert_eq!(refreshed.code, 0, "{refreshed:?}");
    let listed = warden.run(&["list"]);
    assert!(listed.stdout.contains("mcp-fake.weather"), "{listed:?}");

    for name in ["mcp-fake.weather", "mcp-fake_weather"] {
        let described = warden.run(&["describe", name]);
        assert_eq!(described.code, 0, "{name}: {described:?}");
        assert!(
            described.stdout.contains("The weather in a city."),
            "{described:?}"
        );
        let json = warden.run(&["--json", "describe", name]).json();
        assert_eq!(json["capability_id"], "mcp-fake.weather", "{json}");
        assert_eq!(json["name"], "mcp-fake_weather", "{json}");
        assert_eq!(json["package"]["id"], "mcp-fake", "{json}");
        assert_eq!(json["output_schema"]["required"], json!(["celsius"]));
    }
    // Only as published: a name that merely flattens to it is no tool.
    let near = warden.run(&["describe", "mcp-fake.weather.x"]);
    assert_eq!(near.code, 1, "{near:?}");
    assert!(near.stderr.contains("no tool"), "{near:?}");
}

/// What no message to a person should carry: Rust type paths and rmcp's own
/// log lines.
fn assert_in_user_terms(run: &warden_tests::Run) {
    for internal in [
        "rmcp::",
        "WorkerTransport",
        "Transport [",
        " ERROR ",
        "ERROR rmcp",
    ] {
        assert!(!run.stderr.contains(internal), "`{internal}` in {run:?}");
    }
}

/// Hosted errors showed Rust type names
/// (`rmcp::transport::worker::WorkerTransport<…>`) and rmcp's ERROR lines
/// reached stderr on ordinary failures: a server that is down, a wrong path.
#[tokio::test(flavor = "multi_thread")]
async fn a_hosted_server_down_or_a_wrong_path_is_said_in_the_users_terms() {
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);

    // A wrong path: the server answers 404.
    let wrong = warden.run(&[
        "mcp",
        "add",
        "wrong",
        "https://mcp.example.com/nothing-here",
    ]);
    assert_eq!(wrong.code, 1, "{wrong:?}");
    assert!(wrong.stderr.contains("404"), "{wrong:?}");
    assert_in_user_terms(&wrong);

    // Down: the name resolves to a port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let config = std::fs::read_to_string(warden.data_dir().join("warden.toml")).unwrap();
    let server = fake.server().addr().to_string();
    warden.configure(&config.replace(&server, &addr.to_string()));
    let down = warden.run(&["mcp", "add", "down", MCP_URL]);
    assert_eq!(down.code, 1, "{down:?}");
    assert!(
        down.stderr.contains("connect") || down.stderr.contains("refused"),
        "{down:?}"
    );
    assert_in_user_terms(&down);
}
