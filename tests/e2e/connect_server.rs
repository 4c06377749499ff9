//! `warden serve --public-url`: a person connects their own account from
//! their MCP client. The authorize URL the client opens returns the browser
//! to the server's `/oauth/callback` (not a loopback listener on the
//! serving machine), the account is stored as that caller's own, and the
//! call runs again; another caller still has none.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use warden_tests::Warden;
use warden_tests::jwt_issuer::JwtIssuer;

use crate::auth::{Fake, OpeningUrls};
use crate::caller_accounts::{AUDIENCE, ISSUER, serve_for_jwt};

/// `github_get_repo` by `subject`, with a client that approves and opens
/// (or declines) authorize URLs; the result and the URLs it was offered.
async fn get_repo_as(
    port: u16,
    issuer: &JwtIssuer,
    subject: &str,
    handler: OpeningUrls,
) -> (CallToolResult, Vec<String>) {
    let bearer = issuer.bearer_for(subject, AUDIENCE, "mcp", 600);
    let token = bearer.trim_start_matches("Bearer ").to_owned();
    let uri = format!("http://127.0.0.1:{port}/mcp");
    let config = StreamableHttpClientTransportConfig::with_uri(uri).auth_header(token);
    let client = handler
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize over HTTP");
    let Value::Object(arguments) = json!({ "owner": "octo", "repo": "hello" }) else {
        unreachable!("object literal")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("github_get_repo").with_arguments(arguments))
        .await
        .expect("tools/call");
    let _ = client.cancel().await;
    let opened = handler.opened.lock().unwrap().clone();
    (result, opened)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn serve(
    warden: &Warden,
    issuer: &JwtIssuer,
    public_url: &str,
    port: u16,
) -> warden_tests::Serving {
    let addr = format!("127.0.0.1:{port}");
    serve_for_jwt(warden, issuer, &addr, &["--public-url", public_url]).0
}

/// The fake GitHub and its authorization server, a data directory for it,
/// the JWT issuer, and `serve` on a free port that is its own public URL.
async fn setup() -> (Fake, Warden, JwtIssuer, u16, warden_tests::Serving) {
    let fake = Fake::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let issuer = JwtIssuer::new(ISSUER);
    let port = free_port();
    let public_url = format!("http://127.0.0.1:{port}");
    let serving = serve(&warden, &issuer, &public_url, port);
    (fake, warden, issuer, port, serving)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_connects_their_own_account_through_the_server() {
    let (fake, warden, issuer, port, _serving) = setup().await;
    let opening = |accept| OpeningUrls {
        auth: fake.auth.clone(),
        accept,
        opened: Default::default(),
    };

    let (result, opened) = get_repo_as(port, &issuer, "alice", opening(true)).await;
    assert_eq!(opened.len(), 1, "one authorize URL was offered: {opened:?}");
    assert!(
        opened[0].starts_with(&format!("http://127.0.0.1:{port}/oauth/start?state=")),
        "the server's own page is offered: {opened:?}"
    );
    // Once connected, the link leads nowhere any more.
    let spent = past_start_page_status(&opened[0]);
    assert!(spent.starts_with("HTTP/1.1 400"), "{spent}");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        result.structured_content.expect("output")["full_name"],
        "octo/hello"
    );
    let status = warden.run(&["auth", "status"]);
    assert!(status.stdout.contains(" of alice "), "{status:?}");

    // Bob's account is his to connect: Alice's never serves him.
    let (result, opened) = get_repo_as(port, &issuer, "bob", opening(false)).await;
    assert_eq!(opened.len(), 1, "{opened:?}");
    let meta = &result.meta.as_ref().expect("meta").0;
    assert_eq!(meta["warden/errorCode"], "auth_required", "{result:?}");
    // A callback nobody waits for is refused.
    let stray = crate::serve_auth::send(port, "GET", "/oauth/callback?code=x&state=y", None, "");
    assert!(stray.starts_with("HTTP/1.1 400"), "{stray}");
}

/// A client that cannot open URLs gets the authorize URL in the
/// `auth_required` answer (`connect_url`); the person opens it, the browser
/// returns to the server, and the identical call runs, on the approval it
/// had already been given.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_elicitation_gets_a_link_that_connects_through_the_server() {
    let (fake, warden, issuer, port, _serving) = setup().await;
    let bearer = issuer.bearer_for("carol", AUDIENCE, "mcp", 600);
    let uri = format!("http://127.0.0.1:{port}/mcp");
    let config = StreamableHttpClientTransportConfig::with_uri(uri)
        .auth_header(bearer.trim_start_matches("Bearer ").to_owned());
    let carol =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize over HTTP");
    let asked = crate::stateless::approval_id(&crate::stateless::get_repo(&carol).await)
        .expect("an approval id");
    let approved = warden.run(&["approvals", "approve", &asked]);
    assert_eq!(approved.code, 0, "{approved:?}");
    let refused = crate::stateless::get_repo(&carol).await;
    let details = refused.structured_content.clone().expect("auth fields");
    assert_eq!(details["code"], "auth_required", "{details}");
    let link = details["connect_url"]
        .as_str()
        .expect("a connect link")
        .to_owned();
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/oauth/start?state=")),
        "{link}"
    );
    // The person opens it: the server's page, then the sign-in; the
    // browser comes back to the server.
    let authorize = past_start_page(&link).await;
    let location = fake.auth.visit(&authorize).expect("authorized");
    let status = warden_egress::testing::follow_redirect(&location)
        .await
        .unwrap();
    assert_eq!(status, 200);
    // The connection completes in the background; the same call runs.
    let mut ran = crate::stateless::get_repo(&carol).await;
    for _ in 0..50 {
        if ran.is_error != Some(true) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        ran = crate::stateless::get_repo(&carol).await;
    }
    assert_eq!(crate::stateless::approval_id(&ran), None, "{ran:?}");
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let status = warden.run(&["auth", "status"]);
    assert!(status.stdout.contains(" of carol "), "{status:?}");
    let _ = carol.cancel().await;
}

/// Two hosts on one PostgreSQL behind one public URL (B's: the callback of
/// a connection host A started comes back to B, as behind a load balancer,
/// and B passes it on through the store): Alice connects her account
/// through host A, Bob his through host B; each call sends only its
/// caller's own token, and both hosts know whose account is whose.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_callers_on_two_hosts_on_one_postgres_connect_their_own_accounts() {
    let pg = tokio::task::spawn_blocking(warden_tests::TestPostgres::start)
        .await
        .unwrap();
    let url = pg.create_database("callers");
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("secret.key");
    let fake = Fake::start().await;
    let issuer = JwtIssuer::new(ISSUER);
    let (a, b) = (crate::warden(), crate::warden());
    let ports = [free_port(), free_port()];
    let public_url = format!("http://127.0.0.1:{}", ports[1]);
    let mut servers = Vec::new();
    for (warden, port) in [(&a, ports[0]), (&b, ports[1])] {
        fake.configure(warden);
        warden.configure_more(&format!(
            "\n[store]\nurl = {url:?}\nsecret_key_file = {key:?}\n"
        ));
        servers.push(serve(warden, &issuer, &public_url, port));
    }
    let opening = || OpeningUrls {
        auth: fake.auth.clone(),
        accept: true,
        opened: Default::default(),
    };
    for (port, subject) in [(ports[0], "alice"), (ports[1], "bob")] {
        let (result, opened) = get_repo_as(port, &issuer, subject, opening()).await;
        assert_eq!(opened.len(), 1, "{subject}: {opened:?}");
        assert_ne!(result.is_error, Some(true), "{subject}: {result:?}");
    }
    // One token per connection, each used once, by its own caller.
    let sent: Vec<String> = fake
        .server
        .requests()
        .iter()
        .filter(|r| r.target.starts_with("/repos/octo/hello"))
        .filter_map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_ne!(sent[0], sent[1], "each caller sent their own token");
    for warden in [&a, &b] {
        let status = warden.run(&["--store", &url, "auth", "status"]);
        assert!(
            status.stdout.contains(" of alice ") && status.stdout.contains(" of bob "),
            "{status:?}"
        );
    }
    drop(servers);
}

/// The head of the server's answer to `url` (a start page).
fn past_start_page_status(url: &str) -> String {
    let parsed = url::Url::parse(url).unwrap();
    let target = format!("{}?{}", parsed.path(), parsed.query().unwrap_or_default());
    crate::serve_auth::send(parsed.port().unwrap(), "GET", &target, None, "")
}

/// What a browser opening `url` continues to: past the server's page that
/// says whose account a connection makes (checked to name it), the
/// authorization server's URL; any other URL as it is.
pub(crate) async fn past_start_page(url: &str) -> String {
    if !url.contains("/oauth/start?") {
        return url.to_owned();
    }
    let url = url.to_owned();
    let page = tokio::task::spawn_blocking(move || past_start_page_status(&url))
        .await
        .unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("the Warden user <b>") && page.contains(", for the tools of <b>"),
        "the page names whose, and for which packages: {page}"
    );
    let href = page
        .split("href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("a link on: {page}"));
    href.replace("&amp;", "&")
}
