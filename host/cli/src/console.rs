//! `warden console`: a web console for the person behind a local data
//! directory, on loopback only. It opens with a one-time sign-in link
//! printed on the terminal (as notebook servers do); the link sets a
//! session cookie (`HttpOnly`, `SameSite=Strict`, path `/console`) and is
//! spent. The console shows pending approvals (tool, rule, origin and the
//! exact input that was fingerprinted) with approve, approve with a grant
//! and deny with feedback; live grants with revoke; connected accounts
//! (vendor, scopes, where each may be sent, never a value) with disconnect;
//! installed packages and their tools; and the recent audit lines.
//!
//! As any admin surface: every state change is a POST carrying the
//! session's CSRF token, and refused when the browser says it came from
//! another site (`Origin`, `Sec-Fetch-Site`); a request naming another
//! `Host` is refused (DNS rebinding); every page carries a strict
//! Content-Security-Policy (no inline script, nothing from another origin);
//! every value from a package, a tool input or the audit log is escaped;
//! nothing secret is rendered. The assets are compiled into the binary.

mod pages;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use warden_host::{ApprovalId, Host, Location, Resolution};
use warden_registry::{GrantId, GrantTerms, LocationId, now_millis};

use crate::commands::Context;

/// The policy every response carries: scripts and styles from the console
/// itself only, no frames, forms posting back to it only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// The session cookie's name.
const COOKIE: &str = "warden_console";
/// A form body larger than this is refused.
const MAX_FORM_BYTES: usize = 16 << 10;

/// What the console serves from.
pub(crate) struct Console {
    host: Host,
    location: Location,
    location_id: LocationId,
    audit_path: std::path::PathBuf,
    /// `127.0.0.1:PORT` (and `localhost:PORT`): the only `Host` accepted.
    origin_hosts: Vec<String>,
    /// The unspent sign-in token.
    login: Mutex<Option<String>>,
    /// Session id → its CSRF token.
    sessions: Mutex<HashMap<String, String>>,
}

/// Run `warden console`.
pub(crate) async fn run(cx: &Context, addr: SocketAddr) -> Result<ExitCode> {
    if !addr.ip().is_loopback() {
        bail!(
            "the console listens on loopback only ({addr} is not); put it behind your own \
             authenticated proxy to reach it from elsewhere"
        );
    }
    let (host, location) = cx.open()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener.local_addr()?;
    let token = random_token();
    let console = Arc::new(Console {
        host,
        location,
        location_id: LocationId::from(cx.location.as_str()),
        audit_path: cx.audit_path(),
        // The address it listens on as a browser writes it (`[::1]:PORT`
        // for IPv6), and `localhost`.
        origin_hosts: vec![local.to_string(), format!("localhost:{}", local.port())],
        login: Mutex::new(Some(token.clone())),
        sessions: Mutex::default(),
    });
    say!(
        "warden: console at http://{local}/console/login?token={token} (a one-time link; \
         Ctrl-C stops)"
    );
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            stopped = tokio::signal::ctrl_c() => {
                stopped?;
                return Ok(ExitCode::SUCCESS);
            }
        };
        let console = console.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let console = console.clone();
                async move { Ok::<_, Infallible>(console.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// 32 random bytes, hex.
fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equal without an early exit on the first differing byte.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
}

type Answer = Response<Full<Bytes>>;

impl Console {
    async fn handle(&self, request: Request<Incoming>) -> Answer {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if !self.origin_hosts.iter().any(|h| h == host) {
            return page(
                StatusCode::MISDIRECTED_REQUEST,
                pages::message("This console answers only on its own address."),
            );
        }
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or_default().to_owned();
        match (request.method(), path.as_str()) {
            (&Method::GET, "/console/console.css") => asset("text/css", pages::CSS),
            (&Method::GET, "/console/console.js") => asset("text/javascript", pages::JS),
            (&Method::GET, "/console/login") => self.sign_in(&query),
            _ => {
                let Some(csrf) = self.session_of(&request) else {
                    return page(
                        StatusCode::UNAUTHORIZED,
                        pages::message(
                            "Not signed in: open the link `warden console` printed on its terminal.",
                        ),
                    );
                };
                self.route(request, &path, &csrf).await
            }
        }
    }

    async fn route(&self, request: Request<Incoming>, path: &str, csrf: &str) -> Answer {
        let method = request.method().clone();
        match (method, path) {
            (Method::GET, "/console" | "/console/") => self.approvals_page(csrf).await,
            (Method::GET, "/console/packages") => {
                page(StatusCode::OK, pages::packages(&self.location.installed()))
            }
            (Method::GET, "/console/audit") => {
                match warden_host::audit_tail(&self.audit_path, 50) {
                    Ok(lines) => {
                        // A line this build cannot read is left out, not shown raw.
                        let entries: Vec<warden_host::AuditEntry> = lines
                            .iter()
                            .filter_map(|line| serde_json::from_str(line).ok())
                            .collect();
                        page(StatusCode::OK, pages::audit(&entries))
                    }
                    Err(error) => page(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        pages::message(&format!("reading the audit log: {error}")),
                    ),
                }
            }
            (Method::GET, "/console/accounts") => match self.host.secrets().accounts().await {
                Ok(accounts) => {
                    // Host records (`handle#…`: grants, registrations,
                    // registry logins) are not accounts.
                    let accounts: Vec<_> = accounts
                        .into_iter()
                        .filter(|a| !a.key.handle.contains('#'))
                        .collect();
                    let declared = declared_credentials(&self.location);
                    page(StatusCode::OK, pages::accounts(&accounts, &declared, csrf))
                }
                Err(error) => page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    pages::message(&error.to_string()),
                ),
            },
            (Method::GET, "/console/pending.json") => {
                match self.host.approvals().pending(&self.location_id).await {
                    Ok(pending) => json_answer(&serde_json::json!({ "pending": pending.len() })),
                    Err(error) => page(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        pages::message(&error.to_string()),
                    ),
                }
            }
            (Method::POST, _) => {
                if let Some(refusal) = cross_site(&request, &self.origin_hosts) {
                    return page(StatusCode::FORBIDDEN, pages::message(refusal));
                }
                let form = match read_form(request).await {
                    Ok(form) => form,
                    Err(reason) => return page(StatusCode::BAD_REQUEST, pages::message(&reason)),
                };
                if !form.get("csrf").is_some_and(|t| same(t, csrf)) {
                    return page(
                        StatusCode::FORBIDDEN,
                        pages::message(
                            "This form is stale or did not come from the console: reload and try again.",
                        ),
                    );
                }
                self.act(path, &form).await
            }
            _ => page(StatusCode::NOT_FOUND, pages::message("No such page.")),
        }
    }

    /// Spend the one-time token for a session.
    fn sign_in(&self, query: &str) -> Answer {
        let given = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let mut login = self.login.lock().unwrap_or_else(|e| e.into_inner());
        let valid = login.as_deref().is_some_and(|t| same(t, &given));
        if !valid {
            return page(
                StatusCode::UNAUTHORIZED,
                pages::message(
                    "This sign-in link is not valid or was used already: run `warden console` again.",
                ),
            );
        }
        *login = None;
        let session = random_token();
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.clone(), random_token());
        let mut answer = redirect("/console");
        let cookie = format!("{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/console");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            answer.headers_mut().insert(header::SET_COOKIE, value);
        }
        answer
    }

    /// The CSRF token of the request's session, if it has one.
    fn session_of(&self, request: &Request<Incoming>) -> Option<String> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        request
            .headers()
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == COOKIE)
            .find_map(|(_, id)| sessions.get(id).cloned())
    }

    async fn approvals_page(&self, csrf: &str) -> Answer {
        let approvals = self.host.approvals();
        let pending = approvals.pending(&self.location_id).await;
        let grants = approvals.grants(&self.location_id, now_millis()).await;
        let figures = self.figures();
        match (pending, grants) {
            (Ok(pending), Ok(grants)) => page(
                StatusCode::OK,
                pages::approvals(&pending, &grants, &figures, csrf),
            ),
            (Err(error), _) | (_, Err(error)) => page(
                StatusCode::INTERNAL_SERVER_ERROR,
                pages::message(&error.to_string()),
            ),
        }
    }

    /// The last hour's calls and failures, from the audit log's newest
    /// lines (what this data directory's processes did, whichever ran them).
    fn figures(&self) -> pages::Figures {
        let lines = warden_host::audit_tail(&self.audit_path, 2000).unwrap_or_default();
        let since = now_millis() - 3_600_000;
        let recent: Vec<warden_host::AuditEntry> = lines
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .filter(|e: &warden_host::AuditEntry| e.time >= since)
            .collect();
        pages::Figures {
            ran: recent.iter().filter(|e| e.outcome == "ok").count(),
            failed: recent
                .iter()
                .filter(|e| !matches!(e.outcome.as_str(), "ok" | "approval_required"))
                .count(),
            asked: recent
                .iter()
                .filter(|e| e.outcome == "approval_required")
                .count(),
        }
    }

    /// A state change: `/console/approvals/<id>` (action approve, grant or
    /// deny) or `/console/grants/<id>/revoke`.
    async fn act(&self, path: &str, form: &HashMap<String, String>) -> Answer {
        let approvals = self.host.approvals();
        if let Some(id) = path.strip_prefix("/console/approvals/") {
            let resolution = match form.get("action").map(String::as_str) {
                Some("approve") => Resolution::ApproveOnce,
                Some("grant") => Resolution::ApproveAndGrant(GrantTerms::default()),
                Some("deny") => match form
                    .get("feedback")
                    .map(|f| f.trim())
                    .filter(|f| !f.is_empty())
                {
                    Some(feedback) => Resolution::DenyWithFeedback(feedback.to_owned()),
                    None => Resolution::Deny,
                },
                _ => return page(StatusCode::BAD_REQUEST, pages::message("Unknown action.")),
            };
            return match approvals
                .resolve(&ApprovalId(id.to_owned()), resolution, now_millis())
                .await
            {
                Ok(_) => redirect("/console"),
                Err(error) => page(StatusCode::CONFLICT, pages::message(&error.to_string())),
            };
        }
        if path == "/console/accounts/set" {
            return self.store_value(form).await;
        }
        if path == "/console/accounts/disconnect" {
            let key = form
                .get("key")
                .and_then(|k| serde_json::from_str::<warden_egress::secrets::AccountKey>(k).ok());
            let Some(key) = key else {
                return page(StatusCode::BAD_REQUEST, pages::message("No such account."));
            };
            return match self.host.remove_account(&key).await {
                Ok(true) => redirect("/console/accounts"),
                Ok(false) => page(StatusCode::NOT_FOUND, pages::message("No such account.")),
                Err(error) => page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    pages::message(&error.to_string()),
                ),
            };
        }
        if let Some(id) = path
            .strip_prefix("/console/grants/")
            .and_then(|rest| rest.strip_suffix("/revoke"))
        {
            return match approvals.revoke_grant(&GrantId(id.to_owned())).await {
                Ok(true) => redirect("/console"),
                Ok(false) => page(
                    StatusCode::NOT_FOUND,
                    pages::message("No live grant with that id."),
                ),
                Err(error) => page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    pages::message(&error.to_string()),
                ),
            };
        }
        page(StatusCode::NOT_FOUND, pages::message("No such action."))
    }
}

impl Console {
    /// Store a credential's value for the package that declares it, bound
    /// to that package's audiences (as `warden secret set`). The value is
    /// never shown again.
    async fn store_value(&self, form: &HashMap<String, String>) -> Answer {
        let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
        let (extension, vendor, handle) = (field("extension"), field("vendor"), field("handle"));
        let value = field("value");
        if value.is_empty() {
            return page(
                StatusCode::BAD_REQUEST,
                pages::message("No value was given."),
            );
        }
        let declared = self
            .location
            .credential_declarations(vendor, handle)
            .into_iter()
            .find(|d| d.extension == extension);
        let Some(declared) = declared else {
            return page(
                StatusCode::NOT_FOUND,
                pages::message("No installed package declares that credential."),
            );
        };
        let key = warden_egress::secrets::AccountKey::new(vendor, handle, declared.scopes.clone());
        let value = secrecy::SecretString::from(value.to_owned());
        match self.location.connect_account(extension, &key, value).await {
            Ok(_) => redirect("/console/accounts"),
            Err(error) => page(StatusCode::BAD_REQUEST, pages::message(&error.to_string())),
        }
    }
}

/// Every credential an installed package declares: (package, vendor,
/// handle, where it may be sent), once each.
fn declared_credentials(location: &Location) -> Vec<pages::Declared> {
    let mut seen = std::collections::BTreeSet::new();
    let mut declared = Vec::new();
    for installed in location.installed() {
        let id = &installed.package.id;
        for capability in &installed.package.capabilities {
            for credential in &capability.credentials {
                let entry = (
                    id.clone(),
                    credential.vendor.clone(),
                    credential.handle.clone(),
                );
                if !seen.insert(entry) {
                    continue;
                }
                let audience = &credential.audience;
                declared.push(pages::Declared {
                    extension: id.clone(),
                    vendor: credential.vendor.clone(),
                    handle: credential.handle.clone(),
                    audience: match audience.port {
                        Some(port) => format!("{}://{}:{port}", audience.scheme, audience.host),
                        None => format!("{}://{}", audience.scheme, audience.host),
                    },
                });
            }
        }
    }
    declared
}

/// Why a state change is refused as coming from another site, if it is.
fn cross_site(request: &Request<Incoming>, hosts: &[String]) -> Option<&'static str> {
    let headers = request.headers();
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| !matches!(v.as_bytes(), b"same-origin" | b"none"))
    {
        return Some("Refused: this request came from another site.");
    }
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
    match origin {
        None => None,
        Some(origin) => {
            let own = hosts.iter().any(|h| origin == format!("http://{h}"));
            (!own).then_some("Refused: this request came from another origin.")
        }
    }
}

/// A urlencoded form body, bounded.
async fn read_form(request: Request<Incoming>) -> Result<HashMap<String, String>, String> {
    let body = Limited::new(request.into_body(), MAX_FORM_BYTES)
        .collect()
        .await
        .map_err(|_| format!("The form is over {MAX_FORM_BYTES} bytes."))?
        .to_bytes();
    Ok(url::form_urlencoded::parse(&body).into_owned().collect())
}

/// An HTML page with the console's headers.
fn page(status: StatusCode, html: String) -> Answer {
    with_headers(status, "text/html; charset=utf-8", Bytes::from(html))
}

fn asset(content_type: &str, body: &'static str) -> Answer {
    with_headers(
        StatusCode::OK,
        content_type,
        Bytes::from_static(body.as_bytes()),
    )
}

fn json_answer(value: &serde_json::Value) -> Answer {
    with_headers(
        StatusCode::OK,
        "application/json",
        Bytes::from(value.to_string()),
    )
}

fn redirect(to: &str) -> Answer {
    let mut answer = with_headers(StatusCode::SEE_OTHER, "text/plain", Bytes::new());
    if let Ok(value) = HeaderValue::from_str(to) {
        answer.headers_mut().insert(header::LOCATION, value);
    }
    answer
}

fn with_headers(status: StatusCode, content_type: &str, body: Bytes) -> Answer {
    let mut answer = Response::new(Full::new(body));
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(header::CONTENT_TYPE, content_type);
    set(header::CONTENT_SECURITY_POLICY, CSP);
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
    // `Origin: null` with the console's own forms, which the origin check refuses.
    set(header::REFERRER_POLICY, "same-origin");
    set(header::CACHE_CONTROL, "no-store");
    set(header::X_FRAME_OPTIONS, "DENY");
    answer
}
