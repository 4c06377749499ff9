//! OAuth 2.1 resource-server mode: JWT access tokens checked against the
//! configured issuer's signing keys (a JWKS document).
//!
//! A token is accepted only when all of these hold: it is a compact JWS
//! signed with `RS256` or `ES256` (never `none`, never an algorithm the key
//! was not published for) by a key in the JWKS; `iss` is the issuer; `aud`
//! names this server (the configured audience); `exp` is in the future and
//! `nbf`, when present, is not (both with [`LEEWAY_SECS`] of clock skew); and
//! its `scope` holds every required scope (otherwise `403
//! insufficient_scope`). Signatures are verified with `ring`.
//!
//! Keys rotate without a restart: given a [`JwksSource`]
//! ([`JwtAuth::with_rotation`]), a token naming a `kid` the server does not
//! know makes it fetch the keys again (at most once per
//! [`KEY_REFETCH_INTERVAL`], so made-up `kid`s cannot flood the issuer) and
//! check the token against the new set, which replaces the old one: a key
//! the issuer withdrew stops verifying. While an event stream is open, the
//! token that opened it is checked again every [`STREAM_RECHECK_INTERVAL`],
//! with the keys fetched again once they are [`KEY_MAX_AGE`] old: a stream
//! opened with a token signed by a withdrawn key ends.

mod rotation;

use std::sync::{Arc, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

use super::{AuthConfigError, Caller, Rejection};
use rotation::Rotation;
pub use rotation::{JwksSource, KEY_MAX_AGE, KEY_REFETCH_INTERVAL};

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: i64 = 60;

/// How often the token of an open event stream is checked again (see
/// [`JwtAuth::with_stream_recheck`]).
pub const STREAM_RECHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// The resource server's settings.
#[derive(Debug, Clone)]
pub struct JwtAuth {
    issuer: String,
    audience: String,
    /// The current signing keys, shared by every clone (a rotation seen by
    /// one connection is seen by all).
    keys: Arc<RwLock<Arc<[Key]>>>,
    required_scopes: Vec<String>,
    rotation: Option<Arc<Rotation>>,
    stream_recheck: std::time::Duration,
}

#[derive(Debug, Clone)]
struct Key {
    kid: Option<String>,
    alg: Alg,
    public: Public,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Rs256,
    Es256,
}

#[derive(Debug, Clone)]
enum Public {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// The uncompressed P-256 point (`0x04 || x || y`).
    P256(Vec<u8>),
}

impl JwtAuth {
    /// Tokens from `issuer` for `audience` (this server's resource URL),
    /// signed by a key in `jwks` (a JWKS JSON document), carrying every
    /// scope in `required_scopes`.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks: &str,
        required_scopes: Vec<String>,
    ) -> Result<Self, AuthConfigError> {
        let audience = audience.into();
        if metadata_origin(&audience).is_none() {
            return Err(AuthConfigError::Audience { audience });
        }
        Ok(JwtAuth {
            issuer: issuer.into(),
            audience,
            keys: Arc::new(RwLock::new(parse_keys(jwks)?)),
            required_scopes,
            rotation: None,
            stream_recheck: STREAM_RECHECK_INTERVAL,
        })
    }

    /// Fetch the keys again from `source` when a token names an unknown
    /// key (the issuer rotated its keys).
    pub fn with_rotation(mut self, source: Arc<dyn JwksSource>) -> Self {
        self.rotation = Some(Arc::new(Rotation::new(source)));
        self
    }

    /// Check the token of an open event stream again every `every` (default
    /// [`STREAM_RECHECK_INTERVAL`]); the stream ends once it fails.
    pub fn with_stream_recheck(mut self, every: std::time::Duration) -> Self {
        self.stream_recheck = every;
        self
    }

    pub(crate) fn stream_recheck(&self) -> std::time::Duration {
        self.stream_recheck
    }

    fn keys(&self) -> Arc<[Key]> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The audience: the resource this server is.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The protected-resource metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        serde_json::json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": self.required_scopes,
        })
    }

    /// Where the metadata is served, for `WWW-Authenticate`.
    pub fn metadata_url(&self) -> String {
        let origin = metadata_origin(&self.audience).unwrap_or_default();
        format!("{origin}{}", super::METADATA_PATH)
    }

    /// The caller a token stands for at `now` (Unix seconds), or why not.
    pub(crate) fn verify(&self, token: &[u8], now: i64) -> Result<Caller, Rejection> {
        let invalid = Rejection::InvalidToken;
        let token = std::str::from_utf8(token).map_err(|_| invalid)?;
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid);
        };
        let header: Value = decode_json(header).ok_or(invalid)?;
        let alg = match header.get("alg").and_then(Value::as_str) {
            Some("RS256") => Alg::Rs256,
            Some("ES256") => Alg::Es256,
            _ => return Err(invalid),
        };
        // No extension is understood, so none may be critical (RFC 7515 4.1.11).
        if header.get("crit").is_some() {
            return Err(invalid);
        }
        let kid = header.get("kid").and_then(Value::as_str);
        let signature = URL_SAFE_NO_PAD.decode(sig).map_err(|_| invalid)?;
        let signed = &token.as_bytes()[..header_len(token)];
        let verified = self
            .keys()
            .iter()
            .filter(|k| k.alg == alg && (kid.is_none() || k.kid.as_deref() == kid))
            .any(|k| k.verifies(signed, &signature));
        if !verified {
            return Err(invalid);
        }
        let claims: Value = decode_json(payload).ok_or(invalid)?;
        self.check_claims(&claims, now)
    }

    fn check_claims(&self, claims: &Value, now: i64) -> Result<Caller, Rejection> {
        let invalid = Rejection::InvalidToken;
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(invalid);
        }
        let for_us = match claims.get("aud") {
            Some(Value::String(aud)) => aud == &self.audience,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&self.audience)),
            _ => false,
        };
        if !for_us {
            return Err(invalid);
        }
        let exp = claims.get("exp").and_then(Value::as_i64).ok_or(invalid)?;
        // Saturating: an `exp` or `nbf` at the ends of i64 (only the issuer
        // can sign one) overflowed, a panic in a debug build.
        if exp.saturating_add(LEEWAY_SECS) <= now {
            return Err(invalid);
        }
        if let Some(nbf) = claims.get("nbf")
            && nbf
                .as_i64()
                .is_none_or(|nbf| nbf.saturating_sub(LEEWAY_SECS) > now)
        {
            return Err(invalid);
        }
        let scopes: Vec<&str> = claims
            .get("scope")
            .and_then(Value::as_str)
            .map(|s| s.split(' ').filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        if !self
            .required_scopes
            .iter()
            .all(|needed| scopes.contains(&needed.as_str()))
        {
            return Err(Rejection::InsufficientScope);
        }
        let subject = claims.get("sub").and_then(Value::as_str).ok_or(invalid)?;
        Ok(Caller {
            subject: subject.to_owned(),
            expires_at: Some(exp.saturating_add(LEEWAY_SECS)),
            own_accounts: true,
        })
    }

    /// The scopes every token must carry (space-separated).
    pub(crate) fn required_scope(&self) -> String {
        self.required_scopes.join(" ")
    }
}

impl Key {
    fn verifies(&self, message: &[u8], sig: &[u8]) -> bool {
        match (&self.public, self.alg) {
            (Public::Rsa { n, e }, Alg::Rs256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, sig)
                .is_ok(),
            (Public::P256(point), Alg::Es256) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, sig)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// The usable signing keys of a JWKS document.
fn parse_keys(jwks: &str) -> Result<Arc<[Key]>, AuthConfigError> {
    let document: Value =
        serde_json::from_str(jwks).map_err(|_| AuthConfigError::Jwks("is not JSON"))?;
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(AuthConfigError::Jwks("has no `keys` array"))?
        .iter()
        .filter_map(key)
        .collect::<Vec<_>>();
    if keys.is_empty() {
        return Err(AuthConfigError::Jwks(
            "has no RS256 or ES256 (P-256) signing key",
        ));
    }
    Ok(keys.into())
}

/// The `kid` a compact JWS's header names.
fn token_kid(token: &[u8]) -> Option<String> {
    let header = std::str::from_utf8(token).ok()?.split('.').next()?;
    decode_json(header)?.get("kid")?.as_str().map(str::to_owned)
}

/// A usable signing key of a JWKS, or `None` (other types, encryption keys).
fn key(jwk: &Value) -> Option<Key> {
    let field = |name: &str| jwk.get(name).and_then(Value::as_str);
    let bytes = |name: &str| URL_SAFE_NO_PAD.decode(field(name)?).ok();
    if field("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let (alg, public) = match (field("kty")?, field("alg")) {
        ("RSA", None | Some("RS256")) => (
            Alg::Rs256,
            Public::Rsa {
                n: bytes("n")?,
                e: bytes("e")?,
            },
        ),
        ("EC", None | Some("ES256")) if field("crv") == Some("P-256") => {
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            (Alg::Es256, Public::P256([&[4u8][..], &x, &y].concat()))
        }
        _ => return None,
    };
    Some(Key {
        kid: field("kid").map(str::to_owned),
        alg,
        public,
    })
}

/// Length of `header.payload`, the signed part of a compact JWS.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}

fn decode_json(part: &str) -> Option<Value> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}

/// `scheme://authority` of an `http(s)` URL.
fn metadata_origin(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split('/').next()?;
    (!authority.is_empty()).then(|| &url[..url.len() - rest.len() + authority.len()])
}

#[cfg(test)]
mod tests;
