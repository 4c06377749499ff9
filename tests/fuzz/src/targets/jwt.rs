//! JWT access tokens (`JwtAuth`'s verification, through
//! `warden_mcp::fuzzing`), against one ES256 test key (`jwt-test-key.pk8`,
//! made for these targets and trusted nowhere). The first input byte picks:
//! - even: the rest is a token as presented; it is accepted only if its
//!   signature verifies with the key (checked here with ring directly):
//!   no input forges one;
//! - odd: the rest is a claims payload, signed here with the key; it is
//!   accepted exactly when the claims are valid by the spec (issuer,
//!   audience, expiry and not-before with leeway, scopes, subject), with the
//!   subject as the caller, and otherwise refused with 401 (403 for
//!   missing scopes).

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use serde_json::{Value, json};
use warden_mcp::{JwtAuth, LEEWAY_SECS, fuzzing};

const KEY: &[u8] = include_bytes!("jwt-test-key.pk8");
const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://warden.test/mcp";
const SCOPE: &str = "mcp:tools";
const NOW: i64 = 1_800_000_000;

fn key() -> &'static EcdsaKeyPair {
    static KEY_PAIR: OnceLock<EcdsaKeyPair> = OnceLock::new();
    KEY_PAIR.get_or_init(|| {
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, KEY, &SystemRandom::new())
            .expect("the test key")
    })
}

/// The verifier: the test key as `ec1`, one required scope.
pub(crate) fn auth() -> &'static JwtAuth {
    static AUTH: OnceLock<JwtAuth> = OnceLock::new();
    AUTH.get_or_init(|| {
        let point = key().public_key().as_ref();
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": "ec1", "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        }]});
        JwtAuth::new(ISSUER, AUDIENCE, &jwks.to_string(), vec![SCOPE.to_owned()])
            .expect("a valid verifier")
    })
}

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        presented(rest);
    } else {
        signed_claims(rest, mode & 2 == 0);
    }
}

/// A token as presented: accepted only with a signature by the key.
fn presented(token: &[u8]) {
    let Ok(caller) = fuzzing::verify_jwt(auth(), token, NOW) else {
        return;
    };
    let text = std::str::from_utf8(token).expect("an accepted token is UTF-8");
    let (signed, signature) = text.rsplit_once('.').expect("an accepted token has parts");
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .expect("a base64url signature");
    let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key().public_key().as_ref());
    assert!(
        public.verify(signed.as_bytes(), &signature).is_ok(),
        "accepted a token the key did not sign, as {caller:?}"
    );
}

/// Claims signed with the key: accepted exactly as the spec says.
fn signed_claims(claims: &[u8], with_kid: bool) {
    let header = if with_kid {
        json!({"alg": "ES256", "typ": "JWT", "kid": "ec1"})
    } else {
        json!({"alg": "ES256"})
    };
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let signature = key()
        .sign(&SystemRandom::new(), signed.as_bytes())
        .expect("signing");
    let token = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()));
    let got = fuzzing::verify_jwt(auth(), token.as_bytes(), NOW).map(|caller| caller.subject);
    assert_eq!(
        got,
        expected(claims),
        "claims {}",
        String::from_utf8_lossy(claims)
    );
}

/// What RFC 7519 and the server's settings say of `claims` at [`NOW`].
fn expected(claims: &[u8]) -> Result<String, u16> {
    let Ok(claims) = serde_json::from_slice::<Value>(claims) else {
        return Err(401);
    };
    let audience_ok = match &claims["aud"] {
        Value::String(aud) => aud == AUDIENCE,
        Value::Array(auds) => auds.iter().any(|a| *a == AUDIENCE),
        _ => false,
    };
    let exp_ok = claims["exp"]
        .as_i64()
        .is_some_and(|exp| i128::from(exp) + i128::from(LEEWAY_SECS) > i128::from(NOW));
    let nbf_ok = match claims.get("nbf") {
        None => true,
        Some(nbf) => nbf
            .as_i64()
            .is_some_and(|nbf| i128::from(nbf) - i128::from(LEEWAY_SECS) <= i128::from(NOW)),
    };
    if claims["iss"] != ISSUER || !audience_ok || !exp_ok || !nbf_ok {
        return Err(401);
    }
    let scoped = claims["scope"]
        .as_str()
        .is_some_and(|scopes| scopes.split(' ').any(|s| s == SCOPE));
    if !scoped {
        return Err(403);
    }
    claims["sub"].as_str().map(str::to_owned).ok_or(401)
}
