//! Hosted MCP servers through the `warden` binary: `mcp add|list|remove`,
//! `install` of an `[mcp]` package, `call`, and `serve` with an MCP client.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use warden_tests::Warden;
use warden_tests::fake_mcp::{
    AUTH_HOST, FakeMcp, MCP_HOST, MCP_TOKEN, MCP_URL, OTHER_AUTH_HOST, Script, write_package,
};

#[tokio::test(flavor = "multi_thread")]
async fn mcp_add_probes_lists_calls_and_removes() {
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);
    let added = warden.run(&["mcp", "add", "fake", MCP_URL]);
    assert!(added.code == 0, "{}", added.all());
    assert!(added.all().contains("added mcp-fake"), "{}", added.all());
    // The probe initialized without credentials.
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.header("authorization").is_none())
    );
    let listed = warden.run(&["mcp", "list"]);
    assert!(
        listed.all().contains("mcp-fake") && listed.all().contains(MCP_URL),
        "{}",
        listed.all()
    );

    // `ask` by default: --approve-once answers the approval.
    let called = call_approved(&warden, "mcp-fake.weather", r#"{"city": "Oslo"}"#);
    assert!(called.code == 0, "{}", called.all());
    assert!(called.all().contains("21.5"), "{}", called.all());

    let removed = warden.run(&["mcp", "remove", "fake"]);
    assert!(removed.code == 0, "{}", removed.all());
    let listed = warden.run(&["mcp", "list"]);
    assert!(!listed.all().contains("mcp-fake"), "{}", listed.all());
    let gone = warden.run(&[
        "call",
        "mcp-fake.weather",
        "--input",
        "{}",
        "--approve-once",
    ]);
    assert!(gone.code != 0, "{}", gone.all());
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_add_names_the_auth_a_server_needs_and_bearer_reaches_only_it() {
    let fake = FakeMcp::start(Script {
        require_token: true,
        ..Script::default()
    })
    .await;
    let warden = crate::warden();
    fake.configure(&warden);
    let refused = warden.run(&["mcp", "add", "fake", MCP_URL]);
    assert!(refused.code != 0);
    assert!(
        refused.all().contains("requires authorization (HTTP 401)"),
        "{}",
        refused.all()
    );
    assert!(refused.all().contains("--auth bearer"), "{}", refused.all());
    assert!(!warden.data_dir().join("mcp/mcp-fake").exists());

    let added = warden.run(&["mcp", "add", "fake", MCP_URL, "--auth", "bearer"]);
    assert!(added.code == 0, "{}", added.all());
    let set = warden.run_with_stdin(&["secret", "set", "mcp-fake", "token"], MCP_TOKEN);
    assert!(set.code == 0, "{}", set.all());
    let called = warden.run(&[
        "call",
        "mcp-fake.echo",
        "--input",
        r#"{"text": "hi"}"#,
        "--approve-once",
    ]);
    assert!(called.code == 0, "{}", called.all());
    // The server echoed the token it got; the user sees it redacted.
    assert!(!called.all().contains(MCP_TOKEN), "{}", called.all());
    assert!(called.all().contains("[REDACTED]"), "{}", called.all());
    let with_token = format!("Bearer {MCP_TOKEN}");
    let authorized: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.header("authorization") == Some(with_token.as_str()))
        .collect();
    assert!(!authorized.is_empty());
    assert!(authorized.iter().all(|r| r.target == "/mcp"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_installed_mcp_package_runs_through_call_and_serve() {
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), MCP_URL);
    let checked = warden.run(&["check", dir.path().to_str().unwrap()]);
    assert!(checked.code == 0, "{}", checked.all());
    let installed = warden.run(&["install", dir.path().to_str().unwrap()]);
    assert!(installed.code == 0, "{}", installed.all());
    // Its account is not connected: install says how, and sends nothing.
    assert!(
        installed
            .all()
            .contains("discovered once an account is connected: warden auth connect fake-mcp"),
        "{}",
        installed.all()
    );
    assert!(fake.requests().is_empty(), "install contacted the server");
    // A required credential is checked before anything is sent.
    let refused = warden.run(&["--json", "call", "fake-mcp.weather", "--input", "{}"]);
    assert!(refused.all().contains("auth_required"), "{}", refused.all());
    assert!(!fake.methods().iter().any(|m| m == "tools/call"));
    let set = warden.run_with_stdin(&["secret", "set", "example", "mcp_token"], MCP_TOKEN);
    assert!(set.code == 0, "{}", set.all());
    let called = warden.run(&["--json", "call", "fake-mcp.weather", "--input", "{}"]);
    assert!(called.code == 0, "{}", called.all());
    assert!(called.all().contains("21.5"), "{}", called.all());

    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client =
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .expect("MCP handshake with warden serve");
    // The server's tools are listed in the background and announced with
    // tools/list_changed; until then the pinned `echo` is there.
    let mut tools = client.list_all_tools().await.unwrap();
    for _ in 0..50 {
        if tools.iter().any(|t| t.name.ends_with("weather")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        tools = client.list_all_tools().await.unwrap();
    }
    let weather = tools
        .iter()
        .find(|t| t.name.ends_with("weather"))
        .unwrap_or_else(|| panic!("{:?}", tools.iter().map(|t| &t.name).collect::<Vec<_>>()));
    let request = CallToolRequestParams::new(weather.name.clone())
        .with_arguments(json!({"city": "Oslo"}).as_object().unwrap().clone());
    let result = call_after_grant(&client, &warden, request).await;
    assert_eq!(result.structured_content, Some(json!({"celsius": 21.5})));
    client.cancel().await.unwrap();
}

/// `warden --json call <tool> --input <input> --approve-once` (hosted tools
/// ask by default; the flag answers the approval).
pub(crate) fn call_approved(
    warden: &warden_tests::Warden,
    tool: &str,
    input: &str,
) -> warden_tests::Run {
    warden.run(&["--json", "call", tool, "--input", input, "--approve-once"])
}

/// An MCP client of `warden serve` (stdio) for `warden`'s data, and the
/// tool it serves whose name ends with `suffix`.
pub(crate) async fn serve_and_find(
    warden: &warden_tests::Warden,
    suffix: &str,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, ()>,
    rmcp::model::Tool,
) {
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client =
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .expect("MCP handshake with warden serve");
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name.ends_with(suffix))
        .unwrap_or_else(|| panic!("{:?}", tools.iter().map(|t| &t.name).collect::<Vec<_>>()))
        .clone();
    (client, tool)
}

/// Make `request`, which opens an approval, and approve it with a grant:
/// the same call then runs without asking.
pub(crate) async fn grant_by_calling(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    warden: &warden_tests::Warden,
    request: CallToolRequestParams,
) {
    let gated = client.call_tool(request).await.unwrap();
    let meta = &gated.meta.as_ref().expect("_meta").0;
    let approval = meta["warden/approvalId"].as_str().expect("approval id");
    let approved = warden.run(&["approvals", "approve", "--grant", approval]);
    assert!(approved.code == 0, "{}", approved.all());
}

/// Register the server at `url` as `mcp-<name>` and list its tools now.
pub(crate) fn add_and_refresh(warden: &warden_tests::Warden, name: &str, url: &str) {
    let added = warden.run(&["mcp", "add", name, url]);
    assert!(added.code == 0, "{}", added.all());
    let refreshed = warden.run(&["mcp", "refresh", &format!("mcp-{name}")]);
    assert!(refreshed.code == 0, "{}", refreshed.all());
}

/// An MCP client with `handler` of `warden serve` (stdio), and the names
/// of the tools it serves.
pub(crate) async fn serve_with<H: rmcp::ClientHandler>(
    warden: &warden_tests::Warden,
    handler: H,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, H>,
    Vec<String>,
) {
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client = handler
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .expect("MCP handshake with warden serve");
    let tools = client.list_all_tools().await.unwrap();
    let names = tools.iter().map(|t| t.name.to_string()).collect();
    (client, names)
}

/// The served tool whose name ends with `suffix`.
pub(crate) fn tool_named(tools: &[String], suffix: &str) -> String {
    tools
        .iter()
        .find(|t| t.ends_with(suffix))
        .unwrap_or_else(|| panic!("no tool ends with {suffix}: {tools:?}"))
        .clone()
}

/// What a test client that can be asked declares: form elicitation and
/// sampling.
pub(crate) fn asked_client_info(name: &str) -> rmcp::model::ClientConfig {
    let capabilities =
        serde_json::from_value(json!({"elicitation": {"form": {}}, "sampling": {}})).unwrap();
    rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new(name, "1"))
}

/// A client's acceptance of an elicitation with `content`.
pub(crate) fn accepted(content: serde_json::Value) -> rmcp::model::ElicitResult {
    serde_json::from_value(json!({"action": "accept", "content": content})).unwrap()
}

/// A client model's answer `text` to a sampling request.
#[expect(
    deprecated,
    reason = "sampling is still what servers of 2025-11-25 use"
)]
pub(crate) fn sampled(text: &str) -> rmcp::model::CreateMessageResult {
    serde_json::from_value(json!({"role": "assistant", "model": "test-model",
        "content": {"type": "text", "text": text}}))
    .unwrap()
}

/// Wait (bounded) until `check` holds.
pub(crate) async fn until(what: &str, check: impl Fn() -> bool) {
    let wait = async {
        while !check() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("{what} never happened"));
}

/// Call a tool whose origin is gated: the first call opens an approval,
/// the CLI approves it with a grant, the same call then runs.
pub(crate) async fn call_after_grant(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    warden: &warden_tests::Warden,
    request: CallToolRequestParams,
) -> rmcp::model::CallToolResult {
    grant_by_calling(client, warden, request.clone()).await;
    let result = client.call_tool(request).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_serve_picks_up_mcp_add_from_another_process() {
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client =
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .expect("MCP handshake with warden serve");
    let has_weather = |tools: &[rmcp::model::Tool]| {
        tools
            .iter()
            .any(|t| t.name.starts_with("mcp-fake") && t.name.ends_with("weather"))
    };
    assert!(!has_weather(&client.list_all_tools().await.unwrap()));
    let added = warden.run(&["mcp", "add", "fake", MCP_URL, "--auth", "none"]);
    assert!(added.code == 0, "{}", added.all());
    // The data dir is polled; the new server is listed, then announced.
    let mut seen = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if has_weather(&client.list_all_tools().await.unwrap()) {
            seen = true;
            break;
        }
    }
    assert!(
        seen,
        "the running server lists the added MCP server's tools"
    );
    let removed = warden.run(&["mcp", "remove", "fake"]);
    assert!(removed.code == 0, "{}", removed.all());
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if !has_weather(&client.list_all_tools().await.unwrap()) {
            gone = true;
            break;
        }
    }
    assert!(gone, "a removed server's tools are unpublished");
    client.cancel().await.unwrap();
}

/// A fake MCP server whose tokens `auth` issues, registered with
/// `warden mcp add fake` (which must succeed); what `add` printed.
async fn add_protected(
    auth: &warden_egress::testing::FakeAuthServer,
) -> (FakeMcp, Warden, warden_tests::Run) {
    let fake = FakeMcp::start(Script {
        oauth: Some(auth.clone()),
        ..Script::default()
    })
    .await;
    let warden = crate::warden();
    fake.configure(&warden);
    let added = warden.run(&["mcp", "add", "fake", MCP_URL]);
    assert!(added.code == 0, "{}", added.all());
    (fake, warden, added)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_that_requires_oauth_is_added_connected_and_called() {
    let auth = warden_egress::testing::FakeAuthServer::new(AUTH_HOST, 3600);
    // The 401 names the resource metadata: OAuth, discovered, not guessed.
    let (fake, warden, added) = add_protected(&auth).await;
    assert!(
        added.all().contains("warden auth connect mcp-fake"),
        "{}",
        added.all()
    );
    let manifest =
        std::fs::read_to_string(warden.data_dir().join("mcp/mcp-fake/manifest.toml")).unwrap();
    assert!(manifest.contains("method = \"oauth2_code\""), "{manifest}");
    assert!(
        manifest.contains("authorization_endpoint = \"https://auth.example.com/authorize\""),
        "{manifest}"
    );
    let listed = warden.run(&["--json", "mcp", "list"]);
    assert_eq!(listed.json()[0]["auth"], "oauth", "{}", listed.all());
    // Before connecting, the call is auth_required and nothing is called.
    let refused = warden.run(&["--json", "call", "mcp-fake.weather", "--input", "{}"]);
    assert_eq!(refused.code, 3, "{}", refused.all());
    assert_eq!(refused.json()["reason"], "missing");
    assert_eq!(refused.json()["vendor"], "mcp-fake");
    assert_eq!(refused.json()["connect"], "warden auth connect mcp-fake");

    // PKCE with a dynamically registered client and the RFC 8707 resource.
    let (_, url) = crate::auth::connect_as(&warden, &auth, "mcp-fake").await;
    let resource = "resource=https%3A%2F%2Fmcp.example.com%2Fmcp";
    assert!(url.contains(resource), "{url}");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let token_request = fake
        .requests()
        .into_iter()
        .find(|r| r.server_name.as_deref() == Some(AUTH_HOST) && r.target == "/token")
        .expect("a token request");
    let body = String::from_utf8_lossy(&token_request.body).into_owned();
    assert!(body.contains(resource), "{body}");
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.server_name.as_deref() == Some(AUTH_HOST) && r.target == "/register"),
        "the client was registered dynamically"
    );

    let called = call_approved(&warden, "mcp-fake.weather", r#"{"city": "Oslo"}"#);
    assert!(called.code == 0, "{}", called.all());
    assert_eq!(called.json()["output"], json!({"celsius": 21.5}));
    // The issued token went to the MCP endpoint and never came back.
    let calls: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.target == "/mcp" && r.server_name.as_deref() == Some(MCP_HOST))
        .collect();
    assert!(
        calls.iter().any(|r| auth.authorized(r)),
        "the token was sent"
    );
    assert!(!called.all().contains("Bearer "), "{}", called.all());

    // A scope step-up: the server asks for more, the answer says how to ask.
    fake.script(|s| s.insufficient_scope = Some("admin".into()));
    let stepped = call_approved(&warden, "mcp-fake.weather", "{}");
    assert_eq!(stepped.code, 3, "{}", stepped.all());
    assert_eq!(stepped.json()["reason"], "insufficient_scope");
    let connect = stepped.json()["connect"].as_str().unwrap().to_owned();
    assert!(connect.ends_with("--scope admin"), "{connect}");
}

/// A server that names another authorization server after `mcp add` (taken
/// over, or lying): `auth connect` stays with the authorization server the
/// server was added with. The other one gets no registration, no
/// authorization request, no code and no token; the call carries the token
/// the recorded server issued.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_names_another_authorization_server_after_add_does_not_get_the_connect() {
    let auth = warden_egress::testing::FakeAuthServer::new(AUTH_HOST, 3600);
    let (fake, warden, _) = add_protected(&auth).await;
    let other = warden_egress::testing::FakeAuthServer::new(OTHER_AUTH_HOST, 3600);
    let switched_at = fake.requests().len();
    fake.script(|s| {
        s.other_auth = Some(other.clone());
        s.resource_metadata = Some(json!({
            "resource": MCP_URL,
            "authorization_servers": [other.issuer()],
        }));
    });

    let (_, url) = crate::auth::connect_as(&warden, &auth, "mcp-fake").await;
    assert!(
        url.starts_with("https://auth.example.com/authorize?"),
        "{url}"
    );
    let after: Vec<_> = fake.requests().split_off(switched_at);
    // Not vacuous: the connect read the switched metadata.
    assert!(
        after
            .iter()
            .any(|r| r.server_name.as_deref() == Some(MCP_HOST)
                && r.target
                    .starts_with("/.well-known/oauth-protected-resource")),
        "the connect did not read the resource metadata again"
    );
    // At most the other server's public metadata was read.
    let to_other: Vec<String> = after
        .iter()
        .filter(|r| r.server_name.as_deref() == Some(OTHER_AUTH_HOST))
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    assert!(
        to_other.iter().all(|r| r.starts_with("GET /.well-known/")),
        "{to_other:?}"
    );
    assert!(other.registered().is_empty());
    let manifest =
        std::fs::read_to_string(warden.data_dir().join("mcp/mcp-fake/manifest.toml")).unwrap();
    assert!(
        manifest.contains("authorization_endpoint = \"https://auth.example.com/authorize\""),
        "{manifest}"
    );

    let called = call_approved(&warden, "mcp-fake.weather", r#"{"city": "Oslo"}"#);
    assert!(called.code == 0, "{}", called.all());
    let bearers: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| {
            r.header("authorization")
                .is_some_and(|v| v.starts_with("Bearer "))
        })
        .collect();
    assert!(
        bearers.iter().any(|r| auth.authorized(r)),
        "the token was sent"
    );
    assert!(
        bearers
            .iter()
            .all(|r| r.server_name.as_deref() == Some(MCP_HOST)),
        "a token went elsewhere: {:?}",
        bearers.iter().map(|r| &r.server_name).collect::<Vec<_>>()
    );
}

/// An authorization server whose issuer has a path (a tenant or realm):
/// `mcp add` finds it through the resource metadata, and `auth connect`
/// registers with it there — not at the origin's well-known metadata, which
/// it does not publish.
#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_with_a_path_issuer_is_connected_at_its_path() {
    let auth =
        warden_egress::testing::FakeAuthServer::new(AUTH_HOST, 3600).with_issuer_path("/tenant1");
    let (fake, warden, _) = add_protected(&auth).await;
    let manifest =
        std::fs::read_to_string(warden.data_dir().join("mcp/mcp-fake/manifest.toml")).unwrap();
    assert!(
        manifest
            .contains("authorization_endpoint = \"https://auth.example.com/tenant1/authorize\""),
        "{manifest}"
    );
    let (_, url) = crate::auth::connect_as(&warden, &auth, "mcp-fake").await;
    assert!(
        url.starts_with("https://auth.example.com/tenant1/authorize?"),
        "{url}"
    );
    let auth_requests: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| r.server_name.as_deref() == Some(AUTH_HOST))
        .map(|r| r.target)
        .collect();
    assert!(
        auth_requests.iter().any(|t| t == "/tenant1/register"),
        "registered at the issuer's path: {auth_requests:?}"
    );
    let called = call_approved(&warden, "mcp-fake.weather", r#"{"city": "Oslo"}"#);
    assert!(called.code == 0, "{}", called.all());
    assert_eq!(called.json()["output"], json!({"celsius": 21.5}));
}

/// Issue 44: `install` of an `[mcp]` package did not discover its tools
/// (only `mcp add`, `mcp refresh` or a first call did); it lists them when
/// it can and keeps them for `list`.
#[tokio::test(flavor = "multi_thread")]
async fn install_discovers_the_tools_of_a_server_that_needs_no_account() {
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), MCP_URL);
    let manifest = dir.path().join("manifest.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    // The same server without credentials: no account to wait for.
    let credentials = text.find("[[mcp.credentials]]").unwrap();
    let pinned = text.find("[[tools]]").unwrap();
    let auth = text.find("[auth.example]").unwrap();
    let open = format!("{}{}", &text[..credentials], &text[pinned..auth]).replace(
        r#"effects = ["use_secret", "network"]"#,
        r#"effects = ["network"]"#,
    );
    std::fs::write(&manifest, open).unwrap();
    let installed = warden.run(&["--json", "install", dir.path().to_str().unwrap()]);
    assert!(installed.code == 0, "{}", installed.all());
    let out = installed.json();
    assert_eq!(out["discovered"], 2, "{out}");
    assert!(fake.methods().iter().any(|m| m == "tools/list"));
    // A later process lists the discovered tools without asking the server.
    let before = fake.requests().len();
    let listed = warden.run(&["list"]);
    assert!(
        listed.all().contains("fake-mcp_weather"),
        "{}",
        listed.all()
    );
    assert_eq!(fake.requests().len(), before, "list asked the server");
}
