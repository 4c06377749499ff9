//! The registry client's transport: one request through egress, a bounded
//! body, redirects followed in a new session toward the new origin (which
//! never carries the registry's authorization), and the registry's
//! challenge answered once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use secrecy::SecretString;
use warden_core::net::GuestRequest;
use warden_core::spec::{Audience, CredentialSpec, NetworkTarget};
use warden_egress::Egress;

use crate::auth::{Authorization, Challenge, Login, Logins};
use crate::{OciError, PullBounds, Reference};

/// Redirects followed per request (a blob served from object storage).
const MAX_REDIRECTS: usize = 5;
/// A token service's answer, an error body shown in a message.
const SMALL_BODY: u64 = 64 << 10;
/// The protocol headers the client sends.
const HEADERS: &[&str] = &["accept", "content-type", "content-range"];
/// The staged credential's handle.
const HANDLE: &str = "registry";

/// A registry client over the host's egress.
#[derive(Debug, Clone)]
pub struct Client {
    egress: Egress,
    logins: Arc<dyn Logins>,
    pub(crate) bounds: PullBounds,
}

impl Client {
    /// A client whose requests go through `egress`, signing in with `logins`.
    pub fn new(egress: Egress, logins: Arc<dyn Logins>) -> Self {
        Client {
            egress,
            logins,
            bounds: PullBounds::default(),
        }
    }

    /// With `bounds` on what a pull reads.
    pub fn with_bounds(mut self, bounds: PullBounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// The egress limits' request body bound (larger blobs are uploaded in chunks).
    pub(crate) fn max_request_body(&self) -> usize {
        self.egress.config().max_request_body
    }

    /// The signed-in state of one operation on `reference` with `actions`
    /// (`pull` or `pull,push`).
    pub(crate) fn signer(&self, reference: &Reference, actions: &'static str) -> Signer {
        Signer {
            reference: reference.clone(),
            actions,
            authorization: Mutex::new(None),
        }
    }

    /// Send `request` for `signer`'s repository: with the authorization the
    /// registry asked for so far, and when it answers 401, once more after
    /// answering its challenge.
    pub(crate) async fn send(
        &self,
        signer: &Signer,
        request: Request,
    ) -> Result<Response, OciError> {
        let response = self.follow(signer, &request).await?;
        if response.status != 401 {
            return Ok(response);
        }
        let registry = signer.reference.registry();
        // A host the registry redirected to is not asked to sign in: its
        // challenge could name a realm that collects the registry's login.
        if !response.from_registry {
            return Err(response.unexpected(&request.what));
        }
        let challenge = response
            .header("www-authenticate")
            .and_then(Challenge::parse);
        let already = signer.current().is_some();
        let login = self.logins.login(&registry)?;
        let authorization = match (challenge, already) {
            (
                Some(Challenge::Bearer {
                    realm,
                    service,
                    scope,
                }),
                _,
            ) => {
                let scope = scope.unwrap_or_else(|| signer.scope());
                let token = self
                    .token(&realm, service.as_deref(), &[scope, signer.scope()], &login)
                    .await?;
                Authorization::Bearer(token)
            }
            (Some(Challenge::Basic), false) => match login {
                Login::Basic { username, password } => Authorization::Basic { username, password },
                Login::Anonymous => return Err(unauthorized(&registry, &response)),
            },
            _ => return Err(unauthorized(&registry, &response)),
        };
        *signer
            .authorization
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(authorization);
        let again = self.follow(signer, &request).await?;
        match again.status {
            401 | 403 => Err(unauthorized(&registry, &again)),
            _ => Ok(again),
        }
    }

    /// Ask the token service at `realm` for a token for `scopes`, with the
    /// login (sent to the realm only).
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
        login: &Login,
    ) -> Result<SecretString, OciError> {
        let shown_realm = {
            let mut url = url::Url::parse(realm).map_err(|_| OciError::Token {
                realm: crate::shown(realm),
                reason: "is not a URL".into(),
            })?;
            url.set_query(None);
            crate::shown(url.as_str())
        };
        let mut url = url::Url::parse(realm).expect("parsed above");
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            let mut seen = std::collections::BTreeSet::new();
            for scope in scopes.iter().filter(|s| seen.insert(s.as_str())) {
                query.append_pair("scope", scope);
            }
        }
        let authorization = match login {
            Login::Basic { username, password } => Some(Authorization::Basic {
                username: username.clone(),
                password: password.clone(),
            }),
            Login::Anonymous => None,
        };
        let request =
            Request::get(url.as_str(), "the token request", SMALL_BODY).accept("application/json");
        let response = self
            .exchange(&request, url.as_str(), authorization.as_ref())
            .await
            .map_err(|e| OciError::Token {
                realm: shown_realm.clone(),
                reason: e.to_string(),
            })?;
        if response.status != 200 {
            return Err(OciError::Token {
                realm: shown_realm,
                reason: format!("answered HTTP {}{}", response.status, response.detail()),
            });
        }
        crate::auth::token_from(&response.body).map_err(|reason| OciError::Token {
            realm: shown_realm,
            reason,
        })
    }

    /// `request`, following redirects: the registry's origin gets the
    /// signer's authorization; any other origin gets none.
    async fn follow(&self, signer: &Signer, request: &Request) -> Result<Response, OciError> {
        let registry = signer.reference.target();
        let mut url = request.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let parsed = url::Url::parse(&url).map_err(|_| OciError::Network {
                what: request.what.clone(),
                reason: format!("`{}` is not a URL", crate::shown(&url)),
            })?;
            let same_origin = parsed.scheme() == "https"
                && parsed.host_str() == Some(registry.host_pattern.as_str())
                && parsed.port_or_known_default() == Some(registry.port.unwrap_or(443));
            let authorization = match same_origin {
                true => signer.current(),
                false => None,
            };
            let mut response = self.exchange(request, &url, authorization.as_ref()).await?;
            response.from_registry = same_origin;
            let redirected = matches!(response.status, 301 | 302 | 303 | 307 | 308)
                && matches!(request.method, "GET" | "HEAD");
            let Some(location) = response.header("location").filter(|_| redirected) else {
                return Ok(response);
            };
            url = parsed
                .join(location)
                .map_err(|_| OciError::Network {
                    what: request.what.clone(),
                    reason: format!("redirected to `{}`, not a URL", crate::shown(location)),
                })?
                .to_string();
        }
        Err(OciError::Redirects {
            what: request.what.clone(),
            max: MAX_REDIRECTS,
        })
    }

    /// One request to `url` through egress in a session toward its origin,
    /// with `authorization` injected toward that origin; the body read up to
    /// the request's bound.
    async fn exchange(
        &self,
        request: &Request,
        url: &str,
        authorization: Option<&Authorization>,
    ) -> Result<Response, OciError> {
        let network = |reason: String| OciError::Network {
            what: request.what.clone(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|_| network("not a URL".into()))?;
        let host = parsed.host_str().unwrap_or_default().to_owned();
        let port = parsed.port();
        let target = NetworkTarget {
            scheme: parsed.scheme().to_owned(),
            host_pattern: host.clone(),
            port,
        };
        let credential = authorization.map(|a| {
            let (injection, value) = a.injection();
            let spec = CredentialSpec {
                handle: HANDLE.into(),
                vendor: "oci".into(),
                scopes: Vec::new(),
                audience: Audience {
                    scheme: "https".into(),
                    host,
                    port,
                },
                injection,
                required: false,
            };
            (spec, value)
        });
        let has_credential = credential.is_some();
        let sent = request.body.as_ref().map_or(0, Vec::len) as u64;
        let session = self.egress.host_client_session(
            "oci.registry",
            &[target],
            credential,
            sent + request.limit + SMALL_BODY,
            HEADERS,
        );
        let timeout = self.egress.config().total_timeout;
        let guest = GuestRequest {
            method: request.method.to_owned(),
            url: url.to_owned(),
            headers: request.headers.clone(),
            body: request.body.clone(),
            timeout: Some(timeout),
        };
        let read = async {
            let mut streaming = session
                .open_stream(guest, has_credential.then_some(HANDLE))
                .await
                .map_err(|e| network(session.redactor().redact_str(&e.to_string())))?;
            // An error's body is read only far enough to show it.
            let limit = match streaming.status {
                200..=299 => request.limit,
                _ => SMALL_BODY,
            };
            let mut body = Vec::new();
            while let Some(chunk) = streaming.body.next_chunk().await {
                let chunk = chunk.map_err(|e| network(e.to_string()))?;
                if body.len() as u64 + chunk.len() as u64 > limit {
                    if streaming.status >= 300 {
                        break;
                    }
                    return Err(OciError::TooLarge {
                        what: request.what.clone(),
                        limit,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            if streaming.status >= 300 {
                body = session.redactor().redact_bytes(&body).into_owned();
            }
            Ok(Response {
                status: streaming.status,
                headers: streaming.headers,
                body,
                from_registry: false,
            })
        };
        match tokio::time::timeout(timeout + Duration::from_secs(1), read).await {
            Ok(result) => result,
            Err(_) => Err(network(format!(
                "no complete answer within {} s",
                timeout.as_secs()
            ))),
        }
    }
}

/// The state of one operation on a repository: the authorization the
/// registry asked for, once answered.
#[derive(Debug)]
pub(crate) struct Signer {
    reference: Reference,
    actions: &'static str,
    authorization: Mutex<Option<Authorization>>,
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Authorization::Basic { username, .. } => write!(f, "Basic({username})"),
            Authorization::Bearer(_) => f.write_str("Bearer(..)"),
        }
    }
}

impl Signer {
    fn current(&self) -> Option<Authorization> {
        self.authorization
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `repository:<name>:<actions>`.
    fn scope(&self) -> String {
        format!(
            "repository:{}:{}",
            self.reference.repository(),
            self.actions
        )
    }
}

/// One request of the protocol.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: &'static str,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<Vec<u8>>,
    /// Bound on a successful answer's body.
    pub(crate) limit: u64,
    /// What it is, for messages (`the manifest of …`).
    pub(crate) what: String,
}

impl Request {
    pub(crate) fn get(url: &str, what: &str, limit: u64) -> Self {
        Request {
            method: "GET",
            url: url.to_owned(),
            headers: Vec::new(),
            body: None,
            limit,
            what: what.to_owned(),
        }
    }

    pub(crate) fn new(method: &'static str, url: &str, what: &str) -> Self {
        Request {
            method,
            ..Request::get(url, what, SMALL_BODY)
        }
    }

    pub(crate) fn accept(self, value: &str) -> Self {
        self.header("accept", value)
    }

    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub(crate) fn body(mut self, content_type: &str, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self.header("content-type", content_type)
    }
}

/// A registry's answer.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Whether the registry's own origin answered (not a host it
    /// redirected to): only its challenge is answered with the login.
    pub(crate) from_registry: bool,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `: <the registry's error text>` (the distribution spec's `errors`
    /// array, else the body's start), bounded; empty when there is none.
    pub(crate) fn detail(&self) -> String {
        let from_errors = serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| {
                let errors = v.get("errors")?.as_array()?;
                let texts: Vec<String> = errors
                    .iter()
                    .filter_map(|e| {
                        let code = e.get("code").and_then(|c| c.as_str()).unwrap_or("");
                        let message = e.get("message").and_then(|m| m.as_str()).unwrap_or("");
                        (!code.is_empty() || !message.is_empty())
                            .then(|| format!("{code} {message}").trim().to_owned())
                    })
                    .collect();
                (!texts.is_empty()).then(|| texts.join("; "))
            });
        let text =
            from_errors.unwrap_or_else(|| String::from_utf8_lossy(&self.body).trim().to_owned());
        match text.is_empty() {
            true => String::new(),
            false => format!(": {}", crate::shown(&text)),
        }
    }

    /// An unexpected answer to `what`.
    pub(crate) fn unexpected(&self, what: &str) -> OciError {
        OciError::Status {
            what: what.to_owned(),
            status: self.status,
            detail: self.detail(),
        }
    }
}

fn unauthorized(registry: &str, response: &Response) -> OciError {
    OciError::Unauthorized {
        registry: registry.to_owned(),
        detail: response.detail(),
    }
}
