//! `[mcp]` packages through the host API: install, discovery, publication
//! policy, calls with injection by egress, and list_changed.

use std::sync::Arc;

use serde_json::json;
use warden_core::{Effect, Origin, Permission};
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing;
use warden_host::{Host, HostConfig, Invocation, InvokeOutcome, Location, PackageSource};
use warden_tests::fake_mcp::{FakeMcp, MCP_HOST, MCP_TOKEN, MCP_URL, Script, write_package};

async fn setup(script: Script) -> (FakeMcp, Location, tempfile::TempDir) {
    let fake = FakeMcp::start(script).await;
    let audience = AccountAudience {
        scheme: "https".into(),
        host: MCP_HOST.into(),
        port: 443,
    };
    let secrets = MemoryStore::new().with(
        AccountKey::new("example", "mcp_token", Vec::<String>::new()),
        AccountBinding::new("fake-mcp", [audience]),
        MCP_TOKEN,
    );
    let config = HostConfig {
        egress: testing::config(fake.ca(), &[(MCP_HOST, 443)]),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(fake.server().resolver(&[MCP_HOST])))
        .build()
        .unwrap();
    let location = host.open_location("p");
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), MCP_URL);
    location
        .install(&PackageSource::Dir(dir.path().into()))
        .unwrap();
    (fake, location, dir)
}

fn call(tool: &str, input: serde_json::Value) -> Invocation {
    Invocation::new(tool, input, Origin::Product)
}

#[tokio::test]
async fn install_publishes_pinned_tools_and_discovery_replaces_them() {
    let (fake, location, _dir) = setup(Script::default()).await;
    // Nothing was sent at install; the pinned tool is published.
    assert!(fake.requests().is_empty());
    let ids: Vec<String> = tool_ids(&location);
    assert_eq!(ids, ["fake-mcp.echo"]);
    assert!(location.refresh_hosted().await.is_empty());
    assert_eq!(tool_ids(&location), ["fake-mcp.echo", "fake-mcp.weather"]);
    let snapshot = location.snapshot();
    let weather = by_id(&snapshot, "fake-mcp.weather");
    assert!(weather.def().effects.contains(&Effect::Network));
    // The pinned entry overrides the remote one of the same name.
    let echo = by_id(&snapshot, "fake-mcp.echo");
    assert_eq!(echo.def().description, "Echo (pinned).");
}

fn by_id<'s>(snapshot: &'s warden_host::Snapshot, id: &str) -> &'s warden_registry::RegisteredTool {
    snapshot
        .tools()
        .find(|t| t.def().capability_id() == id)
        .unwrap_or_else(|| panic!("{id} is published"))
}

fn tool_ids(location: &Location) -> Vec<String> {
    let mut ids: Vec<String> = location
        .snapshot()
        .tools()
        .map(|t| t.def().capability_id().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_call_runs_with_the_credential_injected_only_at_the_endpoint() {
    let (fake, location, _dir) = setup(Script {
        require_token: true,
        ..Script::default()
    })
    .await;
    assert!(location.refresh_hosted().await.is_empty());
    let outcome = location
        .invoke(call("fake-mcp.weather", json!({"city": "Oslo"})))
        .await
        .unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(done.output, json!({"celsius": 21.5}));
    let outcome = location
        .invoke(call("fake-mcp.echo", json!({"text": "hi"})))
        .await
        .unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(!done.text.contains(MCP_TOKEN), "{}", done.text);
    for request in fake.requests() {
        assert_eq!(request.target, "/mcp");
        assert_eq!(request.server_name.as_deref(), Some(MCP_HOST));
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {MCP_TOKEN}").as_str())
        );
    }
    // Input is checked against the schema before anything is sent.
    let before = fake.requests().len();
    let outcome = location
        .invoke(call("fake-mcp.echo", json!({"text": 5})))
        .await
        .unwrap();
    assert!(matches!(outcome, InvokeOutcome::Failed(_)), "{outcome:?}");
    assert_eq!(fake.requests().len(), before);
}

#[tokio::test]
async fn a_destructive_hint_adds_external_write_and_forces_ask() {
    let (fake, location, _dir) = setup(Script::default()).await;
    fake.script(|s| {
        s.tools
            .push(json!({"name": "wipe", "inputSchema": {"type": "object"},
            "annotations": {"destructiveHint": true}}));
        // A read-only hint never removes anything.
        s.tools
            .push(json!({"name": "peek", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}}));
    });
    assert!(location.refresh_hosted().await.is_empty());
    let snapshot = location.snapshot();
    let wipe = by_id(&snapshot, "fake-mcp.wipe");
    assert!(wipe.def().effects.contains(&Effect::ExternalWrite));
    assert_eq!(wipe.def().default_permission, Permission::Ask);
    let peek = by_id(&snapshot, "fake-mcp.peek");
    assert_eq!(peek.def().default_permission, Permission::Allow);
    assert!(peek.def().effects.contains(&Effect::UseSecret));
}

#[tokio::test]
async fn list_changed_republishes_and_ticks_the_location() {
    let (fake, location, _dir) = setup(Script::default()).await;
    assert!(location.refresh_hosted().await.is_empty());
    let mut changes = location.changes();
    changes.borrow_and_update();
    let mut hosted = location.hosted_changes();
    fake.script(|s| {
        s.notify_list_changed = true;
        s.tools
            .push(json!({"name": "later", "inputSchema": {"type": "object"}}));
    });
    let outcome = location
        .invoke(call("fake-mcp.weather", json!({})))
        .await
        .unwrap();
    assert!(
        matches!(outcome, InvokeOutcome::Completed(_)),
        "{outcome:?}"
    );
    hosted[0].changed().await.unwrap();
    assert!(location.refresh_hosted().await.is_empty());
    assert!(changes.has_changed().unwrap());
    assert!(tool_ids(&location).contains(&"fake-mcp.later".to_owned()));
    // A refused catalog keeps the published tools.
    fake.script(|s| {
        s.tools = (0..9)
            .map(|i| json!({"name": format!("t{i}"), "inputSchema": {}}))
            .collect()
    });
    let mut hosted = location.hosted_changes();
    let _ = location
        .invoke(call("fake-mcp.weather", json!({})))
        .await
        .unwrap();
    hosted[0].changed().await.unwrap();
    let errors = location.refresh_hosted().await;
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].to_string().contains("max_tools = 8"),
        "{}",
        errors[0]
    );
    assert!(tool_ids(&location).contains(&"fake-mcp.later".to_owned()));
}
