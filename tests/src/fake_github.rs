//! A fake `api.github.com`: real REST shapes, bearer auth, recorded requests.

use serde_json::json;
use warden_egress::testing::{RecordedRequest, TestCa, TestResponse, TestServer};

use crate::Warden;

/// The token the tests store with `warden secret set`.
pub const TOKEN: &str = "ghp_e2eTestToken0123456789abcdefABCDEF";

/// A caller's own token (accounts per caller), also accepted.
pub const ALICE_TOKEN: &str = "ghp_aliceOwnToken0123456789abcdefABCD";

/// The fake server and its CA.
#[derive(Debug)]
pub struct FakeGitHub {
    ca: TestCa,
    server: TestServer,
}

impl FakeGitHub {
    /// Start it on 127.0.0.1 with a certificate for `api.github.com`.
    pub async fn start() -> FakeGitHub {
        let ca = TestCa::new();
        let server = TestServer::start(&ca, &["api.github.com"], respond)
            .await
            .expect("fake GitHub starts");
        FakeGitHub { ca, server }
    }

    /// Every request the server received.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// How many requests with `method` to `path` arrived.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method && r.target.split('?').next() == Some(path))
            .count()
    }

    /// Point `warden` at this server: trust its CA, resolve `api.github.com`
    /// to it, and allow exactly that origin to be a loopback address.
    pub fn configure(&self, warden: &Warden) {
        let ca = warden.data_dir().join("test-ca.pem");
        std::fs::write(&ca, self.ca.cert_pem()).expect("write CA");
        warden.configure(&format!(
            "[egress]\nextra_roots = [{ca:?}]\nallow_private = [\"api.github.com:443\"]\n\n[resolve]\n\"api.github.com\" = [\"{}\"]\n",
            self.server.addr()
        ));
    }
}

impl FakeGitHub {
    /// [`Self::configure`], then store [`TOKEN`] with `warden secret set`
    /// as a user would (the value on stdin, never argv).
    pub fn connect(&self, warden: &Warden) {
        self.configure(warden);
        Self::store_token(warden);
    }

    /// Store [`TOKEN`] with `warden secret set` (a data dir configured
    /// already, e.g. one whose `[store]` is shared with another host).
    pub fn store_token(warden: &Warden) {
        Self::store_token_of(warden, None, TOKEN);
    }

    /// Store `token` as the account of caller `owner` (`--owner`), or the
    /// deployment's.
    pub fn store_token_of(warden: &Warden, owner: Option<&str>, token: &str) {
        let mut args = vec![
            "secret",
            "set",
            "github",
            "github_runtime_token",
            "--scope",
            "repo",
        ];
        if let Some(owner) = owner {
            args.extend(["--owner", owner]);
        }
        let set = warden.run_with_stdin(&args, token);
        assert_eq!(set.code, 0, "warden secret set: {set:?}");
    }
}

fn respond(request: &RecordedRequest) -> TestResponse {
    let accepted = [TOKEN, ALICE_TOKEN].map(|t| format!("Bearer {t}"));
    if !accepted
        .iter()
        .any(|a| request.header("authorization") == Some(a))
    {
        return json_status(
            401,
            &json!({ "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest" }),
        );
    }
    let path = request.target.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("GET", "/repos/octo/hello") => TestResponse::json(&repo()),
        // A provider that echoes the token back in three encodings.
        ("GET", "/repos/octo/leaky") => TestResponse::json(&leaky_repo()),
        ("POST", "/repos/octo/hello/issues") => {
            let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
            json_status(201, &issue(7, body["title"].as_str().unwrap_or_default()))
        }
        ("GET", "/repos/octo/hello/issues/7") => TestResponse::json(&issue(7, "Found a bug")),
        _ => json_status(404, &json!({ "message": "Not Found" })),
    }
}

fn leaky_repo() -> serde_json::Value {
    use base64::Engine as _;
    let mut repo = repo();
    repo["name"] = "leaky".into();
    repo["full_name"] = "octo/leaky".into();
    repo["description"] = format!(
        "raw {TOKEN} base64 {} percent {}",
        base64::engine::general_purpose::STANDARD.encode(TOKEN),
        TOKEN.replace('_', "%5F")
    )
    .into();
    repo
}

fn json_status(status: u16, body: &serde_json::Value) -> TestResponse {
    TestResponse {
        status,
        ..TestResponse::json(body)
    }
}

fn repo() -> serde_json::Value {
    json!({
        "id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": "hello", "full_name": "octo/hello",
        "owner": { "login": "octo", "id": 1, "type": "User" }, "private": false,
        "html_url": "https://github.com/octo/hello", "description": "This your first repo!", "fork": false,
        "url": "https://api.github.com/repos/octo/hello", "default_branch": "main", "language": "Rust",
        "stargazers_count": 80, "watchers_count": 80, "forks_count": 9, "open_issues_count": 2,
        "topics": ["wasm"], "archived": false, "visibility": "public",
        "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:14:43Z", "pushed_at": "2011-01-26T19:06:43Z"
    })
}

fn issue(number: u64, title: &str) -> serde_json::Value {
    json!({
        "id": 1, "number": number, "title": title, "state": "open", "locked": false,
        "user": { "login": "octo", "id": 1 }, "labels": [], "assignees": [], "comments": 0,
        "html_url": format!("https://github.com/octo/hello/issues/{number}"),
        "url": format!("https://api.github.com/repos/octo/hello/issues/{number}"),
        "body": "Steps to reproduce", "created_at": "2011-04-22T13:33:48Z", "updated_at": "2011-04-22T13:33:48Z",
        "closed_at": null, "author_association": "OWNER"
    })
}
