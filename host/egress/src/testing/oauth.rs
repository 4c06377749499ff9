//! A fake OAuth authorization server and the API it guards, for tests that
//! connect accounts: an authorize endpoint a test drives as the browser, a
//! token endpoint that checks the PKCE verifier, single-use codes and
//! rotating refresh tokens, RFC 8414 metadata, RFC 7591 registration, and
//! an API (`GET /whoami` on any other host) that answers 401 to a token it
//! did not issue or that expired.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::{RecordedRequest, TestResponse};

/// The shared state of a [`FakeAuthServer`].
#[derive(Debug, Default)]
struct State {
    /// code -> (challenge, redirect_uri, scope)
    codes: HashMap<String, (String, String, String)>,
    used_codes: HashSet<String>,
    refresh: Option<String>,
    access: HashSet<String>,
    issued: u32,
    refreshes: u32,
    registered: Vec<String>,
    registrations: u32,
    revoked: Vec<String>,
    lifetime: u64,
    refuse_refresh: bool,
    client_secret: Option<String>,
    /// Advertise `client_id_metadata_document_supported`.
    client_metadata_documents: bool,
}

/// The fake server; clone it into a [`super::TestServer`] handler.
#[derive(Debug, Clone)]
pub struct FakeAuthServer {
    issuer_host: String,
    /// The issuer's path (`/tenant1`), empty for an origin issuer.
    issuer_path: String,
    /// The token endpoint's path its metadata names.
    token_path: String,
    state: Arc<Mutex<State>>,
}

impl FakeAuthServer {
    /// A server whose issuer is `https://<issuer_host>`; access tokens live
    /// `lifetime` seconds.
    pub fn new(issuer_host: &str, lifetime: u64) -> Self {
        let state = State {
            lifetime,
            ..State::default()
        };
        Self {
            issuer_host: issuer_host.to_owned(),
            issuer_path: String::new(),
            token_path: "/token".to_owned(),
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The same server with its metadata naming `path` as its token
    /// endpoint (under the issuer; it answers at `/token` and GitHub's
    /// `/login/oauth/access_token` either way), as a recipe of a real
    /// provider names it. An empty `path`: the metadata names none.
    pub fn with_token_path(mut self, path: &str) -> Self {
        self.token_path = path.to_owned();
        self
    }

    /// The same server with issuer `https://<issuer_host><path>` (a tenant
    /// or realm path, as many identity providers have): its metadata is at
    /// `/.well-known/oauth-authorization-server<path>` only and its
    /// endpoints under `<path>`.
    pub fn with_issuer_path(mut self, path: &str) -> Self {
        self.issuer_path = path.trim_end_matches('/').to_owned();
        self
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> String {
        format!("https://{}{}", self.issuer_host, self.issuer_path)
    }

    /// `path` below the issuer's path, if it is.
    fn endpoint<'p>(&self, path: &'p str) -> Option<&'p str> {
        path.strip_prefix(self.issuer_path.as_str())
            .filter(|rest| rest.starts_with('/'))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Require this client secret on token requests (in the body or Basic).
    pub fn require_client_secret(&self, secret: &str) {
        self.lock().client_secret = Some(secret.to_owned());
    }

    /// Say in the metadata that a client ID metadata document's URL is
    /// accepted as `client_id` (CIMD).
    pub fn accept_client_metadata_documents(&self) {
        self.lock().client_metadata_documents = true;
    }

    /// Forget every dynamically registered client: the token endpoint
    /// answers `invalid_client` to them from now on.
    pub fn forget_clients(&self) {
        self.lock().registered.clear();
    }

    /// Refuse every later refresh (the grant was revoked).
    pub fn refuse_refresh(&self) {
        self.lock().refuse_refresh = true;
    }

    /// Forget every issued access token: the API answers 401 to them.
    pub fn expire_access_tokens(&self) {
        self.lock().access.clear();
    }

    /// Access-token lifetime of tokens issued from now on.
    pub fn set_lifetime(&self, seconds: u64) {
        self.lock().lifetime = seconds;
    }

    /// How many refreshes succeeded.
    pub fn refreshes(&self) -> u32 {
        self.lock().refreshes
    }

    /// Client ids registered dynamically.
    pub fn registered(&self) -> Vec<String> {
        self.lock().registered.clone()
    }

    /// Tokens revoked at `/revoke`.
    pub fn revoked(&self) -> Vec<String> {
        self.lock().revoked.clone()
    }

    /// The current refresh token.
    pub fn refresh_token(&self) -> Option<String> {
        self.lock().refresh.clone()
    }

    /// Play the browser at the authorize endpoint: the user signs in and
    /// consents; the redirect location the server sends the browser to, or
    /// the status it refused with.
    pub fn visit(&self, authorize_url: &str) -> Result<String, u16> {
        let url = url::Url::parse(authorize_url).map_err(|_| 400u16)?;
        let path = self.endpoint(url.path()).unwrap_or_default();
        if url.host_str() != Some(self.issuer_host.as_str())
            || !matches!(path, "/authorize" | "/login/oauth/authorize")
        {
            return Err(404);
        }
        let answer = self.authorize(url.query().unwrap_or_default());
        if answer.status != 200 {
            return Err(answer.status);
        }
        let json: serde_json::Value = serde_json::from_slice(&answer.body).map_err(|_| 500u16)?;
        Ok(json["location"].as_str().unwrap_or_default().to_owned())
    }

    /// Answer one request.
    pub fn handle(&self, req: &RecordedRequest) -> TestResponse {
        let host = req.server_name.as_deref().unwrap_or_default();
        let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
        if host != self.issuer_host {
            return self.api(req);
        }
        let metadata = format!(
            "/.well-known/oauth-authorization-server{}",
            self.issuer_path
        );
        if req.method == "GET" && path == metadata {
            let issuer = self.issuer();
            return TestResponse::json(&serde_json::json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                // An empty path: metadata naming no token endpoint.
                "token_endpoint": (!self.token_path.is_empty())
                    .then(|| format!("{issuer}{}", self.token_path)),
                "registration_endpoint": format!("{issuer}/register"),
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": self.lock().client_metadata_documents,
            }));
        }
        let Some(path) = self.endpoint(path) else {
            return TestResponse::status(404);
        };
        match (req.method.as_str(), path) {
            ("GET", "/authorize" | "/login/oauth/authorize") => self.authorize(query),
            ("POST", "/token" | "/login/oauth/access_token") => self.token(req),
            ("POST", "/register") => self.register(req),
            ("POST", "/revoke") => {
                let form: HashMap<String, String> = url::form_urlencoded::parse(&req.body)
                    .into_owned()
                    .collect();
                let mut state = self.lock();
                let token = form.get("token").cloned().unwrap_or_default();
                if state.refresh.as_ref() == Some(&token) {
                    state.refresh = None;
                }
                state.access.remove(&token);
                state.revoked.push(token);
                TestResponse::status(200)
            }
            _ => TestResponse::status(404),
        }
    }

    /// Whether `req` carries a bearer token this server issued and has not
    /// expired (what a provider API checks).
    pub fn authorized(&self, req: &RecordedRequest) -> bool {
        let token = req
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        self.lock().access.contains(token)
    }

    /// Whether `req` was sent to this server's issuer host.
    pub fn is_issuer(&self, req: &RecordedRequest) -> bool {
        req.server_name.as_deref() == Some(self.issuer_host.as_str())
    }

    fn api(&self, req: &RecordedRequest) -> TestResponse {
        if req
            .target
            .starts_with("/.well-known/oauth-protected-resource")
        {
            let host = req.server_name.as_deref().unwrap_or_default();
            return TestResponse::json(&serde_json::json!({
                "resource": format!("https://{host}/mcp"),
                "authorization_servers": [self.issuer()],
                "scopes_supported": ["repo"],
            }));
        }
        if self.authorized(req) {
            TestResponse::json(&serde_json::json!({ "login": "octocat" }))
        } else {
            TestResponse::status(401)
                .with_header("www-authenticate", "Bearer error=\"invalid_token\"")
        }
    }

    /// The browser's visit: the answer carries where the browser goes next.
    fn authorize(&self, query: &str) -> TestResponse {
        let q: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let loopback = q
            .get("redirect_uri")
            .is_some_and(|r| r.starts_with("http://127.0.0.1:"));
        if q.get("response_type").map(String::as_str) != Some("code")
            || !loopback
            || q.get("code_challenge_method").map(String::as_str) != Some("S256")
        {
            return TestResponse::status(400);
        }
        let mut state = self.lock();
        state.issued += 1;
        let code = format!("code-{}", state.issued);
        state.codes.insert(
            code.clone(),
            (
                q["code_challenge"].clone(),
                q["redirect_uri"].clone(),
                q.get("scope").cloned().unwrap_or_default(),
            ),
        );
        let mut location = url::Url::parse(&q["redirect_uri"]).expect("redirect uri");
        location
            .query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", q.get("state").map_or("", String::as_str));
        TestResponse::json(&serde_json::json!({ "location": location.as_str() }))
    }

    fn client_ok(&self, req: &RecordedRequest, form: &HashMap<String, String>) -> bool {
        if let Some(id) = form.get("client_id")
            && id.starts_with("dcr-")
            && !self.lock().registered.contains(id)
        {
            return false;
        }
        let Some(secret) = self.lock().client_secret.clone() else {
            return form.contains_key("client_id");
        };
        if form.get("client_secret") == Some(&secret) {
            return true;
        }
        let basic = req
            .header("authorization")
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok());
        basic.is_some_and(|pair| pair.ends_with(&format!(":{secret}")))
    }

    fn token(&self, req: &RecordedRequest) -> TestResponse {
        let form: HashMap<String, String> = url::form_urlencoded::parse(&req.body)
            .into_owned()
            .collect();
        let refuse = |error: &str| {
            TestResponse::status(400)
                .with_header("content-type", "application/json")
                .with_body(format!(
                    "{{\"error\":\"{error}\",\"error_description\":\"<b>nope</b>\"}}"
                ))
        };
        if !self.client_ok(req, &form) {
            return TestResponse::status(401).with_body("{\"error\":\"invalid_client\"}");
        }
        let mut state = self.lock();
        let scope = match form.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let code = form.get("code").cloned().unwrap_or_default();
                if !state.used_codes.insert(code.clone()) {
                    return refuse("invalid_grant");
                }
                let Some((challenge, redirect, scope)) = state.codes.remove(&code) else {
                    return refuse("invalid_grant");
                };
                let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(Sha256::digest(verifier.as_bytes()));
                if computed != challenge || form.get("redirect_uri") != Some(&redirect) {
                    return refuse("invalid_grant");
                }
                scope
            }
            Some("refresh_token") => {
                if state.refuse_refresh
                    || state.refresh.is_none()
                    || form.get("refresh_token") != state.refresh.as_ref()
                {
                    return refuse("invalid_grant");
                }
                state.refreshes += 1;
                "repo".to_owned()
            }
            _ => return refuse("unsupported_grant_type"),
        };
        state.issued += 1;
        let access = format!("at-{}-{}", state.issued, "x".repeat(24));
        let refresh = format!("rt-{}-{}", state.issued, "y".repeat(24));
        state.access.insert(access.clone());
        state.refresh = Some(refresh.clone());
        TestResponse::json(&serde_json::json!({
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "bearer",
            "expires_in": state.lifetime,
            "scope": scope,
        }))
    }

    fn register(&self, req: &RecordedRequest) -> TestResponse {
        let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
        let public = body["token_endpoint_auth_method"] == "none"
            && body["grant_types"] == serde_json::json!(["authorization_code", "refresh_token"]);
        if !public {
            return TestResponse::status(400).with_body("{\"error\":\"invalid_client_metadata\"}");
        }
        let mut state = self.lock();
        state.registrations += 1;
        let id = format!("dcr-client-{}", state.registrations);
        state.registered.push(id.clone());
        TestResponse::json(&serde_json::json!({ "client_id": id }))
    }
}

/// The browser's last step: follow `location` (from
/// [`FakeAuthServer::visit`]) to the loopback redirect with a plain HTTP
/// request; the status the listener answered.
pub async fn follow_redirect(location: &str) -> std::io::Result<u16> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let url = url::Url::parse(location).map_err(std::io::Error::other)?;
    let addr = format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port().unwrap_or(80)
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    stream
        .write_all(format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").as_bytes())
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}
