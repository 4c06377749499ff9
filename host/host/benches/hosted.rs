//! The hosted-MCP lane's overhead: one `tools/call` to a real rmcp server
//! over local HTTPS, made through a Warden Location (authorization, input
//! check, an egress session per request with policy, address checks and
//! credential injection, redaction, output bounding) versus the same call
//! made directly by rmcp's client on a kept plain-hyper connection.
//!
//! Both keep one MCP session and one connection; the server is the same.
//! The `*_1mib_image` pair calls `picture` with 1 MiB of padding: the
//! answer carries a 1 MiB PNG (1.4 MiB of base64), which Warden decodes,
//! scans for the account's secrets and hands back as an image block.

use std::sync::{Arc, LazyLock};

use serde_json::json;
use warden_core::Origin;
use warden_egress::testing;
use warden_host::{Host, HostConfig, Invocation, InvokeOutcome, Location, PackageSource};
use warden_tests::direct_mcp;
use warden_tests::fake_mcp::{token_store, write_package};
use warden_tests::rmcp_mcp::{Catalog, HOST, RmcpServer, URL};

fn main() {
    divan::main();
}

struct World {
    rt: tokio::runtime::Runtime,
    _server: RmcpServer,
    _dir: tempfile::TempDir,
    location: Location,
    direct: direct_mcp::Session,
    /// The lane alone (egress, no Location): splits the overhead.
    lane: warden_hosted::HostedServer,
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut catalog = Catalog::default();
    catalog
        .tools
        .push(json!({"name": "picture", "inputSchema": {"type": "object"}}));
    let server = rt.block_on(RmcpServer::start(catalog));
    let secrets = token_store("fake-mcp");
    let config = HostConfig {
        egress: testing::config(server.ca(), &[(HOST, 443)]),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(server.resolver()))
        .build()
        .unwrap();
    let location = host.open_location("bench");
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), URL);
    location
        .install(&PackageSource::Dir(dir.path().into()))
        .unwrap();
    let lane = {
        let egress = warden_egress::Egress::new(
            testing::config(server.ca(), &[(HOST, 443)]),
            Arc::new(token_store("fake-mcp")),
            Arc::new(server.resolver()),
        )
        .unwrap();
        let spec = warden_hosted::ServerSpec {
            extension_id: "fake-mcp".into(),
            content: None,
            server: URL.into(),
            credentials: vec![warden_core::spec::CredentialSpec::bearer(
                "mcp_token",
                "example",
                &[],
                HOST,
            )],
            max_tools: 8,
            loopback_http: false,
            settings: Default::default(),
        };
        warden_hosted::HostedServer::new(egress, &spec, warden_hosted::LaneLimits::default())
            .unwrap()
    };
    let direct = rt.block_on(async {
        assert!(location.refresh_hosted().await.is_empty());
        direct_mcp::connect(&server).await
    });
    let world = World {
        rt,
        _server: server,
        _dir: dir,
        location,
        direct,
        lane,
    };
    // Both paths answer before they are timed.
    through_warden_once(&world);
    direct_once(&world);
    world
});

fn through_warden_once(world: &World) {
    let call = Invocation::new("fake-mcp.echo", json!({"text": "hi"}), Origin::Product);
    let outcome = world.rt.block_on(world.location.invoke(call)).unwrap();
    assert!(
        matches!(outcome, InvokeOutcome::Completed(_)),
        "{outcome:?}"
    );
}

fn direct_once(world: &World) {
    let result = world.rt.block_on(direct_mcp::call(
        &world.direct,
        "echo",
        json!({"text": "hi"}),
    ));
    assert!(result["content"][0]["text"].is_string(), "{result}");
}

/// The padding of the large picture: a 1 MiB image.
const MIB: u64 = 1 << 20;

fn through_warden_image(world: &World) {
    let call = Invocation::new("fake-mcp.picture", json!({"pad": MIB}), Origin::Product);
    let outcome = world.rt.block_on(world.location.invoke(call)).unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        done.content
            .iter()
            .any(|b| b.body.binary().is_some_and(|d| d.len() as u64 > MIB)),
        "the image arrives whole"
    );
}

fn direct_image(world: &World) {
    let result = world.rt.block_on(direct_mcp::call(
        &world.direct,
        "picture",
        json!({"pad": MIB}),
    ));
    assert!(result["content"][1]["data"].as_str().unwrap().len() as u64 > MIB);
}

#[divan::bench(sample_count = 100)]
fn direct_rmcp_client_1mib_image() {
    direct_image(&WORLD);
}

#[divan::bench(sample_count = 100)]
fn through_warden_1mib_image() {
    through_warden_image(&WORLD);
}

#[divan::bench(sample_count = 400)]
fn direct_rmcp_client() {
    direct_once(&WORLD);
}

#[divan::bench(sample_count = 400)]
fn hosted_lane_alone() {
    let world = &*WORLD;
    let out = world
        .rt
        .block_on(world.lane.call("echo", json!({"text": "hi"})))
        .unwrap();
    assert!(matches!(
        out.content[0].body,
        warden_core::content::Body::Text(_)
    ));
}

#[divan::bench(sample_count = 400)]
fn through_warden_hosted_lane() {
    through_warden_once(&WORLD);
}
