//! A real MCP server (rmcp's own streamable-HTTP server over local HTTPS)
//! through the `warden` binary: `mcp add`, `mcp refresh`, `list` from the
//! kept catalog, `call`, and `serve` with an MCP client.

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

/// Issue 44: a remote tool's image reached `warden call` and MCP clients
/// as one text block of JSON with the base64 inside. `call` now shows the
/// text, names the image and saves it under `--output-dir`; `serve` hands
/// the client the server's blocks as blocks.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_image_is_saved_by_call_and_served_as_an_image_block() {
    let rmcp = RmcpServer::start(Catalog::default()).await;
    rmcp.catalog(|c| {
        c.tools
            .push(json!({"name": "picture", "inputSchema": {"type": "object"}}))
    });
    let warden = crate::warden();
    rmcp.configure(&warden);
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
