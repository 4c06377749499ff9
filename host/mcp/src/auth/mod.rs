//! Who may call the streamable HTTP endpoint.
//!
//! Loopback serving may run without authentication: every local process,
//! of any user of the machine, can then call it (with the host's
//! credentials), so it is for a machine of one's own; a web page cannot (its
//! JSON request needs a CORS preflight, which is not answered, and only
//! loopback `Host` names are served). Anything else must be configured with
//! an [`HttpAuth`]; [`crate::serve_http_with`] refuses to start without one.
//!
//! A static bearer token is the simple mode: the token is read from a file
//! (never a command-line argument, which other local users can see), only its
//! sha256 is kept, and a presented token is compared by digest in constant
//! time, so neither timing nor length tells an attacker how close a guess is.
//! A request without a valid token is answered `401` with a
//! `WWW-Authenticate: Bearer` challenge (RFC 6750) and never reaches MCP.
//!
//! The OAuth 2.1 resource-server mode ([`JwtAuth`]) accepts JWT access tokens
//! from a configured issuer instead, serves its protected-resource metadata
//! at [`METADATA_PATH`] and names it in every challenge; a valid token
//! without the required scopes is answered `403 insufficient_scope`.

mod jwt;

use std::path::Path;

use hyper::{HeaderMap, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub use jwt::{
    JwksSource, JwtAuth, KEY_MAX_AGE, KEY_REFETCH_INTERVAL, LEEWAY_SECS, STREAM_RECHECK_INTERVAL,
};

/// Where the protected-resource metadata (RFC 9728) is served in OAuth mode.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Shortest token accepted: 32 characters (e.g. `openssl rand -hex 16`).
pub const MIN_TOKEN_LEN: usize = 32;

/// How callers of the HTTP endpoint authenticate.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HttpAuth {
    /// Every request carries `Authorization: Bearer <token>`.
    Bearer(BearerToken),
    /// Every request carries a JWT access token from the configured issuer.
    Jwt(JwtAuth),
}

/// A static bearer token; only its digest is held.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// Why an authentication setting was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// A token or key file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The token is too short or holds characters a header cannot carry.
    #[error(
        "the bearer token {what}: use at least {MIN_TOKEN_LEN} visible ASCII characters without spaces (e.g. `openssl rand -hex 32`)"
    )]
    WeakToken {
        /// What is wrong with it.
        what: &'static str,
    },
    /// The issuer's key set is unusable.
    #[error("the JWKS {0}")]
    Jwks(&'static str),
    /// The audience is not this server's `http(s)` resource URL.
    #[error(
        "the audience `{audience}` is not an http(s) URL of this server (e.g. https://warden.example.com/mcp)"
    )]
    Audience {
        /// The audience given.
        audience: String,
    },
}

impl BearerToken {
    /// A token from its text (surrounding whitespace, such as a file's final
    /// newline, is ignored).
    pub fn new(token: &str) -> Result<Self, AuthConfigError> {
        let token = token.trim();
        if token.len() < MIN_TOKEN_LEN {
            return Err(AuthConfigError::WeakToken {
                what: "is too short",
            });
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AuthConfigError::WeakToken {
                what: "holds spaces or non-ASCII characters",
            });
        }
        Ok(BearerToken {
            digest: Sha256::digest(token.as_bytes()).into(),
        })
    }

    /// The token in the file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, AuthConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::new(&text)
    }

    /// Whether `presented` is this token, in time independent of both.
    fn matches(&self, presented: &[u8]) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        self.digest.ct_eq(&digest).into()
    }
}

/// Who made a request, as authentication established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The caller's identity (`bearer` for the static token).
    pub subject: String,
    /// When the credential that authenticated the request stops being
    /// accepted (Unix seconds: a JWT's `exp` plus the clock-skew leeway);
    /// `None` for a credential that does not expire (the static token).
    /// An event stream the request opened ends then.
    pub expires_at: Option<i64>,
    /// Whether the caller is one person among several (a JWT subject),
    /// whose calls use their own accounts; `false` for the static token,
    /// which stands for the deployment (its accounts serve it).
    pub own_accounts: bool,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token was presented and is not valid (signature, issuer, audience,
    /// expiry, or not the static token).
    InvalidToken,
    /// A valid token without the required scopes (`403`).
    InsufficientScope,
}

impl Rejection {
    /// `401`, or `403` for a token that lacks scopes.
    pub(crate) fn status(self) -> u16 {
        match self {
            Rejection::InsufficientScope => 403,
            Rejection::Missing | Rejection::InvalidToken => 401,
        }
    }
}

impl HttpAuth {
    /// The caller of a request with `headers` at `now` (Unix seconds), or
    /// why it is refused.
    pub(crate) fn authenticate(&self, headers: &HeaderMap, now: i64) -> Result<Caller, Rejection> {
        let token = bearer(headers)?;
        match self {
            HttpAuth::Bearer(expected) if expected.matches(token) => Ok(Caller {
                subject: "bearer".into(),
                expires_at: None,
                own_accounts: false,
            }),
            HttpAuth::Bearer(_) => Err(Rejection::InvalidToken),
            HttpAuth::Jwt(jwt) => jwt.verify(token, now),
        }
    }

    /// After a refused token: whether the signing keys were fetched again
    /// because the token names a key this server does not know (check it
    /// once more).
    pub(crate) async fn refresh_keys(&self, headers: &HeaderMap) -> bool {
        match (self, bearer(headers)) {
            (HttpAuth::Jwt(jwt), Ok(token)) => jwt.refresh_keys_for(token).await,
            _ => false,
        }
    }

    /// What checks the credential of a request again while an event stream
    /// it opened is open: a JWT can be withdrawn (its key leaves the
    /// issuer's set); the static token cannot while the server runs.
    pub(crate) fn stream_watch(&self, headers: &HeaderMap) -> Option<StreamWatch> {
        match (self, bearer(headers)) {
            (HttpAuth::Jwt(jwt), Ok(token)) => Some(StreamWatch {
                jwt: jwt.clone(),
                token: token.to_vec(),
            }),
            _ => None,
        }
    }

    /// The `WWW-Authenticate` challenge answering `rejection`.
    pub(crate) fn challenge(&self, rejection: Rejection) -> String {
        let mut challenge = String::from("Bearer realm=\"warden\"");
        match rejection {
            Rejection::Missing => {}
            Rejection::InvalidToken => challenge.push_str(
                ", error=\"invalid_token\", error_description=\"the access token is not valid\"",
            ),
            Rejection::InsufficientScope => {
                let scope = match self {
                    HttpAuth::Jwt(jwt) => jwt.required_scope(),
                    HttpAuth::Bearer(_) => String::new(),
                };
                challenge.push_str(&format!(
                    ", error=\"insufficient_scope\", scope=\"{scope}\""
                ));
            }
        }
        if let HttpAuth::Jwt(jwt) = self {
            challenge.push_str(&format!(", resource_metadata=\"{}\"", jwt.metadata_url()));
        }
        challenge
    }
}

/// The token an event stream was opened with, checked again while it is
/// open ([`HttpAuth::stream_watch`]).
pub(crate) struct StreamWatch {
    jwt: JwtAuth,
    token: Vec<u8>,
}

impl StreamWatch {
    /// How long to wait between two checks.
    pub(crate) fn every(&self) -> std::time::Duration {
        self.jwt.stream_recheck()
    }

    /// Whether the token is still accepted at `now` (Unix seconds), with
    /// the keys fetched again first when they are old.
    pub(crate) async fn still_accepted(&self, now: i64) -> bool {
        self.jwt.refresh_stale_keys().await;
        self.jwt.verify(&self.token, now).is_ok()
    }
}

/// The token of the one `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Result<&[u8], Rejection> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(Rejection::Missing);
    };
    let value = value.as_bytes();
    let Some((scheme, token)) = value
        .iter()
        .position(|&b| b == b' ')
        .map(|at| (&value[..at], &value[at + 1..]))
    else {
        return Err(Rejection::Missing);
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err(Rejection::Missing);
    }
    let token = token.trim_ascii();
    if token.is_empty() {
        return Err(Rejection::InvalidToken);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn only_the_configured_token_authenticates() {
        let auth = HttpAuth::Bearer(BearerToken::new(&format!("{TOKEN}\n")).unwrap());
        let ok = auth.authenticate(&headers(&[&format!("Bearer {TOKEN}")]), 0);
        assert_eq!(ok.unwrap().subject, "bearer");
        assert!(
            auth.authenticate(&headers(&[&format!("bearer {TOKEN}")]), 0)
                .is_ok()
        );
        let cases = [
            (vec![], Rejection::Missing),
            (vec![format!("Basic {TOKEN}")], Rejection::Missing),
            (vec![TOKEN.to_owned()], Rejection::Missing),
            (vec![format!("Bearer {TOKEN}x")], Rejection::InvalidToken),
            (
                vec![format!("Bearer {}", &TOKEN[1..])],
                Rejection::InvalidToken,
            ),
            (vec!["Bearer ".to_owned()], Rejection::InvalidToken),
            (
                vec![format!("Bearer {TOKEN}"), format!("Bearer {TOKEN}")],
                Rejection::Missing,
            ),
        ];
        for (values, expected) in cases {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            assert_eq!(
                auth.authenticate(&headers(&values), 0),
                Err(expected),
                "{values:?}"
            );
        }
    }

    #[test]
    fn weak_tokens_are_refused() {
        for weak in ["", "short", &format!("{} {}", &TOKEN[..20], &TOKEN[..20])] {
            assert!(
                matches!(
                    BearerToken::new(weak),
                    Err(AuthConfigError::WeakToken { .. })
                ),
                "{weak:?}"
            );
        }
        let debug = format!("{:?}", BearerToken::new(TOKEN).unwrap());
        assert!(!debug.contains(TOKEN), "{debug}");
    }
}
