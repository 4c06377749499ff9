//! `[mcp]` packages through the host API: install, discovery, publication
//! policy, calls with injection by egress, and list_changed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use warden_core::content::ContentBlock;
use warden_core::{Effect, Origin, Permission};
use warden_egress::testing;
use warden_host::{
    Host, HostConfig, Invocation, InvokeOutcome, LaneLimits, Location, PackageSource,
};
use warden_registry::{ApprovalId, ToolFailure};
use warden_tests::fake_mcp::{
    FakeMcp, MCP_HOST, MCP_TOKEN, MCP_URL, Script, token_store, write_package,
};
use warden_tests::rmcp_mcp::{self, RmcpServer};

fn secrets() -> warden_egress::secrets::MemoryStore {
    token_store("fake-mcp")
}

/// Install package `fake-mcp` for `url` into a Location of `host`.
fn install(host: &Host, url: &str) -> (Location, tempfile::TempDir) {
    let location = host.open_location("p");
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), url);
    location
        .install(&PackageSource::Dir(dir.path().into()))
        .unwrap();
    (location, dir)
}

/// [`install`] with each `(from, to)` replaced in the manifest.
fn install_edited(host: &Host, edits: &[(&str, &str)]) -> (Location, tempfile::TempDir) {
    let location = host.open_location("p");
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), MCP_URL);
    let manifest = dir.path().join("manifest.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "the manifest has {from:?}");
        text = text.replace(from, to);
    }
    std::fs::write(&manifest, text).unwrap();
    location
        .install(&PackageSource::Dir(dir.path().into()))
        .unwrap();
    (location, dir)
}

async fn setup(script: Script) -> (FakeMcp, Location, tempfile::TempDir) {
    let (fake, host) = fake_and_host(script).await;
    let (location, dir) = install(&host, MCP_URL);
    (fake, location, dir)
}

/// A fake MCP server and a host whose egress reaches it at [`MCP_URL`].
async fn fake_and_host(script: Script) -> (FakeMcp, Host) {
    fake_and_host_in(script, None).await
}

/// [`fake_and_host`] with the host's stores and audit log (`audit.jsonl`)
/// in `data_dir`.
async fn fake_and_host_in(script: Script, data_dir: Option<&std::path::Path>) -> (FakeMcp, Host) {
    let fake = FakeMcp::start(script).await;
    let config = HostConfig {
        egress: testing::config(fake.ca(), &[(MCP_HOST, 443)]),
        data_dir: data_dir.map(std::path::Path::to_path_buf),
        ..HostConfig::default()
    };
    let mut builder = Host::builder(config)
        .secret_store(Arc::new(secrets()))
        .resolver(Arc::new(fake.server().resolver(&[MCP_HOST])));
    if let Some(dir) = data_dir {
        let log = warden_host::AuditLog::new(
            dir.join("audit.jsonl"),
            warden_host::DEFAULT_AUDIT_MAX_BYTES,
        );
        builder = builder.audit_log(log);
    }
    (fake, builder.build().unwrap())
}

/// Invoke `tool` and return what it completed with.
async fn completed(
    location: &Location,
    tool: &str,
    input: serde_json::Value,
) -> warden_host::Completed {
    let outcome = location.invoke(call(tool, input)).await.unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("{outcome:?}")
    };
    done
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
    let done = completed(&location, "fake-mcp.weather", json!({"city": "Oslo"})).await;
    assert_eq!(done.output, json!({"celsius": 21.5}));
    let done = completed(&location, "fake-mcp.echo", json!({"text": "hi"})).await;
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
async fn a_destructive_hint_adds_external_write_and_every_discovered_tool_asks() {
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
    // A discovered tool asks whatever `[mcp] default_permission` says
    // (`allow` here): the server, not the manifest, listed it.
    let peek = by_id(&snapshot, "fake-mcp.peek");
    assert_eq!(peek.def().default_permission, Permission::Ask);
    // The pinned tool keeps the manifest's `allow`.
    let echo = by_id(&snapshot, "fake-mcp.echo");
    assert_eq!(echo.def().default_permission, Permission::Allow);
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

/// A server announcing `tools/list_changed` in every answer, its listings
/// included: the announcement made while it is being listed is followed
/// (not lost), and the refreshes it causes are spaced, not a loop.
#[tokio::test]
async fn a_server_announcing_in_every_listing_is_relisted_spaced_not_in_a_loop() {
    let (fake, location, _dir) = setup(Script::default()).await;
    assert!(location.refresh_hosted().await.is_empty());
    let follower = tokio::spawn({
        let location = location.clone();
        async move { location.follow_hosted().await }
    });
    fake.script(|s| {
        s.notify_list_changed = true;
        s.announce_on_list = true;
        s.tools
            .push(json!({"name": "later", "inputSchema": {"type": "object"}}));
    });
    let listings = || fake.methods().iter().filter(|m| *m == "tools/list").count();
    let before = listings();
    let _ = location
        .invoke(call("fake-mcp.weather", json!({})))
        .await
        .unwrap();
    published(&location, "fake-mcp.later").await;
    let first = listings();
    let since = std::time::Instant::now();
    assert!(first > before);
    let mut changes = location.changes();
    changes.borrow_and_update();
    // The announcement made during that listing is followed: it is listed
    // again (waited for, bounded).
    let again = async {
        while listings() == first {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), again)
        .await
        .expect("the announcement made while listing was lost");
    // Long enough for a loop to show itself; the listings are counted
    // against what the spacing (one a second) allows in the time that
    // actually passed, not within a window a loaded machine overruns.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let more = listings() - first;
    let passed = since.elapsed();
    let allowed = 1 + passed.as_secs() as usize;
    assert!(
        (1..=allowed).contains(&more),
        "{more} more listings within {passed:?} of the first"
    );
    // Listing the same tools again republishes nothing (clients are not
    // told of a change that did not happen).
    assert!(!changes.has_changed().unwrap());
    follower.abort();
}

/// A Location with two `[mcp]` packages: `a-stalled`, whose server accepts
/// connections and never answers (its package id sorts first), and
/// `fake-mcp` on the scripted fake server. The last value holds the stalled
/// server's listener and the packages' directories.
async fn stalled_and_fake(script: Script) -> (FakeMcp, Location, impl Drop) {
    const STALLED: &str = "stalled.example.com";
    let stalled = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stalled_addr = stalled.local_addr().unwrap();
    // Accept and hold every connection, answering nothing.
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = stalled.accept().await {
            held.push(stream);
        }
    });
    let fake = FakeMcp::start(script).await;
    let mut egress = testing::config(fake.ca(), &[(MCP_HOST, 443), (STALLED, 443)]);
    // The stalled server fails only after the test is over.
    egress.connect_timeout = Duration::from_secs(120);
    egress.read_timeout = Duration::from_secs(120);
    egress.total_timeout = Duration::from_secs(120);
    let config = HostConfig {
        egress,
        ..HostConfig::default()
    };
    let resolver = fake
        .server()
        .resolver(&[MCP_HOST])
        .with_socket(STALLED, [stalled_addr]);
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets()))
        .resolver(Arc::new(resolver))
        .build()
        .unwrap();
    let (location, fake_dir) = install(&host, MCP_URL);
    let stalled_dir = tempfile::tempdir().unwrap();
    write_package(stalled_dir.path(), &format!("https://{STALLED}/mcp"));
    let manifest = stalled_dir.path().join("manifest.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("fake-mcp", "a-stalled")).unwrap();
    location
        .install(&PackageSource::Dir(stalled_dir.path().into()))
        .unwrap();
    let held = Held {
        holder,
        _dirs: [fake_dir, stalled_dir],
    };
    (fake, location, held)
}

/// What [`stalled_and_fake`] keeps alive; the stalled server stops with it.
struct Held {
    holder: tokio::task::JoinHandle<()>,
    _dirs: [tempfile::TempDir; 2],
}

impl Drop for Held {
    fn drop(&mut self) {
        self.holder.abort();
    }
}

/// Servers are listed at the same time: one that never answers (listed
/// first, its package id sorting first) does not hold back another's catalog.
#[tokio::test]
async fn a_stalled_server_does_not_hold_back_another_servers_catalog() {
    let (_fake, location, _held) = stalled_and_fake(Script::default()).await;
    let refresh = tokio::spawn({
        let location = location.clone();
        async move { location.refresh_hosted().await }
    });
    published(&location, "fake-mcp.weather").await;
    assert!(
        !refresh.is_finished(),
        "the stalled server is still being listed"
    );
    refresh.abort();
}

/// Each server is followed on its own: the follower waited for the
/// stalled server's listing (up to the lane's deadline) before it heard the
/// other's announcement.
#[tokio::test]
async fn a_stalled_server_does_not_hold_back_another_servers_announcements() {
    let (fake, location, _held) = stalled_and_fake(Script::default()).await;
    let follower = tokio::spawn({
        let location = location.clone();
        async move { location.follow_hosted().await }
    });
    published(&location, "fake-mcp.weather").await;
    fake.script(|s| {
        s.notify_list_changed = true;
        s.tools
            .push(json!({"name": "later", "inputSchema": {"type": "object"}}));
    });
    let _ = location
        .invoke(call("fake-mcp.weather", json!({})))
        .await
        .unwrap();
    published(&location, "fake-mcp.later").await;
    follower.abort();
}

/// A host with `config` whose egress trusts and resolves to `rmcp`, with
/// the account of [`secrets`].
fn rmcp_host(rmcp: &RmcpServer, config: HostConfig) -> Host {
    let config = HostConfig {
        egress: testing::config(rmcp.ca(), &[(rmcp_mcp::HOST, 443)]),
        ..config
    };
    Host::builder(config)
        .secret_store(Arc::new(secrets()))
        .resolver(Arc::new(rmcp.resolver()))
        .build()
        .unwrap()
}

/// Wait (bounded) until `id` is published in `location`.
async fn published(location: &Location, id: &str) {
    let mut changes = location.changes();
    let wait = async {
        while !tool_ids(location).contains(&id.to_owned()) {
            changes.changed().await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("{id} was never published: {:?}", tool_ids(location)));
}

#[tokio::test]
async fn a_real_mcp_server_is_followed_on_the_refresh_interval_and_called() {
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    let host = rmcp_host(
        &rmcp,
        HostConfig {
            hosted: LaneLimits {
                refresh_interval: Duration::from_millis(200),
                ..LaneLimits::default()
            },
            ..HostConfig::default()
        },
    );
    let (location, _dir) = install(&host, rmcp_mcp::URL);
    let follower = tokio::spawn({
        let location = location.clone();
        async move { location.follow_hosted().await }
    });
    published(&location, "fake-mcp.weather").await;
    let done = completed(&location, "fake-mcp.weather", json!({"city": "Oslo"})).await;
    assert_eq!(done.output, json!({"city": "Oslo", "celsius": 21}));
    // The SDK server announces nothing the lane hears: the interval finds it.
    rmcp.catalog(|c| {
        c.tools
            .push(json!({"name": "added", "inputSchema": {"type": "object"}}))
    });
    published(&location, "fake-mcp.added").await;
    follower.abort();
}

#[tokio::test]
async fn the_accepted_catalog_is_kept_for_the_next_host_and_checked_again() {
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    let data = tempfile::tempdir().unwrap();
    let host = || {
        let config = HostConfig {
            data_dir: Some(data.path().to_owned()),
            egress: testing::config(rmcp.ca(), &[(rmcp_mcp::HOST, 443)]),
            ..HostConfig::default()
        };
        Host::builder(config)
            .secret_store(Arc::new(secrets()))
            .resolver(Arc::new(rmcp.resolver()))
            .build()
            .unwrap()
    };
    let first = host();
    let (location, package) = install(&first, rmcp_mcp::URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());
    let saved = data.path().join("mcp-catalogs/fake-mcp.json");
    assert!(saved.is_file());
    drop((location, first));

    // The next host publishes the kept catalog at install, sending nothing.
    let sent = rmcp.received().len();
    let location = host().open_location("p");
    location
        .install(&PackageSource::Dir(package.path().into()))
        .unwrap();
    assert_eq!(tool_ids(&location), ["fake-mcp.echo", "fake-mcp.weather"]);
    assert_eq!(rmcp.received().len(), sent);

    // A kept catalog is checked like a listing: over max_tools it is ignored.
    let text = std::fs::read_to_string(&saved).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["tools"] = (0..9)
        .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
        .collect();
    std::fs::write(&saved, value.to_string()).unwrap();
    let location = host().open_location("p");
    location
        .install(&PackageSource::Dir(package.path().into()))
        .unwrap();
    assert_eq!(tool_ids(&location), ["fake-mcp.echo"]);

    // And only for the endpoint it was listed from.
    value["tools"] = json!([{"name": "other", "inputSchema": {"type": "object"}}]);
    value["server"] = json!("https://elsewhere.example.com/mcp");
    std::fs::write(&saved, value.to_string()).unwrap();
    let location = host().open_location("p");
    location
        .install(&PackageSource::Dir(package.path().into()))
        .unwrap();
    assert_eq!(tool_ids(&location), ["fake-mcp.echo"]);
    // Uninstalling the package removes what was kept for it.
    assert!(location.uninstall("fake-mcp").is_some());
    assert!(!saved.exists());
}

/// A server that writes its own token into a tool's description with a
/// zero-width space after every character: the model reads the token, and
/// the catalog kept in `mcp-catalogs/` held it. It is redacted before the
/// catalog is checked, published or kept.
#[tokio::test]
async fn a_token_hidden_with_invisible_characters_never_reaches_the_catalog() {
    let hidden: String = MCP_TOKEN.chars().flat_map(|c| [c, '\u{200B}']).collect();
    let mut weather = warden_tests::fake_mcp::weather_tool();
    weather["description"] = json!(format!("Weather. Key: {hidden}"));
    let script = Script {
        tools: vec![warden_tests::fake_mcp::echo_tool(), weather],
        ..Script::default()
    };
    let data = tempfile::tempdir().unwrap();
    let (_fake, host) = fake_and_host_in(script, Some(data.path())).await;
    let (location, _package) = install(&host, MCP_URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());

    let saved = data.path().join("mcp-catalogs/fake-mcp.json");
    let text = std::fs::read_to_string(&saved).unwrap();
    let visible: String = text.chars().filter(|c| *c != '\u{200B}').collect();
    assert!(!visible.contains(MCP_TOKEN), "{text}");
    assert!(text.contains("Weather. Key: [REDACTED]"), "{text}");
    let snapshot = location.snapshot();
    let description = &by_id(&snapshot, "fake-mcp.weather").def().description;
    assert!(
        description.starts_with("Weather. Key: [REDACTED]"),
        "{description:?}"
    );
}

#[tokio::test]
async fn a_refused_token_or_a_scope_step_up_is_a_structured_auth_required() {
    use warden_egress::secrets::AuthReason;
    let (fake, location, _dir) = setup(Script::default()).await;
    assert!(location.refresh_hosted().await.is_empty());
    let failure = |outcome: InvokeOutcome| match outcome {
        InvokeOutcome::Failed(failure) => failure,
        other => panic!("{other:?}"),
    };
    // 403 insufficient_scope: the scopes the server named, and how to ask for them.
    fake.script(|s| s.insufficient_scope = Some("admin".into()));
    let outcome = location.invoke(call("fake-mcp.weather", json!({}))).await;
    let refused = failure(outcome.unwrap());
    assert_eq!(refused.code(), "auth_required", "{}", refused.message());
    let details = refused.auth_details().expect("auth details");
    assert_eq!(details.reason, Some(AuthReason::InsufficientScope));
    assert_eq!(details.vendor.as_deref(), Some("example"));
    assert_eq!(details.handle.as_deref(), Some("mcp_token"));
    assert_eq!(details.scopes, ["admin"]);
    assert_eq!(
        details.connect_command(),
        "warden auth connect fake-mcp --scope admin"
    );
    // A token the server no longer accepts (401): expired, connect again.
    fake.script(|s| {
        s.insufficient_scope = None;
        s.oauth = Some(warden_egress::testing::FakeAuthServer::new(
            warden_tests::fake_mcp::AUTH_HOST,
            3600,
        ));
    });
    let outcome = location.invoke(call("fake-mcp.weather", json!({}))).await;
    let details = failure(outcome.unwrap())
        .auth_details()
        .expect("auth details");
    assert_eq!(details.reason, Some(AuthReason::Expired));
    assert_eq!(details.connect_command(), "warden auth connect fake-mcp");
}

/// A model-loop call of `fake-mcp.weather` (the package gates the loop's
/// calls unless granted) asked for approval and a person answered
/// `resolution`; then the package was installed again while its server
/// refuses the token, so it listed nothing: the tool is gone for want of
/// authorization.
async fn answered_then_unlisted(
    resolution: warden_host::Resolution,
    data_dir: &std::path::Path,
) -> (FakeMcp, Host, Location, ApprovalId, tempfile::TempDir) {
    let (fake, host) = fake_and_host_in(Script::default(), Some(data_dir)).await;
    let (location, dir) = install(&host, MCP_URL);
    assert!(location.refresh_hosted().await.is_empty());
    let InvokeOutcome::NeedsApproval(request) = location.invoke(weather()).await.unwrap() else {
        panic!("the model loop asks")
    };
    host.approvals()
        .resolve(&request.id, resolution, warden_registry::now_millis())
        .await
        .unwrap();
    fake.script(|s| {
        s.oauth = Some(warden_egress::testing::FakeAuthServer::new(
            warden_tests::fake_mcp::AUTH_HOST,
            3600,
        ));
    });
    assert!(location.uninstall("fake-mcp").is_some());
    location
        .install(&PackageSource::Dir(dir.path().into()))
        .unwrap();
    assert!(
        !location.refresh_hosted().await.is_empty(),
        "the listing is refused"
    );
    assert!(!tool_ids(&location).contains(&"fake-mcp.weather".to_owned()));
    (fake, host, location, request.id, dir)
}

fn weather() -> Invocation {
    Invocation::new("fake-mcp.weather", json!({}), Origin::LoopRun)
}

/// An approved call resumed once its tool is gone for want of authorization
/// says so as the call would, and leaves the approval for the call once the
/// account is connected again.
#[tokio::test]
async fn a_resumed_call_whose_server_now_refuses_the_token_is_auth_required() {
    let data = tempfile::tempdir().unwrap();
    let (fake, _host, location, id, _dir) =
        answered_then_unlisted(warden_host::Resolution::ApproveOnce, data.path()).await;
    let before = fake.requests().len();
    let outcome = location.resume(&id, weather()).await.unwrap();
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(failure.code(), "auth_required", "{}", failure.message());
    let details = failure.auth_details().expect("auth details");
    assert_eq!(details.connect_command(), "warden auth connect fake-mcp");
    assert_eq!(fake.requests().len(), before, "nothing reached the server");

    // Connected again, the tool is listed and the approval, never spent,
    // runs the call.
    fake.script(|s| s.oauth = None);
    assert!(location.refresh_hosted().await.is_empty());
    let outcome = location.resume(&id, weather()).await.unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(done.authorized_by, warden_host::AuthorizedBy::Approval(id));
}

/// A declined call stays declined, with the person's feedback, however its
/// tool went missing since: nobody is offered to connect an account for it.
#[tokio::test]
async fn a_declined_call_whose_tool_is_gone_is_still_declined() {
    let data = tempfile::tempdir().unwrap();
    let (_fake, _host, location, id, _dir) = answered_then_unlisted(
        warden_host::Resolution::DenyWithFeedback("not today".into()),
        data.path(),
    )
    .await;
    let outcome = location.resume(&id, weather()).await.unwrap();
    let InvokeOutcome::Failed(warden_host::CallFailure::Refused(ToolFailure::Declined {
        approval_id,
        feedback,
    })) = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(approval_id, id);
    assert_eq!(feedback.as_deref(), Some("not today"));
    // Audited like a declined resume of a tool still there.
    let lines = warden_host::audit_tail(&data.path().join("audit.jsonl"), 1).unwrap();
    let last: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(last["outcome"], "user_declined", "{last}");
    assert_eq!(last["capability"], "fake-mcp.weather", "{last}");
    assert_eq!(last["origin"], "loop_run", "{last}");
}

/// Nothing a server lists loosens a denial: a pinned tool the manifest
/// denies stays denied when the server calls it destructive (the hint set
/// `ask`, which a person or a product's consent could pass), and
/// `[mcp] default_permission = "deny"` denies every tool the server lists
/// (they got `ask`).
#[tokio::test]
async fn nothing_a_server_lists_loosens_a_denial() {
    let (fake, host) = fake_and_host(Script::default()).await;
    let (location, _dir) = install_edited(
        &host,
        &[
            (
                "description = \"Echo (pinned).\"\ndefault_permission = \"allow\"",
                "description = \"Echo (pinned).\"\ndefault_permission = \"deny\"",
            ),
            (
                "max_tools = 8\ndefault_permission = \"allow\"",
                "max_tools = 8\ndefault_permission = \"deny\"",
            ),
        ],
    );
    fake.script(|s| {
        for tool in &mut s.tools {
            if tool["name"] == "echo" {
                tool["annotations"] = json!({"destructiveHint": true});
            }
        }
    });
    assert!(location.refresh_hosted().await.is_empty());
    let snapshot = location.snapshot();
    let echo = by_id(&snapshot, "fake-mcp.echo");
    assert_eq!(echo.def().default_permission, Permission::Deny);
    assert!(echo.def().effects.contains(&Effect::ExternalWrite));
    let weather = by_id(&snapshot, "fake-mcp.weather");
    assert_eq!(weather.def().default_permission, Permission::Deny);
}

/// A grant for a discovered tool is for the tool as the server listed it:
/// re-listed destructive (or with another schema), it asks again. The grant
/// was bound to the manifest alone, which a server's change leaves as it is.
#[tokio::test]
async fn a_grant_for_a_discovered_tool_ends_when_the_server_changes_it() {
    let (fake, host) = fake_and_host(Script::default()).await;
    let (location, _dir) = install(&host, MCP_URL);
    assert!(location.refresh_hosted().await.is_empty());
    let weather = || Invocation::new("fake-mcp.weather", json!({"city": "Oslo"}), Origin::LoopRun);
    let InvokeOutcome::NeedsApproval(request) = location.invoke(weather()).await.unwrap() else {
        panic!("loop_run is gated_unless_granted");
    };
    let grant = warden_host::Resolution::ApproveAndGrant(warden_registry::GrantTerms::default());
    host.approvals()
        .resolve(&request.id, grant, warden_registry::now_millis())
        .await
        .unwrap();
    let resumed = location.resume(&request.id, weather()).await.unwrap();
    assert!(
        matches!(resumed, InvokeOutcome::Completed(_)),
        "{resumed:?}"
    );
    // The server re-lists the tool destructive, and announces it while
    // answering the call the grant covers.
    let mut hosted = location.hosted_changes();
    fake.script(|s| {
        s.notify_list_changed = true;
        for tool in &mut s.tools {
            if tool["name"] == "weather" {
                tool["annotations"] = json!({"destructiveHint": true});
            }
        }
    });
    let covered = location.invoke(weather()).await.unwrap();
    assert!(
        matches!(covered, InvokeOutcome::Completed(_)),
        "{covered:?}"
    );
    hosted[0].changed().await.unwrap();
    fake.script(|s| s.notify_list_changed = false);
    assert!(location.refresh_hosted().await.is_empty());
    let snapshot = location.snapshot();
    assert!(
        by_id(&snapshot, "fake-mcp.weather")
            .def()
            .effects
            .contains(&Effect::ExternalWrite)
    );
    let changed = location.invoke(weather()).await.unwrap();
    assert!(
        matches!(changed, InvokeOutcome::NeedsApproval(_)),
        "{changed:?}"
    );
}

/// A pinned tool is the same tool before and after the first listing (when
/// the server lists it alike): an approval asked for before the listing
/// resumes after it. Only listed tools were bound to the tool as published,
/// and the listing changed the pinned tool's identity under its approval.
#[tokio::test]
async fn an_approval_asked_before_the_first_listing_resumes_after_it() {
    let (_fake, host) = fake_and_host(Script::default()).await;
    let (location, _dir) = install(&host, MCP_URL);
    let echo = || Invocation::new("fake-mcp.echo", json!({"text": "hi"}), Origin::LoopRun);
    let InvokeOutcome::NeedsApproval(request) = location.invoke(echo()).await.unwrap() else {
        panic!("loop_run is gated_unless_granted");
    };
    assert!(location.refresh_hosted().await.is_empty());
    host.approvals()
        .resolve(
            &request.id,
            warden_host::Resolution::ApproveOnce,
            warden_registry::now_millis(),
        )
        .await
        .unwrap();
    let resumed = location.resume(&request.id, echo()).await.unwrap();
    assert!(
        matches!(resumed, InvokeOutcome::Completed(_)),
        "{resumed:?}"
    );
}

/// Following a server whose required account is not connected sends it
/// nothing (every `serve` start contacted a bundled server nobody had
/// connected): the listing counts as refused for want of authorization
/// without being sent, so a call of one of its tools says what to connect.
#[tokio::test]
async fn a_server_without_its_account_is_not_contacted_by_the_follower() {
    let fake = FakeMcp::start(Script::default()).await;
    let config = HostConfig {
        egress: testing::config(fake.ca(), &[(MCP_HOST, 443)]),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(warden_egress::secrets::MemoryStore::new()))
        .resolver(Arc::new(fake.server().resolver(&[MCP_HOST])))
        .build()
        .unwrap();
    let (location, _dir) = install(&host, MCP_URL);
    let follower = tokio::spawn({
        let location = location.clone();
        async move { location.follow_hosted().await }
    });
    // `weather` is not pinned: it is known only once the server is listed,
    // or once the follower has taken the listing as refused.
    let refused = async {
        loop {
            let outcome = location.invoke(weather()).await.unwrap();
            if let InvokeOutcome::Failed(failure) = &outcome
                && failure.code() == "auth_required"
            {
                return outcome;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(20), refused)
        .await
        .expect("the follower took the listing as refused");
    let InvokeOutcome::Failed(failure) = &outcome else {
        unreachable!()
    };
    let auth = failure.auth_details().expect("what to connect");
    assert_eq!(auth.vendor.as_deref(), Some("example"));
    assert!(
        fake.requests().is_empty(),
        "nothing was sent: {:?}",
        fake.methods()
    );
    follower.abort();
}

/// Issue 44: a hosted call was cut at the deadline of a WASM tool (10 s by
/// default; 300 ms here), not the hosted lane's own (60 s by default,
/// `[mcp] call_timeout_secs`): a 15 s remote tool always timed out.
#[tokio::test]
async fn a_hosted_call_runs_under_the_lanes_deadline_not_a_wasm_tools() {
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    rmcp.catalog(|c| {
        c.tools
            .push(json!({"name": "slow", "inputSchema": {"type": "object"}}))
    });
    let mut config = HostConfig {
        hosted: LaneLimits {
            call_timeout: Duration::from_secs(30),
            ..LaneLimits::default()
        },
        ..HostConfig::default()
    };
    config.runtime.defaults.timeout = Duration::from_millis(300);
    let host = rmcp_host(&rmcp, config);
    let (location, _dir) = install(&host, rmcp_mcp::URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());
    let done = completed(&location, "fake-mcp.slow", json!({"ms": 1000})).await;
    assert_eq!(done.content, [ContentBlock::text("slept 1000 ms")]);
    assert_eq!(done.text, "slept 1000 ms");
}

/// Issue 42, attacked through the hosted lane: an `[mcp]` package installed
/// over the one whose account the user allowed (same id, same server) sent
/// the account's token, since consent was keyed by the id. The hosted lane's
/// own transport now asks as the installed content too: the call is refused
/// (`changed`) and no request carries the token.
#[tokio::test]
async fn a_replaced_mcp_package_does_not_send_the_allowed_packages_token() {
    let (fake, location, _dir) = setup(Script {
        require_token: true,
        ..Script::default()
    })
    .await;
    // The first call pins the user's consent to the package installed now.
    completed(&location, "fake-mcp.echo", json!({"text": "hi"})).await;

    let replacement = tempfile::tempdir().unwrap();
    write_package(replacement.path(), MCP_URL);
    let manifest = replacement.path().join("manifest.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("Echo (pinned).", "Echo (replaced)."),
    )
    .unwrap();
    location
        .install_with(
            &PackageSource::Dir(replacement.path().into()),
            warden_host::Replace::Yes,
        )
        .unwrap();
    let sent = fake.requests().len();
    let outcome = location
        .invoke(call("fake-mcp.echo", json!({"text": "hi"})))
        .await
        .unwrap();
    let InvokeOutcome::Failed(failure) = &outcome else {
        panic!("the replacement ran with the account: {outcome:?}")
    };
    let details = failure.auth_details().expect("auth_required");
    assert_eq!(
        details.reason,
        Some(warden_egress::secrets::AuthReason::Changed)
    );
    let bearer = format!("Bearer {MCP_TOKEN}");
    assert!(
        fake.requests()[sent..]
            .iter()
            .all(|r| r.header("authorization") != Some(bearer.as_str())),
        "the token was sent for the replacement"
    );
}

/// Issue 44: a hosted tool's image reached the caller as one text block of
/// JSON with the base64 inside. Its content now arrives as blocks (image
/// bytes, annotations, resources intact), described for a text-only
/// reader; an image hiding the account's token in its bytes is withheld,
/// the block beside it kept.
#[tokio::test]
async fn a_hosted_tools_content_arrives_as_blocks_and_an_image_hiding_the_token_is_withheld() {
    use warden_core::content::Body;
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    rmcp.catalog(|c| {
        for name in ["picture", "leak_image"] {
            c.tools
                .push(json!({"name": name, "inputSchema": {"type": "object"}}));
        }
    });
    let host = rmcp_host(&rmcp, HostConfig::default());
    let (location, _dir) = install(&host, rmcp_mcp::URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());

    let done = completed(&location, "fake-mcp.picture", json!({})).await;
    assert_eq!(done.output, serde_json::Value::Null);
    let kinds: Vec<&str> = done.content.iter().map(|b| b.body.kind()).collect();
    assert_eq!(kinds, ["text", "image", "resource", "resource_link"]);
    let Body::Image(image) = &done.content[1].body else {
        panic!("{:?}", done.content)
    };
    assert_eq!(image.data, rmcp_mcp::tiny_png());
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(
        done.content[1].annotations.as_ref().unwrap()["audience"],
        json!(["user"])
    );
    assert!(
        done.text
            .starts_with("a tiny picture\n[image: image/png, 70 bytes]"),
        "{}",
        done.text
    );

    let done = completed(&location, "fake-mcp.leak_image", json!({})).await;
    assert_eq!(
        done.content,
        [
            ContentBlock::text("[image content withheld: it carried a secret of this call]"),
            ContentBlock::text("nothing to see"),
        ]
    );
    assert!(
        rmcp.received()
            .iter()
            .any(|r| r.header("authorization") == Some(format!("Bearer {MCP_TOKEN}").as_str())),
        "the server had the token to hide"
    );
}

fn progress_host(rmcp: &RmcpServer, call_timeout: Duration) -> Host {
    rmcp.catalog(|c| {
        for name in ["progress", "wait"] {
            c.tools
                .push(json!({"name": name, "inputSchema": {"type": "object"}}));
        }
    });
    rmcp_host(
        rmcp,
        HostConfig {
            hosted: LaneLimits {
                call_timeout,
                max_call_timeout: Duration::from_secs(60),
                ..LaneLimits::default()
            },
            ..HostConfig::default()
        },
    )
}

/// Issue 44: none of a server's progress reached the caller, and a long
/// call was cut at its timeout however much it reported. Each report now
/// reaches the call's sink and resets the timeout (up to the operator's
/// maximum): 15 reports 100 ms apart outlive a 1 s timeout.
#[tokio::test]
async fn a_servers_progress_reaches_the_caller_and_keeps_a_long_call_alive() {
    use warden_core::lane::{Progress, ProgressSink};
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    let host = progress_host(&rmcp, Duration::from_secs(1));
    let (location, _dir) = install(&host, rmcp_mcp::URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());
    let reports: Arc<std::sync::Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let reports = reports.clone();
        ProgressSink::new(move |p| reports.lock().unwrap().push(p))
    };
    let invocation = call("fake-mcp.progress", json!({"steps": 15, "gap_ms": 100})).reporting(sink);
    let outcome = location.invoke(invocation).await.unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(done.content, [ContentBlock::text("15 steps done")]);
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 15, "{reports:?}");
    assert_eq!(
        reports[14],
        Progress {
            progress: 15.0,
            total: Some(15.0),
            message: Some("step 15 of 15".into())
        }
    );
}

/// Wait (bounded) until `check` holds.
async fn until(what: &str, check: impl Fn() -> bool) {
    let wait = async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("{what} never happened"));
}

/// Issue 44: a client's cancellation was not passed on. A cancelled call
/// now ends `cancelled` (audited) and the server is told
/// (`notifications/cancelled`): nothing is left running there. A silent
/// call past its timeout is cancelled at the server too.
#[tokio::test]
async fn a_cancelled_call_ends_cancelled_audited_and_the_server_stops() {
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    rmcp.catalog(|c| {
        c.tools
            .push(json!({"name": "wait", "inputSchema": {"type": "object"}}))
    });
    let data = tempfile::tempdir().unwrap();
    let config = HostConfig {
        egress: testing::config(rmcp.ca(), &[(rmcp_mcp::HOST, 443)]),
        data_dir: Some(data.path().to_path_buf()),
        hosted: LaneLimits {
            call_timeout: Duration::from_millis(500),
            ..LaneLimits::default()
        },
        ..HostConfig::default()
    };
    let log = warden_host::AuditLog::new(
        data.path().join("audit.jsonl"),
        warden_host::DEFAULT_AUDIT_MAX_BYTES,
    );
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets()))
        .resolver(Arc::new(rmcp.resolver()))
        .audit_log(log)
        .build()
        .unwrap();
    let (location, _dir) = install(&host, rmcp_mcp::URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());

    let cancel = warden_host::CancellationToken::new();
    let running = tokio::spawn({
        let location = location.clone();
        let invocation = call("fake-mcp.wait", json!({})).cancelled_by(cancel.clone());
        async move { location.invoke(invocation).await }
    });
    until("the server's call started", || rmcp.waits().0 == 1).await;
    cancel.cancel();
    let outcome = running.await.unwrap().unwrap();
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(failure.code(), warden_core::ErrorCode::Cancelled);
    until("the server's call was cancelled", || rmcp.waits() == (0, 1)).await;
    let audit = std::fs::read_to_string(data.path().join("audit.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(last["outcome"], "cancelled");
    assert_eq!(last["capability"], "fake-mcp.wait");

    // Silent past the server's timeout: `timeout`, and cancelled there too.
    let outcome = location
        .invoke(call("fake-mcp.wait", json!({})))
        .await
        .unwrap();
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(failure.code(), warden_core::ErrorCode::Timeout);
    until("the timed-out call was cancelled", || {
        rmcp.waits() == (0, 2)
    })
    .await;
}

/// A caller's client that answers every request: a name for a form, a
/// greeting for a sampling request; it keeps what it was asked.
#[derive(Debug, Default)]
struct Answering(std::sync::Mutex<Vec<serde_json::Value>>);

impl warden_core::lane::Relay for Answering {
    fn elicit(
        &self,
        params: serde_json::Value,
    ) -> warden_core::net::BoxFuture<'_, Result<serde_json::Value, warden_core::lane::RelayError>>
    {
        self.0.lock().unwrap().push(params);
        Box::pin(async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) })
    }

    fn sample(
        &self,
        params: serde_json::Value,
    ) -> warden_core::net::BoxFuture<'_, Result<serde_json::Value, warden_core::lane::RelayError>>
    {
        self.0.lock().unwrap().push(params);
        Box::pin(async {
            Ok(json!({"role": "assistant", "model": "test",
                "content": {"type": "text", "text": "hello"}}))
        })
    }
}

/// Issue 44: a server that asked for input hung until the timeout (an
/// elicitation) or was told it blamed itself (a sampling request). Both now
/// reach the caller's client within the call, and without one they are
/// refused at once with MCP's "not supported" (-32601) so the server can
/// fall back.
#[tokio::test]
async fn a_servers_elicitation_and_sampling_reach_the_callers_client_or_are_refused_at_once() {
    let rmcp = RmcpServer::start(rmcp_mcp::Catalog::default()).await;
    rmcp.catalog(|c| {
        for name in ["ask", "sample"] {
            c.tools
                .push(json!({"name": name, "inputSchema": {"type": "object"}}));
        }
    });
    let host = rmcp_host(&rmcp, HostConfig::default());
    let (location, _dir) = install(&host, rmcp_mcp::URL);
    assert!(location.refresh_hosted_package("fake-mcp").await.is_empty());
    let text = |done: warden_host::Completed| done.text;

    let client = Arc::new(Answering::default());
    let asked = call("fake-mcp.ask", json!({})).relaying(client.clone());
    let InvokeOutcome::Completed(done) = location.invoke(asked).await.unwrap() else {
        panic!("the call completes")
    };
    assert_eq!(text(done), r#""accept": {"name":"Ada"}"#);
    let sampled = call("fake-mcp.sample", json!({})).relaying(client.clone());
    let InvokeOutcome::Completed(done) = location.invoke(sampled).await.unwrap() else {
        panic!("the call completes")
    };
    assert_eq!(text(done), "sampled: hello");
    let asked = client.0.lock().unwrap().clone();
    assert_eq!(asked[0]["message"], "Your name?");
    assert_eq!(asked[1]["messages"][0]["content"]["text"], "Say hello");

    for tool in ["fake-mcp.ask", "fake-mcp.sample"] {
        let outcome = location.invoke(call(tool, json!({}))).await.unwrap();
        let InvokeOutcome::Completed(done) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(done.text, "refused: -32601", "{tool}");
    }
}

/// A tool the server runs only as a task (`execution.taskSupport =
/// "required"`, which rmcp's `Tool` drops; the lane reads it from the
/// listing) stays listed, and a call of it is refused naming why, without
/// reaching the server.
#[tokio::test]
async fn a_task_only_tool_is_listed_and_its_call_refused_naming_why() {
    let mut render = warden_tests::fake_mcp::echo_tool();
    render["name"] = json!("render");
    render["execution"] = json!({"taskSupport": "required"});
    let (fake, location, _dir) = setup(Script {
        tools: vec![warden_tests::fake_mcp::echo_tool(), render],
        ..Script::default()
    })
    .await;
    assert!(location.refresh_hosted().await.is_empty());
    assert!(tool_ids(&location).contains(&"fake-mcp.render".to_owned()));
    let outcome = location
        .invoke(call("fake-mcp.render", json!({"text": "hi"})))
        .await
        .unwrap();
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        failure.code(),
        "protocol_unsupported",
        "{}",
        failure.message()
    );
    assert!(
        failure.message().contains("MCP task"),
        "{}",
        failure.message()
    );
    assert!(
        !fake.methods().iter().any(|m| m == "tools/call"),
        "{:?}",
        fake.methods()
    );
    completed(&location, "fake-mcp.echo", json!({"text": "hi"})).await;
}
