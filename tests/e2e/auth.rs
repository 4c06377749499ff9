//! `warden auth connect|status|disconnect` and the structured auth-required
//! through the binary: the test plays the browser against a local fake
//! authorization server (github.com) and provider (api.github.com), and an
//! rmcp client sees `auth_required` in `structuredContent` and `_meta` — or,
//! declaring URL-mode elicitation, is offered the authorize URL and gets the
//! call's result once the account is connected.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
    UrlElicitationCapability,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;
use warden_egress::testing::{
    FakeAuthServer, RecordedRequest, TestCa, TestResponse, TestServer, follow_redirect,
};
use warden_tests::Warden;

const HOSTS: [&str; 2] = ["github.com", "api.github.com"];

pub(crate) struct Fake {
    ca: TestCa,
    pub(crate) server: TestServer,
    pub(crate) auth: FakeAuthServer,
}

fn respond(auth: &FakeAuthServer, req: &RecordedRequest) -> TestResponse {
    if auth.is_issuer(req) {
        return auth.handle(req);
    }
    if !auth.authorized(req) {
        return TestResponse {
            status: 401,
            ..TestResponse::json(&json!({ "message": "Bad credentials" }))
        };
    }
    TestResponse::json(&json!({
        "id": 1, "node_id": "R_1", "name": "hello", "full_name": "octo/hello",
        "owner": { "login": "octo", "id": 1, "type": "User" }, "private": false,
        "html_url": "https://github.com/octo/hello", "description": "hi", "fork": false,
        "url": "https://api.github.com/repos/octo/hello", "default_branch": "main",
        "language": "Rust", "stargazers_count": 1, "watchers_count": 1, "forks_count": 0,
        "open_issues_count": 0, "topics": [], "archived": false, "visibility": "public",
        "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:14:43Z",
        "pushed_at": "2011-01-26T19:06:43Z"
    }))
}

impl Fake {
    pub(crate) async fn start() -> Fake {
        let ca = TestCa::new();
        let auth =
            FakeAuthServer::new("github.com", 3600).with_token_path("/login/oauth/access_token");
        let handler = auth.clone();
        let server = TestServer::start(&ca, &HOSTS, move |req| respond(&handler, req))
            .await
            .unwrap();
        Fake { ca, server, auth }
    }

    /// Trust the CA, resolve both hosts to the server, and configure the
    /// operator's OAuth client for `github`.
    pub(crate) fn configure(&self, warden: &Warden) {
        let ca = warden.data_dir().join("test-ca.pem");
        std::fs::write(&ca, self.ca.cert_pem()).unwrap();
        let addr = self.server.addr();
        warden.configure(&format!(
            "[egress]\nextra_roots = [{ca:?}]\nallow_private = [\"github.com:443\", \"api.github.com:443\"]\n\n\
             [resolve]\n\"github.com\" = [\"{addr}\"]\n\"api.github.com\" = [\"{addr}\"]\n\n\
             [auth.github]\nclient_id = \"warden-e2e-client\"\n\
             token_endpoint = \"https://github.com/login/oauth/access_token\"\n"
        ));
    }
}

fn get_repo(warden: &Warden) -> warden_tests::Run {
    warden.run(&[
        "--json",
        "call",
        "github.get_repo",
        "--approve-once",
        "--input",
        r#"{"owner": "octo", "repo": "hello"}"#,
    ])
}

/// Run `warden auth connect github` as a user: read the printed URL, sign
/// in at the fake server, follow the redirect to the loopback listener.
async fn connect(warden: &Warden, auth: &FakeAuthServer) -> serde_json::Value {
    let (connected, url) = connect_as(warden, auth, "github").await;
    assert!(url.contains("client_id=warden-e2e-client"), "{url}");
    connected
}

/// Run `warden auth connect <name>` as a user; what it printed (JSON) and
/// the authorize URL the user opened.
pub(crate) async fn connect_as(
    warden: &Warden,
    auth: &FakeAuthServer,
    name: &str,
) -> (serde_json::Value, String) {
    let mut child = warden
        .command()
        .args(["--json", "auth", "connect", name, "--timeout", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr to its end (a closed pipe would kill the child on its
    // next write); hand the authorize URL over as soon as it is printed.
    let stderr = child.stderr.take().unwrap();
    let (found, url) = tokio::sync::oneshot::channel();
    let drain = std::thread::spawn(move || {
        let mut found = Some(found);
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.trim().starts_with("https://")
                && let Some(found) = found.take()
            {
                let _ = found.send(line.trim().to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = url.await.expect("the authorize URL is printed");
    let location = auth.visit(&url).unwrap();
    assert_eq!(follow_redirect(&location).await.unwrap(), 200);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = drain.join().unwrap();
    assert!(output.status.success(), "{output:?}\n{stderr}");
    (serde_json::from_slice(&output.stdout).unwrap(), url)
}

#[tokio::test(flavor = "multi_thread")]
async fn auth_connect_call_status_expire_and_disconnect_through_the_binary() {
    let fake = Fake::start().await;
    let warden = crate::warden();
    fake.configure(&warden);

    let accounts = connect(&warden, &fake.auth).await;
    assert_eq!(accounts[0]["vendor"], "github", "{accounts}");
    assert_eq!(accounts[0]["handle"], "github_runtime_token");
    assert_eq!(accounts[0]["scopes"], json!(["repo"]));
    assert_eq!(accounts[0]["extensions"], json!(["github"]));

    let (warden, auth) = tokio::task::spawn_blocking({
        let auth = fake.auth.clone();
        move || {
            let run = get_repo(&warden);
            assert_eq!(run.code, 0, "{run:?}");
            assert_eq!(run.json()["output"]["full_name"], "octo/hello");

            let status = warden.run(&["--json", "auth", "status"]);
            assert_eq!(status.code, 0, "{status:?}");
            let status = status.json();
            assert_eq!(status.as_array().unwrap().len(), 1, "{status}");
            assert_eq!(status[0]["kind"], "oauth2");
            assert_eq!(status[0]["used_by"], json!(["github"]));
            assert!(status[0]["expires_at"].is_u64());
            assert!(
                !status.to_string().contains("at-"),
                "no token value is listed"
            );

            // The provider refuses the token: exit code 3 and the fields.
            auth.expire_access_tokens();
            let run = get_repo(&warden);
            assert_eq!(run.code, 3, "{run:?}");
            let out = run.json();
            assert_eq!(out["code"], "auth_required", "{out}");
            assert_eq!(out["reason"], "expired", "{out}");
            assert_eq!(out["vendor"], "github", "{out}");
            assert_eq!(out["scopes"], json!(["repo"]), "{out}");
            assert_eq!(out["extension"], "github", "{out}");
            assert_eq!(out["connect"], "warden auth connect github", "{out}");
            (warden, auth)
        }
    })
    .await
    .unwrap();

    connect(&warden, &auth).await;
    tokio::task::spawn_blocking(move || {
        assert_eq!(get_repo(&warden).code, 0);
        let removed = warden.run(&["auth", "disconnect", "github"]);
        assert_eq!(removed.code, 0, "{removed:?}");
        assert!(
            removed
                .stdout
                .contains("disconnected github/github_runtime_token")
        );
        let run = get_repo(&warden);
        assert_eq!(run.code, 3, "{run:?}");
        assert_eq!(run.json()["reason"], "missing");
    })
    .await
    .unwrap();
}

/// A client that approves the call once when asked.
#[derive(Clone, Default)]
struct Approving;

impl ClientHandler for Approving {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("e2e-auth", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({ "decision": "approve_once" })))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_gets_auth_required_with_its_fields() {
    let fake = Fake::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let result = get_repo_over_mcp(&warden, Approving).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let fields = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(fields["code"], "auth_required", "{fields}");
    assert_eq!(fields["reason"], "missing", "{fields}");
    assert_eq!(fields["vendor"], "github", "{fields}");
    assert_eq!(fields["scopes"], json!(["repo"]), "{fields}");
    assert_eq!(fields["extension"], "github", "{fields}");
    assert_eq!(fields["connect"], "warden auth connect github", "{fields}");
    let meta = &result.meta.as_ref().expect("_meta").0;
    assert_eq!(meta["warden/auth"], fields);
    assert!(fake.server.requests().is_empty(), "nothing was sent");
}

/// `warden serve` with `handler` as its MCP client: one `github_get_repo`.
async fn get_repo_over_mcp<H: ClientHandler>(
    warden: &Warden,
    handler: H,
) -> rmcp::model::CallToolResult {
    let mut command = tokio::process::Command::from(warden.command());
    command.arg("serve");
    let client = handler
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .expect("MCP handshake");
    let arguments = json!({ "owner": "octo", "repo": "hello" });
    let serde_json::Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("github_get_repo").with_arguments(arguments))
        .await
        .expect("tools/call");
    client.cancel().await.unwrap();
    result
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_key_is_read_from_stdin_and_stored_bound() {
    let packages = tempfile::tempdir().unwrap();
    // A vendor of its own: an API-key recipe for `github` would conflict
    // with the bundled GitHub package's OAuth one (refused at install).
    let credential = warden_tests::package::SenderCredential {
        vendor: "acme",
        handle: "acme_token",
        scopes: &[],
        audience: "api.acme.example",
    };
    let recipe = r#"[auth.acme]
method = "api_key"
display_name = "Acme token"
fields = [{ handle = "acme_token", label = "Token" }]
"#;
    let dir = warden_tests::package::sender(packages.path(), "keyed", &credential, recipe);
    let warden = crate::warden();
    tokio::task::spawn_blocking(move || {
        let install = warden.run(&["install", dir.to_str().unwrap()]);
        assert_eq!(install.code, 0, "{install:?}");
        let empty = warden.run_with_stdin(&["auth", "connect", "keyed"], "\n");
        assert_ne!(empty.code, 0, "{empty:?}");
        assert!(
            empty.stderr.contains("empty value for `acme_token`"),
            "{empty:?}"
        );
        let run = warden.run_with_stdin(
            &["--json", "auth", "connect", "keyed"],
            "ghp_stdinKey0123456789\n",
        );
        assert_eq!(run.code, 0, "{run:?}");
        assert!(!run.all().contains("ghp_stdinKey0123456789"));
        let accounts = run.json();
        assert_eq!(accounts[0]["extensions"], json!(["keyed"]), "{accounts}");
        assert_eq!(accounts[0]["audiences"][0]["host"], "api.acme.example");
        let status = warden.run(&["--json", "auth", "status"]).json();
        assert_eq!(status[0]["kind"], "secret", "{status}");
        assert_eq!(status[0]["extensions"], json!(["keyed"]), "{status}");
        assert_eq!(status[0]["used_by"], json!(["keyed"]), "{status}");
        // Another package of the vendor, with a recipe of its own, is
        // refused by `check` and `install` alike, with the reason.
        let other = warden_tests::package::sender(
            &dir.parent().unwrap().join("other"),
            "other",
            &credential,
            &recipe
                .replace(
                    "fields = [",
                    "setup_url = \"https://acme.example/keys\"\nfields = [",
                )
                .replace("label = \"Token\"", "label = \"Token\", secret = false"),
        );
        let other = other.to_str().unwrap();
        for verb in ["check", "install"] {
            let refused = warden.run(&[verb, other]);
            assert_ne!(refused.code, 0, "{verb}: {refused:?}");
            assert!(
                refused.stderr.contains(
                    "package `other` declares an [auth.acme] recipe that is incompatible \
                     with installed package `keyed`'s"
                ),
                "{verb}: {refused:?}"
            );
        }
    })
    .await
    .unwrap();
}

/// A client that approves when asked and, offered an authorize URL
/// (URL-mode elicitation), opens it as a person would — or declines.
#[derive(Clone)]
pub(crate) struct OpeningUrls {
    pub(crate) auth: FakeAuthServer,
    pub(crate) accept: bool,
    pub(crate) opened: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for OpeningUrls {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::builder().enable_elicitation().build();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        ClientConfig::new(capabilities, Implementation::new("e2e-url", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::UrlElicitationParams { url, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ "decision": "approve_once" })));
        };
        self.opened.lock().unwrap().push(url.clone());
        if !self.accept {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        // Through a server, its page first: whose account this connects.
        let url = crate::connect_server::past_start_page(&url).await;
        // The person signs in; the browser follows the redirect home.
        let location = self
            .auth
            .visit(&url)
            .map_err(|status| ErrorData::internal_error(format!("authorize {status}"), None))?;
        let status = follow_redirect(&location)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        assert_eq!(status, 200, "the loopback listener took the callback");
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

async fn call_get_repo_opening_urls(
    fake: &Fake,
    warden: &Warden,
    accept: bool,
) -> (rmcp::model::CallToolResult, Vec<String>) {
    let handler = OpeningUrls {
        auth: fake.auth.clone(),
        accept,
        opened: Default::default(),
    };
    let result = get_repo_over_mcp(warden, handler.clone()).await;
    let opened = handler.opened.lock().unwrap().clone();
    (result, opened)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_opens_urls_connects_the_account_and_the_call_runs_again() {
    let fake = Fake::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let (result, opened) = call_get_repo_opening_urls(&fake, &warden, true).await;
    assert_eq!(opened.len(), 1, "one authorize URL was offered: {opened:?}");
    assert!(
        opened[0].starts_with("https://github.com/")
            && opened[0].contains("client_id=warden-e2e-client"),
        "{opened:?}"
    );
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let output = result.structured_content.expect("structuredContent");
    assert_eq!(output["full_name"], "octo/hello", "{output}");
    // The retried call sent the token the authorization granted.
    assert!(
        fake.server
            .requests()
            .iter()
            .any(|r| r.target.starts_with("/repos/octo/hello") && fake.auth.authorized(r)),
        "the provider saw the connected token"
    );
    tokio::task::spawn_blocking(move || {
        let status = warden.run(&["--json", "auth", "status"]).json();
        assert_eq!(status[0]["vendor"], "github", "{status}");
        assert_eq!(status[0]["kind"], "oauth2", "{status}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_url_leaves_the_structured_auth_required() {
    let fake = Fake::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let (result, opened) = call_get_repo_opening_urls(&fake, &warden, false).await;
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let fields = result.structured_content.expect("structuredContent");
    assert_eq!(fields["code"], "auth_required", "{fields}");
    assert_eq!(fields["reason"], "missing", "{fields}");
    assert!(
        fake.server
            .requests()
            .iter()
            .all(|r| !r.target.starts_with("/repos/"))
    );
    tokio::task::spawn_blocking(move || {
        let status = warden.run(&["--json", "auth", "status"]).json();
        assert_eq!(status, json!([]), "nothing was stored");
    })
    .await
    .unwrap();
}
