//! One package set for a deployment: two hosts on one PostgreSQL, each
//! serving MCP. A package installed on host A (from a real OCI registry,
//! and one from a directory, whose bytes the store keeps) reaches host B's
//! MCP client with `tools/list_changed` and runs there, with no command on
//! B; an uninstall on B removes it from A.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use warden_tests::oci_registry::TestRegistry;
use warden_tests::package::echo_variant;
use warden_tests::{TestPostgres, Warden};

use crate::live_catalog::{Watching, next_change, serve_watched, tool_names};

type Client = RunningService<rmcp::RoleClient, Watching>;

/// Wait (bounded) until `client` lists `tool` (or no longer does).
async fn until_listed(client: &Client, tool: &str, listed: bool) {
    let settled = async {
        while tool_names(client).await.contains(&tool.to_owned()) != listed {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), settled)
        .await
        .unwrap_or_else(|_| panic!("`{tool}` listed: {listed}, within 60 s"));
}

/// Call `tool` on `host`'s server: a third-party package's call is
/// approved once by a person (`warden approvals approve` on that host),
/// then made again.
async fn echo(host: &Warden, client: &Client, tool: &str, text: &str) -> String {
    let arguments = serde_json::json!({ "text": text });
    let call = || {
        client.call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
    };
    let asked = serde_json::to_value(call().await.expect("tools/call")).unwrap();
    let id = asked["_meta"]["warden/approvalId"]
        .as_str()
        .unwrap_or_else(|| panic!("an approval is asked: {asked}"));
    let approved = host.run(&["approvals", "approve", id]);
    assert_eq!(approved.code, 0, "{approved:?}");
    serde_json::to_string(&call().await.expect("tools/call")).unwrap()
}

/// A copy of echo with id `id` (tool `<id>.echo`).
fn package(dir: &std::path::Path, id: &str) -> String {
    echo_variant(
        dir,
        &[
            (r#"id = "echo""#, &format!(r#"id = "{id}""#)),
            (r#"id = "echo.echo""#, &format!(r#"id = "{id}.echo""#)),
        ],
    );
    dir.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hosts_on_one_postgres_converge_to_one_package_set() {
    let pg = tokio::task::spawn_blocking(TestPostgres::start)
        .await
        .unwrap();
    let url = pg.create_database("package_set");
    let registry = TestRegistry::start().await;
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("secret.key");
    let (a, b) = (crate::warden(), crate::warden());
    for host in [&a, &b] {
        registry.configure(host);
        host.configure_more(&format!(
            "\n[store]\nurl = {url:?}\nsecret_key_file = {key:?}\n"
        ));
    }
    // A package published to the registry.
    let scratch = tempfile::tempdir().unwrap();
    let shared = package(&scratch.path().join("shared"), "shared");
    let reference = registry.reference("acme/shared:1.0");
    let published = a.run(&["publish", &shared, &reference]);
    assert_eq!(published.code, 0, "{published:?}");

    let (client_a, mut changes_a) = serve_watched(&a).await;
    let (client_b, mut changes_b) = serve_watched(&b).await;
    assert!(!tool_names(&client_b).await.contains(&"shared_echo".into()));

    // Installed on A from the registry: B's client is told and runs it.
    let installed = a.run(&["install", &reference]);
    assert_eq!(installed.code, 0, "{installed:?}");
    next_change(&mut changes_b, 0).await;
    until_listed(&client_b, "shared_echo", true).await;
    let answer = echo(&b, &client_b, "shared_echo", "on host B").await;
    assert!(answer.contains("on host B"), "{answer}");

    // Installed on A from a directory: the store keeps its bytes for B.
    let local = package(&scratch.path().join("local"), "local");
    let installed = a.run(&["install", &local]);
    assert_eq!(installed.code, 0, "{installed:?}");
    until_listed(&client_b, "local_echo", true).await;
    let answer = echo(&b, &client_b, "local_echo", "kept in the store").await;
    assert!(answer.contains("kept in the store"), "{answer}");

    // Uninstalled on B (a command on B's data directory): gone from A.
    until_listed(&client_a, "shared_echo", true).await;
    let seen_a = *changes_a.borrow();
    let removed = b.run(&["uninstall", "shared"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    next_change(&mut changes_a, seen_a).await;
    until_listed(&client_a, "shared_echo", false).await;
    until_listed(&client_b, "shared_echo", false).await;
    assert!(tool_names(&client_a).await.contains(&"local_echo".into()));
    assert!(
        !a.data_dir().join("packages/shared").exists(),
        "A's copy is removed"
    );

    // The set names a package no host can fetch (its tag is not in the
    // registry): each host says why and keeps serving the rest, with
    // nothing of it installed, not even half.
    let store = warden_registry::PgStore::connect_with(&url, 2)
        .await
        .unwrap();
    let missing = warden_registry::PackageRecord {
        id: "missing".into(),
        digest: "0".repeat(64),
        reference: Some(format!(
            "{}@sha256:{}",
            registry.reference("acme/missing:1.0"),
            "1".repeat(64)
        )),
        trust: "third_party".into(),
        removed: false,
        revision: 0,
    };
    store.record_package(&missing, None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (host, client) in [(&a, &client_a), (&b, &client_b)] {
        let tools = tool_names(client).await;
        assert!(tools.contains(&"local_echo".into()), "{tools:?}");
        assert!(!tools.iter().any(|t| t.starts_with("missing")), "{tools:?}");
        let packages: Vec<_> = std::fs::read_dir(host.data_dir().join("packages"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            packages.iter().all(|p| !p.contains("missing")),
            "{packages:?}"
        );
    }

    // Uninstalled from the set on a host that never installed it.
    let removed = a.run(&["uninstall", "missing"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    let set = store.package_set().await.unwrap();
    let missing = set.iter().find(|r| r.id == "missing").unwrap();
    assert!(missing.removed, "{set:?}");

    // `warden package-set` on either host: what the set holds, and here.
    let shown = b.run(&["--json", "package-set"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    let shown = shown.json();
    let here = |id: &str| {
        shown["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["here"].as_str().unwrap().to_owned())
    };
    assert_eq!(here("local").as_deref(), Some("installed here"), "{shown}");
    assert_eq!(here("shared").as_deref(), Some("removed"), "{shown}");
    assert_eq!(here("missing").as_deref(), Some("removed"), "{shown}");
    let alone = crate::warden().run(&["package-set"]);
    assert_eq!(alone.code, 1, "{alone:?}");
    assert!(alone.stderr.contains("--store"), "{alone:?}");
    let _ = tokio::join!(client_a.cancel(), client_b.cancel());
}
