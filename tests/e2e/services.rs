//! The first-party services the binary ships, through the binary: its
//! composition registers them, so their built-in packages list and run.

use serde_json::json;
use warden_egress::testing::{RecordedRequest, TestCa, TestResponse, TestServer};

const TOKEN: &str = "ya29.e2e-google-token";

/// A fake of every host the services reach, trusted and resolved by `warden`.
async fn fake(warden: &warden_tests::Warden, hosts: &[&str]) -> TestServer {
    let ca = TestCa::new();
    let server = TestServer::start(&ca, hosts, respond).await.unwrap();
    let pem = warden.data_dir().join("test-ca.pem");
    std::fs::write(&pem, ca.cert_pem()).unwrap();
    let private: Vec<String> = hosts.iter().map(|h| format!("\"{h}:443\"")).collect();
    let resolve: Vec<String> = hosts
        .iter()
        .map(|h| format!("\"{h}\" = [\"{}\"]", server.addr()))
        .collect();
    warden.configure(&format!(
        "[egress]\nextra_roots = [{pem:?}]\nallow_private = [{}]\n\n[resolve]\n{}\n",
        private.join(", "),
        resolve.join("\n")
    ));
    server
}

fn respond(request: &RecordedRequest) -> TestResponse {
    if request.target == "/mcp" {
        let message: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let id = &message["id"];
        return match message["method"].as_str().unwrap_or_default() {
            "notifications/initialized" => TestResponse::status(202),
            "initialize" => TestResponse::json(&json!({"jsonrpc": "2.0", "id": id,
                "result": {"protocolVersion": "2025-06-18", "capabilities": {}}})),
            _ => TestResponse::json(&json!({"jsonrpc": "2.0", "id": id, "result": {"content": [
                {"type": "text", "text": "Title: Warden\nURL: https://warden.test\nText: A tool host"}]}})),
        };
    }
    if request.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
        return TestResponse::status(401);
    }
    TestResponse::json(
        &json!({"messages": [{"id": "m1", "threadId": "t1"}], "resultSizeEstimate": 1}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_runs_the_gmail_and_web_access_services() {
    let warden = crate::warden();
    let server = fake(&warden, &["gmail.googleapis.com", "mcp.exa.ai"]).await;
    let listed = warden.run(&["--json", "list"]).json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in [
        "gmail_send_message",
        "google-calendar_find_free_slots",
        "web-access_search",
    ] {
        assert!(names.contains(&tool), "{tool} is listed: {names:?}");
    }
    let set = warden.run_with_stdin(
        &[
            "secret",
            "set",
            "google",
            "gmail_account",
            "--scope",
            "https://www.googleapis.com/auth/gmail.readonly",
        ],
        TOKEN,
    );
    assert_eq!(set.code, 0, "{set:?}");
    let (warden, gmail, web) = tokio::task::spawn_blocking(move || {
        let gmail = warden.run(&["--json", "call", "gmail.list_messages", "--input", "{}"]);
        let web = warden.run(&[
            "--json",
            "call",
            "web-access.search",
            "--input",
            r#"{"query": "tool host"}"#,
        ]);
        (warden, gmail, web)
    })
    .await
    .unwrap();
    drop(warden);
    assert_eq!(gmail.code, 0, "{gmail:?}");
    assert_eq!(gmail.json()["output"]["messages"][0]["id"], "m1");
    assert_eq!(web.code, 0, "{web:?}");
    assert_eq!(
        web.json()["output"]["queries"][0]["results"][0]["url"],
        "https://warden.test"
    );
    let to_exa = server
        .requests()
        .into_iter()
        .filter(|r| r.target == "/mcp")
        .count();
    assert_eq!(to_exa, 3);
}
