//! `warden console` over HTTP as a browser would use it: the one-time
//! sign-in link, a pending approval made by a headless (`automation`) call
//! shown with its input escaped, approved in the console so the identical
//! call runs, a grant made and revoked there, and the attacks an admin
//! surface must stand: no session, a spent link, a cross-site post, a post
//! without its CSRF token, another `Host`, markup in a tool input.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

/// A running console and its sign-in link.
struct Console {
    child: Child,
    port: u16,
    link: String,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(warden: &warden_tests::Warden) -> Console {
    let mut child = warden
        .command()
        .args(["console", "--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("warden console starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines
        .find_map(|l| l.ok().filter(|l| l.contains("/console/login?token=")))
        .expect("the console prints its sign-in link");
    let link = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let port = link
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    Console { child, port, link }
}

/// A response: status, headers (lowercase names) and body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 exchange on a fresh connection.
fn exchange(port: u16, request: &str) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn get(port: u16, path: &str, cookie: Option<&str>) -> Answer {
    let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
    exchange(
        port,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{cookie}Connection: close\r\n\r\n"
        ),
    )
}

fn post(port: u16, path: &str, cookie: &str, form: &str, extra: &str) -> Answer {
    exchange(
        port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n{extra}\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{form}",
            form.len()
        ),
    )
}

/// The CSRF token in a page's forms.
fn csrf(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a form") + 19;
    page[at..].split('"').next().unwrap().to_owned()
}

const INPUT: &str = r#"{"text":"<script>alert('x')</script>"}"#;

/// `warden call echo.echo` as a headless agent (origin `automation`), whose
/// calls need approval.
fn headless_echo(warden: &warden_tests::Warden, input: &str) -> warden_tests::Run {
    warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--origin",
        "automation",
        "--input",
        input,
    ])
}

impl Console {
    /// The sign-in link's path and query.
    fn login_path(&self) -> String {
        self.link
            .trim_start_matches(&format!("http://127.0.0.1:{}", self.port))
            .to_owned()
    }
}

/// Spend the console's sign-in link; the session cookie (`name=value`).
fn sign_in(console: &Console) -> String {
    let signed_in = get(console.port, &console.login_path(), None);
    assert_eq!(signed_in.status, 303, "{signed_in:?}");
    signed_in
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn the_console_shows_and_answers_approvals_and_stands_the_usual_attacks() {
    let warden = crate::warden();
    let call = || headless_echo(&warden, INPUT);
    let blocked = call();
    assert_eq!(blocked.code, 2, "{blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();

    let console = start(&warden);
    let port = console.port;

    // Nothing without a session; the link signs in once.
    let refused = get(port, "/console", None);
    assert_eq!(refused.status, 401, "{refused:?}");
    let path = console.login_path();
    let path = path.as_str();
    let signed_in = get(port, path, None);
    assert_eq!(signed_in.status, 303, "{signed_in:?}");
    let set_cookie = signed_in.header("set-cookie").unwrap();
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    assert_eq!(get(port, path, None).status, 401, "the link is spent");

    // The pending approval, its input escaped; the CSP on every page.
    let page = get(port, "/console", Some(&cookie));
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains(&approval), "{}", page.body);
    assert!(page.body.contains("echo.echo"));
    assert!(
        page.body
            .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
    );
    assert!(!page.body.contains("<script>alert"), "markup is inert");
    for path in [
        "/console",
        "/console/packages",
        "/console/audit",
        "/console/console.js",
    ] {
        let answer = get(port, path, Some(&cookie));
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
        let csp = answer.header("content-security-policy").unwrap_or_default();
        assert!(
            csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
    }
    assert_eq!(
        get(port, "/console/packages", Some(&cookie))
            .body
            .matches("echo.echo")
            .count(),
        1
    );

    // Another Host (DNS rebinding) is refused.
    let rebound = exchange(
        port,
        &format!(
            "GET /console HTTP/1.1\r\nHost: evil.example:{port}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(rebound.status, 421, "{rebound:?}");

    // State changes need the CSRF token and the console's own origin.
    let token = csrf(&page.body);
    let target = format!("/console/approvals/{approval}");
    let no_token = post(port, &target, &cookie, "action=approve", "");
    assert_eq!(no_token.status, 403, "{no_token:?}");
    let cross_site = post(
        port,
        &target,
        &cookie,
        &format!("csrf={token}&action=approve"),
        "Origin: https://evil.example\r\nSec-Fetch-Site: cross-site\r\n",
    );
    assert_eq!(cross_site.status, 403, "{cross_site:?}");
    assert_eq!(call().code, 2, "still waiting after the refused posts");

    // Approved in the console: the identical call runs.
    let approved = post(
        port,
        &target,
        &cookie,
        &format!("csrf={token}&action=approve"),
        &format!("Origin: http://127.0.0.1:{port}\r\nSec-Fetch-Site: same-origin\r\n"),
    );
    assert_eq!(approved.status, 303, "{approved:?}");
    let ran = call();
    assert_eq!(ran.code, 0, "{ran:?}");

    // Approve with a grant, then revoke it in the console.
    let other = r#"{"text":"granted"}"#;
    let asked = headless_echo(&warden, other);
    let second = asked.json()["approval_id"].as_str().unwrap().to_owned();
    let granted = post(
        port,
        &format!("/console/approvals/{second}"),
        &cookie,
        &format!("csrf={token}&action=grant"),
        "",
    );
    assert_eq!(granted.status, 303, "{granted:?}");
    let grants = warden.run(&["--json", "grants", "list"]).json();
    let grant = grants[0]["id"].as_str().unwrap().to_owned();
    let page = get(port, "/console", Some(&cookie));
    assert!(page.body.contains(&grant), "{}", page.body);
    let revoked = post(
        port,
        &format!("/console/grants/{grant}/revoke"),
        &cookie,
        &format!("csrf={token}"),
        "",
    );
    assert_eq!(revoked.status, 303, "{revoked:?}");
    let grants = warden.run(&["--json", "grants", "list"]).json();
    assert_eq!(grants.as_array().map(Vec::len), Some(0), "{grants}");

    // A connected account: what it is and where it may go, never its
    // value; disconnected from the console.
    warden_tests::FakeGitHub::store_token(&warden);
    let accounts = get(port, "/console/accounts", Some(&cookie));
    assert_eq!(accounts.status, 200, "{accounts:?}");
    assert!(
        accounts.body.contains("github_runtime_token") && accounts.body.contains("api.github.com"),
        "{}",
        accounts.body
    );
    assert!(
        !accounts.body.contains(warden_tests::TOKEN),
        "no secret is rendered"
    );
    let at = accounts.body.find("name=\"key\" value=\"").unwrap() + 18;
    let key = accounts.body[at..]
        .split('"')
        .next()
        .unwrap()
        .replace("&quot;", "\"");
    let form: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", &token)
        .append_pair("key", &key)
        .finish();
    let disconnected = post(port, "/console/accounts/disconnect", &cookie, &form, "");
    assert_eq!(disconnected.status, 303, "{disconnected:?}");
    let listed = warden.run(&["--json", "secret", "list"]).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");

    // Stored again from the console's form: bound to the declaring
    // package's audience, and never shown back.
    let accounts = get(port, "/console/accounts", Some(&cookie));
    assert!(
        accounts
            .body
            .contains("name=\"handle\" value=\"github_runtime_token\""),
        "{}",
        accounts.body
    );
    let form: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", &token)
        .append_pair("extension", "github")
        .append_pair("vendor", "github")
        .append_pair("handle", "github_runtime_token")
        .append_pair("value", warden_tests::TOKEN)
        .finish();
    let stored = post(port, "/console/accounts/set", &cookie, &form, "");
    assert_eq!(stored.status, 303, "{stored:?}");
    let listed = warden.run(&["--json", "secret", "list"]).json();
    assert_eq!(listed[0]["handle"], "github_runtime_token", "{listed}");
    assert!(listed.to_string().contains("api.github.com"), "{listed}");
    let accounts = get(port, "/console/accounts", Some(&cookie));
    assert!(
        !accounts.body.contains(warden_tests::TOKEN),
        "no secret is rendered"
    );
    let empty = post(
        port,
        "/console/accounts/set",
        &cookie,
        &format!("csrf={token}&extension=github&vendor=github&handle=github_runtime_token&value="),
        "",
    );
    assert_eq!(empty.status, 400, "{empty:?}");

    // The last hour at a glance, from the audit log.
    let page = get(port, "/console", Some(&cookie));
    assert!(
        page.body
            .contains("Last hour: ran 1, failed 0, asked for approval 3"),
        "{}",
        page.body
    );

    // Recent activity shows the calls, escaped.
    let audit = get(port, "/console/audit", Some(&cookie));
    assert!(
        audit.body.contains("approval_required") && audit.body.contains(">ok<"),
        "{}",
        audit.body
    );
}

/// In headless Chromium: the open approvals page shows a new approval
/// without a reload by hand (its script runs under the CSP), the input's
/// markup stays text, a click approves it and the headless agent's call
/// runs. Screenshots of the pages go to `target/console-screenshots/`
/// (the book's come from here).
#[test]
fn in_a_real_browser_an_approval_appears_is_approved_and_the_call_runs() {
    use warden_tests::webdriver::Browser;
    let warden = crate::warden();
    let call = || headless_echo(&warden, INPUT);
    let console = start(&warden);
    let browser = Browser::start();
    browser.open(&console.link);
    assert!(browser.url().ends_with("/console"), "{}", browser.url());
    browser.wait_for("the empty approvals page", |s| {
        s.contains("Nothing is waiting")
    });

    let blocked = call();
    assert_eq!(blocked.code, 2, "{blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();
    browser.wait_for("the new approval, shown by the page itself", |s| {
        s.contains(&approval)
    });
    assert_eq!(
        browser.script("return document.querySelectorAll('script').length"),
        1,
        "only the console's own script is on the page"
    );
    let shown = browser.script("return document.querySelector('pre').textContent");
    assert!(
        shown
            .as_str()
            .unwrap_or_default()
            .contains("<script>alert('x')</script>"),
        "{shown}"
    );
    let shots = warden_tests::package::repo_root().join("target/console-screenshots");
    browser.screenshot(&shots.join("approvals.png"));

    browser.click("button.approve");
    browser.wait_for("the approval answered", |s| {
        s.contains("Nothing is waiting")
    });
    let ran = call();
    assert_eq!(ran.code, 0, "{ran:?}");

    let base = console.link.split("/console/").next().unwrap().to_owned();
    browser.open(&format!("{base}/console/packages"));
    browser.wait_for("the packages page", |s| s.contains("echo.echo"));
    browser.screenshot(&shots.join("packages.png"));
    browser.open(&format!("{base}/console/audit"));
    browser.wait_for("the activity page", |s| s.contains("approval_required"));
    browser.screenshot(&shots.join("activity.png"));
}

/// A headless MCP client (no elicitation) calls a tool that needs approval
/// on a `serve --approval-wait` host: the call waits, a person approves it
/// in the console, and the same call completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_waiting_on_an_approval_continues_when_the_console_approves_it() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;

    let warden = crate::warden();
    // A third-party copy of echo: calls from a model need approval.
    let scratch = tempfile::tempdir().unwrap();
    let package = warden_tests::package::echo_variant(
        scratch.path(),
        &[
            (r#"id = "echo""#, r#"id = "waiter""#),
            (r#"id = "echo.echo""#, r#"id = "waiter.echo""#),
        ],
    );
    let installed = warden.run(&["install", package.to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");

    let mut command = tokio::process::Command::from(warden.command());
    command.args(["serve", "--approval-wait", "60"]);
    let client =
        ().serve(TokioChildProcess::new(command).expect("warden serve starts"))
            .await
            .expect("MCP handshake");
    let arguments = serde_json::json!({ "text": "after approval" });
    let call = tokio::spawn(async move {
        let result = client
            .call_tool(
                CallToolRequestParams::new("waiter_echo")
                    .with_arguments(arguments.as_object().unwrap().clone()),
            )
            .await;
        let _ = client.cancel().await;
        result
    });

    // The approval appears while the call waits; a person approves it in
    // the console.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let approval = loop {
        let listed = warden.run(&["--json", "approvals", "list"]).json();
        if let Some(id) = listed[0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no approval was asked: {listed}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(!call.is_finished(), "the call waits for the decision");
    let console = start(&warden);
    let port = console.port;
    let cookie = sign_in(&console);
    let page = get(port, "/console", Some(&cookie));
    assert!(page.body.contains(&approval), "{}", page.body);
    let approved = post(
        port,
        &format!("/console/approvals/{approval}"),
        &cookie,
        &format!("csrf={}&action=approve", csrf(&page.body)),
        "",
    );
    assert_eq!(approved.status, 303, "{approved:?}");

    let result = tokio::time::timeout(std::time::Duration::from_secs(30), call)
        .await
        .expect("the waiting call completes once approved")
        .unwrap()
        .expect("tools/call");
    let text = serde_json::to_string(&result).unwrap();
    assert!(
        text.contains("after approval") && result.is_error != Some(true),
        "{text}"
    );
}
