//! Why the network policy refused a request.

use std::fmt;

/// Where in a request a leak was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeakSite {
    /// The URL (raw or percent-decoded).
    Url,
    /// The value of the named header.
    Header(String),
    /// The request body.
    Body,
}

impl fmt::Display for LeakSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeakSite::Url => f.write_str("url"),
            LeakSite::Header(name) => write!(f, "header `{name}`"),
            LeakSite::Body => f.write_str("body"),
        }
    }
}

/// A refusal by the network policy. Messages name the rule, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denial {
    /// The URL does not parse or is not absolute.
    #[error("invalid url")]
    InvalidUrl,
    /// A scheme other than `https` (or host-allowed `http`).
    #[error("scheme `{0}` is not allowed")]
    Scheme(String),
    /// Plain `http` to an origin the host has not allowed it for.
    #[error("plain http to {host}:{port} is not allowed by the host")]
    PlainHttp {
        /// Requested host.
        host: String,
        /// Requested port.
        port: u16,
    },
    /// The URL carries a user name or password.
    #[error("url userinfo is not allowed")]
    Userinfo,
    /// The URL carries a fragment.
    #[error("url fragment is not allowed")]
    Fragment,
    /// A method outside GET, HEAD, POST, PUT, PATCH, DELETE.
    #[error("method `{0}` is not allowed")]
    Method(String),
    /// A header the guest may not set (host, authorization, cookie, ...).
    #[error("header `{0}` may not be set by a tool")]
    ForbiddenHeader(String),
    /// A header name or value that is not valid HTTP.
    #[error("invalid header")]
    InvalidHeader,
    /// Neither a credential audience nor a network target covers the origin.
    #[error("{host}:{port} is not a declared network target of this capability")]
    HostNotAllowed {
        /// Requested host.
        host: String,
        /// Requested port.
        port: u16,
    },
    /// The request names a credential the capability does not declare.
    #[error("credential `{0}` is not declared by this capability")]
    CredentialNotDeclared(String),
    /// The credential is declared but no secret is staged for it.
    #[error("credential `{0}` is not configured")]
    CredentialNotConfigured(String),
    /// The request's scheme, host or port differ from the credential's audience.
    #[error("credential `{0}` may only be sent to its declared audience")]
    AudienceMismatch(String),
    /// A credential aimed at a header the transport owns (`host`,
    /// `content-length`, …): the format accepts the name, the host never
    /// lets a secret choose framing or routing.
    #[error("a credential cannot be injected into the transport header `{0}`")]
    TransportHeader(String),
    /// An injection type the manifest format has but this host does not perform.
    #[error("injection type `{0}` is not supported by this host")]
    UnsupportedInjection(&'static str),
    /// A path-placeholder injection whose placeholder is not in the path.
    #[error("the url path has no `{{{0}}}` placeholder for the credential")]
    MissingPlaceholder(String),
    /// The guest's request already carries a staged secret.
    #[error("the request already carries a credential in its {0}")]
    StagedSecret(LeakSite),
    /// The guest's request carries a known token format.
    #[error("the request carries what looks like a {kind} in its {location}")]
    TokenFormat {
        /// Kind of token recognised (`GitHub token`, `JWT`).
        kind: &'static str,
        /// Where it was found.
        location: LeakSite,
    },
    /// A redirect hop was refused; the inner denial says why.
    #[error("redirect refused: {0}")]
    Redirect(Box<Denial>),
    /// Too many redirect hops.
    #[error("too many redirects")]
    TooManyRedirects,
    /// A URL or header list over the host's bounds (see
    /// [`crate::policy::MAX_URL_BYTES`] and its neighbours).
    #[error("the request's {what} is over the host's limit of {limit}")]
    HeadTooLarge {
        /// What is too large (`url bytes`, `header count`, `header bytes`).
        what: &'static str,
        /// The bound.
        limit: usize,
    },
}

impl Denial {
    /// A stable one-word name of the rule that refused, without what the
    /// request carried (what a metric is labelled with). A refused redirect
    /// is named by the rule that refused its hop.
    pub fn kind(&self) -> &'static str {
        match self {
            Denial::InvalidUrl => "invalid_url",
            Denial::Scheme(_) => "scheme",
            Denial::PlainHttp { .. } => "plain_http",
            Denial::Userinfo => "userinfo",
            Denial::Fragment => "fragment",
            Denial::Method(_) => "method",
            Denial::ForbiddenHeader(_) => "forbidden_header",
            Denial::InvalidHeader => "invalid_header",
            Denial::HostNotAllowed { .. } => "host_not_allowed",
            Denial::CredentialNotDeclared(_) => "credential_not_declared",
            Denial::CredentialNotConfigured(_) => "credential_not_configured",
            Denial::AudienceMismatch(_) => "audience_mismatch",
            Denial::TransportHeader(_) => "transport_header",
            Denial::UnsupportedInjection(_) => "unsupported_injection",
            Denial::MissingPlaceholder(_) => "missing_placeholder",
            Denial::StagedSecret(_) => "staged_secret",
            Denial::TokenFormat { .. } => "token_format",
            Denial::Redirect(inner) => inner.kind(),
            Denial::TooManyRedirects => "too_many_redirects",
            Denial::HeadTooLarge { .. } => "head_too_large",
        }
    }

    /// Whether this is a malformed request rather than a policy refusal.
    pub fn is_invalid_request(&self) -> bool {
        matches!(
            self,
            Denial::InvalidUrl
                | Denial::InvalidHeader
                | Denial::MissingPlaceholder(_)
                | Denial::HeadTooLarge { .. }
        )
    }
}

/// `text` cut to at most `max` bytes on a char boundary.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
