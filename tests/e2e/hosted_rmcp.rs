//! A real MCP server (rmcp's own streamable-HTTP server over local HTTPS)
//! through the `warden` binary: `mcp add`, `mcp refresh`, `list` from the
//! kept catalog, `call`, and `serve` with an MCP client.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
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

    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client =
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .expect("MCP handshake with warden serve");
    // The kept catalog is served at once.
    let tools = client.list_all_tools().await.unwrap();
    let weather = tools
        .iter()
        .find(|t| t.name.ends_with("weather"))
        .unwrap_or_else(|| panic!("{:?}", tools.iter().map(|t| &t.name).collect::<Vec<_>>()));
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
