//! The live catalog: a running `warden serve` picks up what another `warden`
//! process installs, upgrades or uninstalls, and tells its MCP client with
//! `notifications/tools/list_changed`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::watch;
use warden_tests::package::echo_variant;

/// A client that counts `tools/list_changed` notifications.
#[derive(Clone)]
pub(crate) struct Watching {
    pub(crate) changed: Arc<watch::Sender<u32>>,
}

impl ClientHandler for Watching {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("e2e-live", "0"),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// The model-facing tool names the server lists now.
pub(crate) async fn tool_names(client: &RunningService<RoleClient, Watching>) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// The description of tool `name` as the server lists it now.
async fn description(client: &RunningService<RoleClient, Watching>, name: &str) -> String {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .find(|t| t.name == name)
        .and_then(|t| t.description.map(|d| d.to_string()))
        .unwrap_or_default()
}

/// The `live` package (a copy of echo), with its tool described as `text`.
fn live_package(dir: &std::path::Path, text: &str) {
    echo_variant(
        dir,
        &[
            (r#"id = "echo""#, r#"id = "live""#),
            (r#"id = "echo.echo""#, r#"id = "live.echo""#),
            (
                r#"description = "Echo a text back"#,
                &format!(r#"description = "{text}. Echo a text back"#),
            ),
        ],
    );
}

/// Wait (bounded) for the next `list_changed` after `seen` notifications.
pub(crate) async fn next_change(changes: &mut watch::Receiver<u32>, seen: u32) -> u32 {
    tokio::time::timeout(Duration::from_secs(30), changes.wait_for(|n| *n > seen))
        .await
        .expect("warden serve sends tools/list_changed within 30 s")
        .map(|n| *n)
        .expect("the client is running")
}

/// `warden serve` over stdio on `warden`'s data directory, with a client
/// counting `list_changed`.
pub(crate) async fn serve_watched(
    warden: &warden_tests::Warden,
) -> (RunningService<RoleClient, Watching>, watch::Receiver<u32>) {
    let (changed, changes) = watch::channel(0);
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client = Watching {
        changed: Arc::new(changed),
    }
    .serve(TokioChildProcess::new(command).expect("warden serve starts"))
    .await
    .expect("MCP handshake with warden serve");
    (client, changes)
}

#[tokio::test(flavor = "multi_thread")]
async fn another_process_installing_and_uninstalling_is_announced_to_a_running_server() {
    let warden = crate::warden();
    let (client, mut changes) = serve_watched(&warden).await;
    assert!(!tool_names(&client).await.contains(&"live_echo".to_owned()));

    // A second process installs a package into the same data dir.
    let package = tempfile::tempdir().unwrap();
    live_package(package.path(), "Version one");
    let installed = warden.run(&["install", package.path().to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let seen = next_change(&mut changes, 0).await;
    assert!(
        tool_names(&client).await.contains(&"live_echo".to_owned()),
        "the new tool is listed after list_changed"
    );
    assert!(
        description(&client, "live_echo")
            .await
            .starts_with("Version one")
    );

    // ... upgrades it ...
    let upgrade = tempfile::tempdir().unwrap();
    live_package(upgrade.path(), "Version two");
    let replaced = warden.run(&["install", "--replace", upgrade.path().to_str().unwrap()]);
    assert_eq!(replaced.code, 0, "{replaced:?}");
    next_change(&mut changes, seen).await;
    // Removing the old copy and moving the new one in may be seen as two
    // changes; the catalog settles on the new version.
    let settled = async {
        while !description(&client, "live_echo")
            .await
            .starts_with("Version two")
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), settled)
        .await
        .expect("the upgraded description is listed");
    let seen = *changes.borrow();

    // ... and uninstalls it: announced, and the built-in echo stays.
    let removed = warden.run(&["uninstall", "live"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    next_change(&mut changes, seen).await;
    let gone = async {
        while tool_names(&client).await.contains(&"live_echo".to_owned()) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), gone)
        .await
        .expect("the uninstalled tool is no longer listed");
    assert!(tool_names(&client).await.contains(&"echo_echo".to_owned()));
    client.cancel().await.ok();
}
