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
struct Watching {
    changed: Arc<watch::Sender<u32>>,
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
async fn tool_names(client: &RunningService<RoleClient, Watching>) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// Wait (bounded) for the next `list_changed` after `seen` notifications.
async fn next_change(changes: &mut watch::Receiver<u32>, seen: u32) -> u32 {
    tokio::time::timeout(Duration::from_secs(30), changes.wait_for(|n| *n > seen))
        .await
        .expect("warden serve sends tools/list_changed within 30 s")
        .map(|n| *n)
        .expect("the client is running")
}

#[tokio::test(flavor = "multi_thread")]
async fn another_process_installing_and_uninstalling_is_announced_to_a_running_server() {
    let warden = crate::warden();
    let (changed, mut changes) = watch::channel(0);
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client = Watching {
        changed: Arc::new(changed),
    }
    .serve(TokioChildProcess::new(command).expect("warden serve starts"))
    .await
    .expect("MCP handshake with warden serve");
    assert!(!tool_names(&client).await.contains(&"live_echo".to_owned()));

    // A second process installs a package into the same data dir.
    let package = tempfile::tempdir().unwrap();
    echo_variant(
        package.path(),
        &[
            (r#"id = "echo""#, r#"id = "live""#),
            (r#"id = "echo.echo""#, r#"id = "live.echo""#),
        ],
    );
    let installed = warden.run(&["install", package.path().to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let seen = next_change(&mut changes, 0).await;
    assert!(
        tool_names(&client).await.contains(&"live_echo".to_owned()),
        "the new tool is listed after list_changed"
    );

    // ... and uninstalls it.
    let removed = warden.run(&["uninstall", "live"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    next_change(&mut changes, seen).await;
    let names = tool_names(&client).await;
    assert!(!names.contains(&"live_echo".to_owned()), "{names:?}");
    assert!(names.contains(&"echo_echo".to_owned()), "{names:?}");
    client.cancel().await.ok();
}
