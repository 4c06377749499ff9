//! A real MCP server (rmcp's own streamable-HTTP server over local HTTPS)
//! through the `warden` binary: `mcp add`, `mcp refresh`, `list` from the
//! kept catalog, `call`, and `serve` with an MCP client.

use std::sync::{Arc, Mutex};

use rmcp::model::CallToolRequestParams;
use serde_json::json;
use warden_tests::rmcp_mcp::{Catalog, RmcpServer, URL};

#[tokio::test(flavor = "multi_thread")]
async fn a_real_mcp_server_through_mcp_add_refresh_list_call_and_serve() {
    let rmcp = RmcpServer::start(Catalog::default()).await;
    let warden = crate::warden();
    rmcp.configure(&warden);
    let added = warden.run(&["mcp", "add", "real", URL]);
    assert!(added.code == 0, "{}", added.all());

    // `refresh` lists the server now; the next process publishes the kept
    // catalog without asking the server again.
    let refreshed = warden.run(&["mcp", "refresh", "mcp-real"]);
    assert!(refreshed.code == 0, "{}", refreshed.all());
    assert!(
        refreshed.all().contains("mcp-real: 2 tools"),
        "{}",
        refreshed.all()
    );
    let before = rmcp.received().len();
    let listed = warden.run(&["list"]);
    assert!(
        listed.all().contains("mcp-real.weather"),
        "{}",
        listed.all()
    );
    assert!(listed.all().contains("mcp-real.echo"), "{}", listed.all());
    assert_eq!(rmcp.received().len(), before, "list sends nothing");
    let unknown = warden.run(&["mcp", "refresh", "nope"]);
    assert!(unknown.code != 0, "{}", unknown.all());
    assert!(
        unknown
            .all()
            .contains("`nope` is not an installed [mcp] package"),
        "{}",
        unknown.all()
    );

    // `ask` by default: --approve-once answers the approval.
    let called = crate::hosted::call_approved(&warden, "mcp-real.weather", r#"{"city": "Oslo"}"#);
    assert!(called.code == 0, "{}", called.all());
    assert_eq!(
        called.json()["output"],
        json!({"city": "Oslo", "celsius": 21})
    );
    assert_eq!(rmcp.calls(), 1);

    // The kept catalog is served at once.
    let (client, weather) = crate::hosted::serve_and_find(&warden, "weather").await;
    let request = CallToolRequestParams::new(weather.name.clone())
        .with_arguments(json!({"city": "Bergen"}).as_object().unwrap().clone());
    let result = crate::hosted::call_after_grant(&client, &warden, request).await;
    assert_eq!(
        result.structured_content,
        Some(json!({"city": "Bergen", "celsius": 21}))
    );
    assert_eq!(rmcp.calls(), 2);
    client.cancel().await.unwrap();
}

/// A real MCP server that also serves `tools`, and a `warden` configured
/// to reach it.
async fn server_with(tools: &[&str]) -> (RmcpServer, warden_tests::Warden) {
    let rmcp = RmcpServer::start(Catalog::default()).await;
    rmcp.catalog(|c| {
        for name in tools {
            c.tools
                .push(json!({"name": name, "inputSchema": {"type": "object"}}));
        }
    });
    let warden = crate::warden();
    rmcp.configure(&warden);
    (rmcp, warden)
}

/// Issue 44: a remote tool's image reached `warden call` and MCP clients
/// as one text block of JSON with the base64 inside. `call` now shows the
/// text, names the image and saves it under `--output-dir`; `serve` hands
/// the client the server's blocks as blocks.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_image_is_saved_by_call_and_served_as_an_image_block() {
    let (_rmcp, warden) = server_with(&["picture"]).await;
    let added = warden.run(&["mcp", "add", "real", URL]);
    assert!(added.code == 0, "{}", added.all());

    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("saved");
    let dir_arg = dir.to_str().unwrap();
    let called = warden.run(&[
        "call",
        "mcp-real.picture",
        "--input",
        "{}",
        "--approve-once",
        "--output-dir",
        dir_arg,
    ]);
    assert!(called.code == 0, "{}", called.all());
    let png = dir.join("mcp-real.picture-2.png");
    assert_eq!(
        std::fs::read(&png).unwrap(),
        warden_tests::rmcp_mcp::tiny_png()
    );
    assert_eq!(
        called.stdout.lines().collect::<Vec<_>>(),
        [
            "a tiny picture".to_owned(),
            format!("[image image/png, 70 bytes] saved to {}", png.display()),
            "[resource file:///notes.txt]".to_owned(),
            "notes".to_owned(),
            "[resource link big.bin: file:///big.bin]".to_owned(),
        ]
    );
    // Without the directory the image is named, not dumped.
    let named = warden.run(&[
        "call",
        "mcp-real.picture",
        "--input",
        "{}",
        "--approve-once",
    ]);
    assert!(
        named
            .stdout
            .contains("[image image/png, 70 bytes] not shown: pass --output-dir DIR to save it"),
        "{}",
        named.all()
    );
    assert!(!named.stdout.contains("iVBOR"), "{}", named.all());

    let (client, picture) = crate::hosted::serve_and_find(&warden, "picture").await;
    let request =
        CallToolRequestParams::new(picture.name.clone()).with_arguments(serde_json::Map::new());
    let result = crate::hosted::call_after_grant(&client, &warden, request).await;
    let blocks: Vec<serde_json::Value> = result
        .content
        .iter()
        .map(|b| serde_json::to_value(b).unwrap())
        .collect();
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(warden_tests::rmcp_mcp::tiny_png());
    assert_eq!(blocks[0], json!({"type": "text", "text": "a tiny picture"}));
    assert_eq!(
        blocks[1],
        json!({"type": "image", "mimeType": "image/png", "data": data,
            "annotations": {"audience": ["user"], "priority": 0.5}})
    );
    assert_eq!(blocks[2]["resource"]["text"], "notes");
    assert_eq!(blocks[3]["type"], "resource_link");
    assert_eq!(result.structured_content, None);
    client.cancel().await.unwrap();
}

/// A client that keeps the progress and the log messages it is sent.
#[derive(Clone, Default)]
struct Watching(
    Arc<Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
    Arc<Mutex<Vec<serde_json::Value>>>,
);

impl rmcp::ClientHandler for Watching {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }

    #[expect(deprecated, reason = "logging is still what clients of 2025-11-25 use")]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.1
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap());
    }
}

/// `logging/setLevel` to `level` (an MCP level name).
#[expect(deprecated, reason = "logging is still what clients of 2025-11-25 use")]
async fn set_level(client: &rmcp::service::Peer<rmcp::RoleClient>, level: &str) {
    let params = serde_json::from_value(json!({ "level": level })).unwrap();
    client.set_level(params).await.unwrap();
}

/// Issue 44 through `warden serve`: an MCP client's progress token gets
/// the remote server's progress, the level it sets gets the server's log
/// messages, and its `notifications/cancelled` stops the call at the
/// remote server (the call audited `cancelled`).
#[tokio::test(flavor = "multi_thread")]
async fn progress_and_cancellation_pass_through_serve_to_the_remote_server() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let (rmcp, warden) = server_with(&["progress", "wait", "chatty"]).await;
    crate::hosted::add_and_refresh(&warden, "real", URL);
    let watching = Watching::default();
    let (client, tools) = crate::hosted::serve_with(&warden, watching.clone()).await;
    let name = |suffix: &str| crate::hosted::tool_named(&tools, suffix);
    let request = CallToolRequestParams::new(name("progress")).with_arguments(
        json!({"steps": 3, "gap_ms": 50})
            .as_object()
            .unwrap()
            .clone(),
    );
    let result = crate::hosted::call_after_grant(&client, &warden, request).await;
    assert_eq!(
        result.content[0].as_text().map(|t| t.text.as_str()),
        Some("3 steps done")
    );
    crate::hosted::until("three progress reports", || {
        watching.0.lock().unwrap().len() >= 3
    })
    .await;
    let seen = watching.0.lock().unwrap().clone();
    let messages: Vec<_> = seen
        .iter()
        .map(|p| p.message.clone().unwrap_or_default())
        .collect();
    assert_eq!(messages, ["step 1 of 3", "step 2 of 3", "step 3 of 3"]);
    assert_eq!(seen[2].total, Some(3.0));

    // Log messages at or above the level the client set, from the call
    // that made them.
    set_level(&client, "info").await;
    let request = CallToolRequestParams::new(name("chatty"));
    crate::hosted::call_after_grant(&client, &warden, request).await;
    // The client handles notifications on tasks of their own.
    crate::hosted::until("two log messages", || watching.1.lock().unwrap().len() >= 2).await;
    // In the order the client's tasks ran.
    let mut logs = watching.1.lock().unwrap().clone();
    logs.sort_by_key(|l| l["data"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        logs,
        [
            json!({"level": "warning", "logger": "warden", "data": "fixture: careful"}),
            json!({"level": "info", "logger": "warden", "data": "fixture: starting"}),
        ]
    );

    let request = CallToolRequestParams::new(name("wait"));
    crate::hosted::grant_by_calling(&client, &warden, request.clone()).await;
    let handle = client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(request)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    crate::hosted::until("the remote call started", || rmcp.waits().0 == 1).await;
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .unwrap();
    crate::hosted::until("the remote call was cancelled", || rmcp.waits() == (0, 1)).await;
    let audit = std::fs::read_to_string(warden.data_dir().join("audit.jsonl")).unwrap();
    assert!(
        audit
            .lines()
            .any(|l| l.contains("\"mcp-real.wait\"") && l.contains("\"outcome\":\"cancelled\"")),
        "{audit}"
    );
    client.cancel().await.unwrap();
}

/// Issue 44: a registered server had no timeout of its own. `mcp add
/// --timeout` sets one (shown by `mcp list`, bounded by the operator's
/// maximum), and a silent call of that server ends at it.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_add_timeout_is_the_servers_own_and_bounded_by_the_operator() {
    let (rmcp, warden) = server_with(&["wait"]).await;
    let over = warden.run(&["mcp", "add", "real", URL, "--timeout", "601"]);
    assert!(over.code != 0, "{}", over.all());
    assert!(
        over.all().contains("over the operator's maximum of 600 s"),
        "{}",
        over.all()
    );
    let added = warden.run(&["mcp", "add", "real", URL, "--timeout", "1"]);
    assert!(added.code == 0, "{}", added.all());
    let listed = warden.run(&["mcp", "list"]);
    assert!(listed.stdout.contains("timeout=1s"), "{}", listed.all());

    let called = warden.run(&["call", "mcp-real.wait", "--input", "{}", "--approve-once"]);
    assert!(called.code != 0, "{}", called.all());
    assert!(
        called.all().contains("error[timeout]") && called.all().contains("1000 ms"),
        "{}",
        called.all()
    );
    crate::hosted::until("the server was told", || rmcp.waits() == (0, 1)).await;
}

/// An MCP client that declares elicitation and sampling and answers both.
#[derive(Clone, Default)]
struct Answering;

impl rmcp::ClientHandler for Answering {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        crate::hosted::asked_client_info("answering")
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let asked = serde_json::to_value(&request).unwrap();
        // Warden's own approval prompt first, then the remote server's.
        let content = match asked["message"].as_str().unwrap_or_default() {
            "Your name?" => json!({"name": "Grace"}),
            approval if approval.starts_with("Approve this tool call?") => {
                json!({"decision": "approve_once"})
            }
            other => panic!("unexpected elicitation: {other}"),
        };
        Ok(crate::hosted::accepted(content))
    }

    #[expect(
        deprecated,
        reason = "sampling is still what servers of 2025-11-25 use"
    )]
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        Ok(crate::hosted::sampled("hi there"))
    }
}

/// Issue 44 through `warden serve`: the remote server's elicitation is
/// answered by the MCP client that made the call, and its sampling request
/// reaches that client's model.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_servers_elicitation_and_sampling_are_answered_by_the_calling_client() {
    let (_rmcp, warden) = server_with(&["ask", "sample"]).await;
    crate::hosted::add_and_refresh(&warden, "real", URL);
    let (client, tools) = crate::hosted::serve_with(&warden, Answering).await;
    for (suffix, answer) in [
        ("ask", r#""accept": {"name":"Grace"}"#),
        ("sample", "sampled: hi there"),
    ] {
        let name = crate::hosted::tool_named(&tools, suffix);
        // Approved through the client's elicitation, then resumed: the
        // resumed call relays too.
        let result = client
            .call_tool(CallToolRequestParams::new(name))
            .await
            .unwrap();
        assert_eq!(
            result.content[0].as_text().map(|t| t.text.as_str()),
            Some(answer)
        );
    }
    client.cancel().await.unwrap();
}
