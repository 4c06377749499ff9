//! The network policy of one capability: a pure decision, no network.
//!
//! Built from the capability's credential audiences and network targets and
//! the host's [`EgressConfig`]; deny by default. [`NetworkPolicy::authorize`]
//! turns a parsed guest request into a [`Plan`] (what may be sent, and which
//! credential to inject) or a [`Denial`].
//!
//! A capability that stages a credential may send to every declared network
//! target, not only to the credential's audiences (reading an API and then
//! fetching from the provider's file host is an ordinary tool). The secret
//! is kept in by two rules instead: every request, to any host and on every
//! redirect hop, passes the leak pre-scan (`policy/leak.rs`), which looks for the
//! staged secrets in all the forms and decoded views the
//! [`Redactor`] knows; and every response is redacted in those same forms
//! before the guest sees it, so a guest never holds a secret it could
//! transform beyond what the scan recognises.
//!
//! ```
//! use warden_core::spec::NetworkTarget;
//! use warden_egress::policy::{NetworkPolicy, ParsedRequest};
//! use warden_egress::{redact::Redactor, EgressConfig};
//! let target = NetworkTarget { scheme: "https".into(), host_pattern: "example.com".into(), port: None };
//! let policy = NetworkPolicy::for_capability("ext.read", &[], &[target], &EgressConfig::default());
//! let request = ParsedRequest::parse("GET", "https://example.com/a", &[], None).unwrap();
//! assert!(policy.authorize(&request, None, &Redactor::default()).is_ok());
//! let other = ParsedRequest::parse("GET", "https://example.org/a", &[], None).unwrap();
//! assert!(policy.authorize(&other, None, &Redactor::default()).is_err());
//! ```

mod denial;
pub(crate) mod headers;
mod leak;

use http::{HeaderName, HeaderValue, Method};
use url::Url;
use warden_core::spec::{CredentialSpec, Injection, NetworkTarget};

pub(crate) use denial::bounded;
pub use denial::{Denial, LeakSite};

use crate::config::{EgressConfig, HostPort};
use crate::redact::Redactor;

/// Methods a guest may use.
pub const ALLOWED_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/// The scheme of an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// TLS.
    Https,
    /// Plain text; only where the host allows it.
    Http,
}

impl Scheme {
    /// `https` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }
}

/// Scheme, host and port of a request: what audiences are compared with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestOrigin {
    /// Scheme.
    pub scheme: Scheme,
    /// Lowercase host name or IP literal (IPv6 in brackets).
    pub host: String,
    /// Effective port.
    pub port: u16,
}

/// A guest request after syntax checks, before policy.
#[derive(Debug, Clone)]
pub struct ParsedRequest {
    /// Method (one of [`ALLOWED_METHODS`]).
    pub method: Method,
    /// Absolute URL.
    pub url: Url,
    /// Headers, names lowercase.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Body, if any.
    pub body: Option<Vec<u8>>,
}

/// Longest URL a tool may send (what common servers accept).
pub const MAX_URL_BYTES: usize = 8 << 10;
/// Most headers a tool may set on one request (hyper reads at most 100
/// in a response; a request needs far fewer).
pub const MAX_HEADERS: usize = 100;
/// Largest total of a request's header names and values.
pub const MAX_HEADER_BYTES: usize = 64 << 10;

impl ParsedRequest {
    /// Parse the guest's method, URL and headers, each within the host's
    /// bounds ([`MAX_URL_BYTES`], [`MAX_HEADERS`], [`MAX_HEADER_BYTES`]):
    /// checked before anything is parsed, scanned or copied, so what a
    /// tool sends costs the host what a request may cost.
    pub fn parse(
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<Vec<u8>>,
    ) -> Result<Self, Denial> {
        let too_large = |what, limit| Err(Denial::HeadTooLarge { what, limit });
        if url.len() > MAX_URL_BYTES {
            return too_large("url bytes", MAX_URL_BYTES);
        }
        if headers.len() > MAX_HEADERS {
            return too_large("header count", MAX_HEADERS);
        }
        let header_bytes: usize = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
        if header_bytes > MAX_HEADER_BYTES {
            return too_large("header bytes", MAX_HEADER_BYTES);
        }
        if !ALLOWED_METHODS.contains(&method) {
            return Err(Denial::Method(bounded(method, 16)));
        }
        let method = Method::from_bytes(method.as_bytes()).map_err(|_| Denial::InvalidUrl)?;
        let url = Url::parse(url).map_err(|_| Denial::InvalidUrl)?;
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let name =
                    HeaderName::from_bytes(name.as_bytes()).map_err(|_| Denial::InvalidHeader)?;
                let value = HeaderValue::from_str(value).map_err(|_| Denial::InvalidHeader)?;
                Ok((name, value))
            })
            .collect::<Result<_, Denial>>()?;
        Ok(Self {
            method,
            url,
            headers,
            body,
        })
    }

    /// The request's scheme, host and port, refusing userinfo and fragments.
    pub fn endpoint(&self) -> Result<RequestOrigin, Denial> {
        endpoint_of(&self.url)
    }
}

/// The endpoint of `url`, refusing other schemes, userinfo and fragments.
pub fn endpoint_of(url: &Url) -> Result<RequestOrigin, Denial> {
    let scheme = match url.scheme() {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => return Err(Denial::Scheme(bounded(other, 16))),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Denial::Userinfo);
    }
    if url.fragment().is_some() {
        return Err(Denial::Fragment);
    }
    let host = url
        .host_str()
        .ok_or(Denial::InvalidUrl)?
        .to_ascii_lowercase();
    let port = url.port_or_known_default().ok_or(Denial::InvalidUrl)?;
    Ok(RequestOrigin { scheme, host, port })
}

/// A credential to inject into a planned request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedInjection {
    /// Declared handle name.
    pub handle: String,
    /// Where the value goes.
    pub injection: Injection,
}

/// What the policy allows to be sent.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where it goes.
    pub endpoint: RequestOrigin,
    /// The checked request (no secret in it).
    pub request: ParsedRequest,
    /// The credential to inject, if any.
    pub injection: Option<PlannedInjection>,
}

/// The network policy of one capability.
#[derive(Debug, Clone)]
pub struct NetworkPolicy {
    capability_id: String,
    credentials: Vec<CredentialSpec>,
    targets: Vec<NetworkTarget>,
    plain_http: Vec<HostPort>,
    injection_headers: Vec<String>,
    /// Headers the host's own client sets (the hosted-MCP lane's
    /// `mcp-session-id`); exempt from the guest header rules.
    host_headers: Vec<String>,
}

impl NetworkPolicy {
    /// The policy of `capability_id` from its declarations and the host config.
    pub fn for_capability(
        capability_id: &str,
        credentials: &[CredentialSpec],
        targets: &[NetworkTarget],
        config: &EgressConfig,
    ) -> Self {
        let injection_headers = credentials
            .iter()
            .filter_map(|c| match &c.injection {
                Injection::Header { name, .. } => Some(name.to_ascii_lowercase()),
                Injection::Basic { .. } => Some("authorization".to_owned()),
                _ => None,
            })
            .collect();
        Self {
            capability_id: capability_id.to_owned(),
            credentials: credentials.to_vec(),
            targets: targets.to_vec(),
            plain_http: config.plain_http_targets.clone(),
            injection_headers,
            host_headers: Vec::new(),
        }
    }

    /// The capability this policy belongs to.
    pub fn capability_id(&self) -> &str {
        &self.capability_id
    }

    /// The capability's declared credentials.
    pub fn credentials(&self) -> &[CredentialSpec] {
        &self.credentials
    }

    /// The declared credential `handle`.
    pub fn credential(&self, handle: &str) -> Option<&CredentialSpec> {
        self.credentials.iter().find(|c| c.handle == handle)
    }

    /// Header names of the capability's header injections (lowercase).
    pub(crate) fn injection_headers(&self) -> Vec<&str> {
        self.injection_headers.iter().map(String::as_str).collect()
    }

    /// This policy, letting the host's own code set `names` (a first-party
    /// service's protocol headers); the injection headers stay refused.
    pub fn with_host_headers(mut self, names: &[&str]) -> Self {
        self.allow_host_headers(names);
        self
    }

    /// Let the host's own client set `names` (lowercase). An injection
    /// header is never among them.
    pub(crate) fn allow_host_headers(&mut self, names: &[&str]) {
        let extra = self.injection_headers.clone();
        self.host_headers.extend(
            names
                .iter()
                .map(|n| n.to_ascii_lowercase())
                .filter(|n| !extra.contains(n)),
        );
    }

    /// Whether `endpoint` is a declared audience or network target.
    pub fn check_endpoint(&self, endpoint: &RequestOrigin) -> Result<(), Denial> {
        let RequestOrigin { scheme, host, port } = endpoint;
        if *scheme == Scheme::Http && !self.plain_http.iter().any(|t| t.matches(host, *port)) {
            return Err(Denial::PlainHttp {
                host: bounded(host, 253),
                port: *port,
            });
        }
        let audience = self
            .credentials
            .iter()
            .any(|c| self.credential_may_go(c, endpoint));
        let target = self.targets.iter().any(|t| {
            t.scheme == scheme.as_str() && t.effective_port() == *port && t.matches_host(host)
        });
        if audience || target {
            Ok(())
        } else {
            Err(Denial::HostNotAllowed {
                host: bounded(host, 253),
                port: *port,
            })
        }
    }

    /// What a request to `endpoint` (which the policy allowed) is counted
    /// under: the host as declared (a credential's audience or a target
    /// naming it exactly), else the wildcard pattern it matched (`*.example.com`,
    /// `*`), so a guest choosing names under a wildcard cannot mint a label
    /// per request, nor carry its input out in one.
    pub fn target_label(&self, endpoint: &RequestOrigin) -> String {
        let host = endpoint.host.as_str();
        let declared = self
            .credentials
            .iter()
            .any(|c| c.audience.host.eq_ignore_ascii_case(host))
            || self.targets.iter().any(|t| t.host_pattern == host)
            || self
                .plain_http
                .iter()
                .any(|t| t.matches(host, endpoint.port));
        if declared {
            return host.to_owned();
        }
        self.targets
            .iter()
            .find(|t| t.matches_host(host))
            .map_or_else(|| "other".to_owned(), |t| t.host_pattern.clone())
    }

    /// Decide whether `request` may be sent, injecting `credential` if named.
    ///
    /// `staged` finds the call's staged secrets for the leak pre-scan, which
    /// runs here, before any injection.
    pub fn authorize(
        &self,
        request: &ParsedRequest,
        credential: Option<&str>,
        staged: &Redactor,
    ) -> Result<Plan, Denial> {
        let plan = self.plan(request, credential)?;
        prescan(&plan.request, staged)?;
        Ok(plan)
    }

    /// [`NetworkPolicy::authorize`] short of the leak pre-scan, its costly
    /// part: headers, endpoint, credential.
    pub fn plan(&self, request: &ParsedRequest, credential: Option<&str>) -> Result<Plan, Denial> {
        let extra = self.injection_headers();
        for (name, _) in &request.headers {
            let by_host = self.host_headers.iter().any(|h| h == name.as_str());
            if !by_host && !headers::guest_may_set(name.as_str(), &extra) {
                return Err(Denial::ForbiddenHeader(name.as_str().to_owned()));
            }
        }
        let endpoint = request.endpoint()?;
        self.check_endpoint(&endpoint)?;
        let injection = match credential {
            None => None,
            Some(handle) => {
                let spec = self
                    .credential(handle)
                    .ok_or_else(|| Denial::CredentialNotDeclared(bounded(handle, 64)))?;
                if !self.credential_may_go(spec, &endpoint) {
                    return Err(Denial::AudienceMismatch(spec.handle.clone()));
                }
                if let Injection::PathPlaceholder { placeholder } = &spec.injection
                    && !has_placeholder(&request.url, placeholder)
                {
                    return Err(Denial::MissingPlaceholder(bounded(placeholder, 64)));
                }
                Some(PlannedInjection {
                    handle: spec.handle.clone(),
                    injection: spec.injection.clone(),
                })
            }
        };
        Ok(Plan {
            endpoint,
            request: request.clone(),
            injection,
        })
    }
}

impl NetworkPolicy {
    /// Whether credential `spec` may be sent to `endpoint`: its audience,
    /// over https — or, the one exception, a loopback origin the operator
    /// allowed plain http to ([`EgressConfig::allow_loopback_http`]) for
    /// an audience that names `http` itself. Only a probe of a local test
    /// server has such an audience (the manifest validator requires https
    /// audiences), and loopback traffic never leaves the machine.
    fn credential_may_go(&self, spec: &CredentialSpec, endpoint: &RequestOrigin) -> bool {
        let audience = &spec.audience;
        let loopback_http = audience.scheme == "http"
            && endpoint.scheme == Scheme::Http
            && matches!(endpoint.host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
            && audience.host.eq_ignore_ascii_case(&endpoint.host)
            && audience.effective_port() == endpoint.port
            && self
                .plain_http
                .iter()
                .any(|t| t.matches(&endpoint.host, endpoint.port));
        loopback_http || audience_matches(spec, endpoint)
    }
}

/// Whether `endpoint` equals the audience of `spec` (credentials go over https only).
pub(crate) fn audience_matches(spec: &CredentialSpec, endpoint: &RequestOrigin) -> bool {
    let audience = &spec.audience;
    audience.scheme == "https"
        && endpoint.scheme == Scheme::Https
        && audience.host.eq_ignore_ascii_case(&endpoint.host)
        && audience.effective_port() == endpoint.port
}

/// The `{placeholder}` as it appears in a parsed URL path.
pub(crate) fn placeholder_forms(placeholder: &str) -> [String; 2] {
    [format!("{{{placeholder}}}"), format!("%7B{placeholder}%7D")]
}

fn has_placeholder(url: &Url, placeholder: &str) -> bool {
    let path = url.path();
    placeholder_forms(placeholder)
        .iter()
        .any(|form| path.contains(form.as_str()))
}

/// The leak pre-scan over URL (raw and decoded), header values and body.
pub(crate) fn prescan(request: &ParsedRequest, staged: &Redactor) -> Result<(), Denial> {
    let raw = request.url.as_str();
    leak::scan(raw.as_bytes(), LeakSite::Url, staged)?;
    let decoded = percent_encoding::percent_decode_str(raw).collect::<Vec<u8>>();
    leak::scan(&decoded, LeakSite::Url, staged)?;
    for (name, value) in &request.headers {
        leak::scan(
            value.as_bytes(),
            LeakSite::Header(name.as_str().to_owned()),
            staged,
        )?;
    }
    if let Some(body) = &request.body {
        leak::scan(body, LeakSite::Body, staged)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
