//! MCP calls per second through one `warden serve --http` versus two, on
//! one PostgreSQL store (same run). Each host has a data directory of its
//! own; both share approvals and grants through the database.
//!
//! The call is `github_get_repo` against a local fake GitHub over HTTPS,
//! covered by a grant made once (so every call reads the shared store: the
//! approval it could claim, then the grants). One iteration is eight
//! concurrent calls, spread over the hosts' clients round robin.

use std::sync::{Mutex, OnceLock};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use warden_tests::{FakeGitHub, Serving, TestPostgres, Warden};

fn main() {
    // Set up before the first sample, which would otherwise include it.
    world();
    divan::main();
    // Statics are never dropped: stop the hosts and the cluster here.
    if let Some(world) = WORLD.get() {
        drop(world.owned.lock().unwrap().take());
    }
}

type Client = RunningService<RoleClient, ()>;

struct World {
    rt: tokio::runtime::Runtime,
    clients: Vec<Client>,
    /// The processes and directories, dropped (in order) at the end.
    owned: Mutex<Option<Owned>>,
}

type Owned = (
    Vec<(Warden, Serving)>,
    FakeGitHub,
    tempfile::TempDir,
    TestPostgres,
);

static WORLD: OnceLock<World> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(setup)
}

fn setup() -> World {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pg = TestPostgres::start();
    let url = pg.create_database("hosts");
    let fake = rt.block_on(FakeGitHub::start());
    let keys = tempfile::tempdir().unwrap();
    let store = format!(
        "\n[store]\nurl = {url:?}\nsecret_key_file = {:?}\n",
        keys.path().join("secret.key")
    );
    let hosts: Vec<(Warden, Serving, u16)> = (0..2)
        .map(|i| {
            let warden = Warden::new(env!("CARGO_BIN_EXE_warden"));
            fake.configure(&warden);
            warden.configure_more(&store);
            if i == 0 {
                // The account lives in the database, for both hosts.
                FakeGitHub::store_token(&warden);
            }
            let (serving, port) = warden.serve_http("127.0.0.1:0", &["--sessions", "none"]);
            (warden, serving, port)
        })
        .collect();
    let clients: Vec<Client> = hosts
        .iter()
        .map(|(_, _, port)| {
            let uri = format!("http://127.0.0.1:{port}/mcp");
            // The transport spawns its worker: made on the runtime.
            rt.block_on(async { ().serve(StreamableHttpClientTransport::from_uri(uri)).await })
                .expect("initialize")
        })
        .collect();
    // One approval with a grant covers every later call, on either host.
    let first = rt.block_on(get_repo(&clients[0]));
    let meta = first.meta.as_ref().expect("an approval");
    let id = meta.0["warden/approvalId"]
        .as_str()
        .expect("an approval id");
    let approved = hosts[0].0.run(&["approvals", "approve", id, "--grant"]);
    assert_eq!(approved.code, 0, "{approved:?}");
    for client in &clients {
        assert!(ran(&rt.block_on(get_repo(client))));
    }
    let hosts = hosts.into_iter().map(|(w, s, _)| (w, s)).collect();
    World {
        rt,
        clients,
        owned: Mutex::new(Some((hosts, fake, keys, pg))),
    }
}

async fn get_repo(client: &Client) -> CallToolResult {
    let Value::Object(arguments) = json!({ "owner": "octo", "repo": "hello" }) else {
        unreachable!("object literal")
    };
    client
        .call_tool(CallToolRequestParams::new("github_get_repo").with_arguments(arguments))
        .await
        .expect("tools/call")
}

fn ran(result: &CallToolResult) -> bool {
    result.is_error != Some(true)
        && result
            .structured_content
            .as_ref()
            .is_some_and(|s| s["full_name"] == "octo/hello")
}

/// Eight concurrent calls through the first `hosts` hosts.
#[divan::bench(args = [1, 2], sample_count = 60)]
fn eight_calls(hosts: usize) {
    let world = world();
    world.rt.block_on(async {
        let calls = (0..8).map(|i| get_repo(&world.clients[i % hosts]));
        for result in futures::future::join_all(calls).await {
            assert!(ran(&result), "{result:?}");
        }
    });
}
