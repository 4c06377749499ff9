//! A local OAuth issuer for the resource-server tests: one ES256 key, its
//! JWKS, and access tokens signed on demand.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING as ALG, EcdsaKeyPair, KeyPair};
use serde_json::json;

/// The issuer: `iss` of the tokens it signs.
pub struct JwtIssuer {
    issuer: String,
    kid: String,
    key: EcdsaKeyPair,
}

impl std::fmt::Debug for JwtIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtIssuer")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl JwtIssuer {
    /// A fresh key for `issuer` (kid `k1`).
    pub fn new(issuer: &str) -> Self {
        Self::with_kid(issuer, "k1")
    }

    /// A fresh key for `issuer` published as `kid` (a rotated key).
    pub fn with_kid(issuer: &str, kid: &str) -> Self {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ALG, &rng).expect("generate key");
        let key = EcdsaKeyPair::from_pkcs8(&ALG, pkcs8.as_ref(), &rng).expect("load key");
        Self {
            issuer: issuer.to_owned(),
            kid: kid.to_owned(),
            key,
        }
    }

    /// The public key as a JWKS document.
    pub fn jwks(&self) -> String {
        let point = self.key.public_key().as_ref();
        json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": self.kid,
            "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..])}]})
        .to_string()
    }

    /// `Bearer <jwt>` for subject `alice` with `aud` and `scope`, expiring
    /// `exp_in` seconds from now.
    pub fn bearer(&self, aud: &str, scope: &str, exp_in: i64) -> String {
        self.bearer_for("alice", aud, scope, exp_in)
    }

    /// [`JwtIssuer::bearer`] for subject `sub`.
    pub fn bearer_for(&self, sub: &str, aud: &str, scope: &str, exp_in: i64) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs() as i64;
        let claims = json!({"iss": self.issuer, "aud": aud, "sub": sub,
            "exp": now + exp_in, "scope": scope});
        let signed = format!(
            "{}.{}",
            B64.encode(json!({"alg": "ES256", "kid": self.kid}).to_string()),
            B64.encode(claims.to_string())
        );
        let rng = ring::rand::SystemRandom::new();
        let signature = self.key.sign(&rng, signed.as_bytes()).expect("sign");
        format!("Bearer {signed}.{}", B64.encode(signature.as_ref()))
    }
}
