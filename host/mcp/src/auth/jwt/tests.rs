//! Tokens signed here by a local test issuer (an ES256 key made per test
//! run, and a fixed RSA test key, `rsa-test-key.pk8`) against the checks a
//! resource server must make.

use ring::rand::SystemRandom;
use ring::rsa::PublicKeyComponents;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};
use std::sync::Arc;

use serde_json::json;

use super::*;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://warden.test/mcp";
const NOW: i64 = 1_800_000_000;
const RSA_KEY: &[u8] = include_bytes!("rsa-test-key.pk8");

/// A local issuer with one EC and one RSA signing key.
struct Issuer {
    ec: EcdsaKeyPair,
    rsa: RsaKeyPair,
}

impl Issuer {
    fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Issuer {
            ec: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .unwrap(),
            rsa: RsaKeyPair::from_pkcs8(RSA_KEY).unwrap(),
        }
    }

    fn jwks(&self) -> String {
        let point = self.ec.public_key().as_ref();
        let rsa: PublicKeyComponents<Vec<u8>> = self.rsa.public().into();
        json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ec1", "use": "sig", "alg": "ES256",
             "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..])},
            {"kty": "RSA", "kid": "rsa1", "alg": "RS256",
             "n": URL_SAFE_NO_PAD.encode(&rsa.n), "e": URL_SAFE_NO_PAD.encode(&rsa.e)},
        ]})
        .to_string()
    }

    /// A compact JWS of `claims` with `header`, signed by the key its `alg` names.
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match header["alg"].as_str() {
            Some("RS256") => {
                let mut sig = vec![0; self.rsa.public().modulus_len()];
                self.rsa
                    .sign(&RSA_PKCS1_SHA256, &rng, signed.as_bytes(), &mut sig)
                    .unwrap();
                sig
            }
            _ => self
                .ec
                .sign(&rng, signed.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
        };
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    fn token(&self, claims: &Value) -> String {
        self.sign(&json!({"alg": "ES256", "kid": "ec1", "typ": "JWT"}), claims)
    }
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": NOW + 300,
           "nbf": NOW - 10, "scope": "openid warden:call"})
}

fn with(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut claims = claims();
    edit(claims.as_object_mut().unwrap());
    claims
}

fn server(issuer: &Issuer) -> JwtAuth {
    JwtAuth::new(ISSUER, AUDIENCE, &issuer.jwks(), vec!["warden:call".into()]).unwrap()
}

#[test]
fn a_token_from_the_issuer_for_this_server_names_its_caller() {
    let issuer = Issuer::new();
    let auth = server(&issuer);
    let caller = auth
        .verify(issuer.token(&claims()).as_bytes(), NOW)
        .unwrap();
    assert_eq!(caller.subject, "alice");
    let rs256 = issuer.sign(&json!({"alg": "RS256", "kid": "rsa1"}), &claims());
    assert_eq!(auth.verify(rs256.as_bytes(), NOW).unwrap().subject, "alice");
    let listed = with(|c| {
        c.insert("aud".into(), json!(["https://other.test", AUDIENCE]));
    });
    assert!(auth.verify(issuer.token(&listed).as_bytes(), NOW).is_ok());
}

#[test]
fn wrong_expired_and_other_audience_tokens_are_invalid() {
    let issuer = Issuer::new();
    let auth = server(&issuer);
    let stranger = Issuer::new();
    let good = issuer.token(&claims());
    let (head, rest) = good.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let forged_payload = format!(
        "{head}.{}.{sig}",
        URL_SAFE_NO_PAD.encode(
            with(|c| {
                c.insert("sub".into(), json!("mallory"));
            })
            .to_string()
        )
    );
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims().to_string())
    );
    let cases = [
        ("signed by another issuer's key", stranger.token(&claims())),
        ("payload changed after signing", forged_payload),
        ("alg none", unsigned),
        (
            "RS256 header over an EC key id",
            issuer.sign(&json!({"alg": "RS256", "kid": "ec1"}), &claims()),
        ),
        (
            "another audience",
            issuer.token(&with(|c| {
                c.insert("aud".into(), json!("https://other.test/mcp"));
            })),
        ),
        (
            "another issuer",
            issuer.token(&with(|c| {
                c.insert("iss".into(), json!("https://evil.test"));
            })),
        ),
        (
            "expired",
            issuer.token(&with(|c| {
                c.insert("exp".into(), json!(NOW - LEEWAY_SECS - 1));
            })),
        ),
        (
            "no expiry",
            issuer.token(&with(|c| {
                c.remove("exp");
            })),
        ),
        (
            "not yet valid",
            issuer.token(&with(|c| {
                c.insert("nbf".into(), json!(NOW + LEEWAY_SECS + 5));
            })),
        ),
        // At the ends of i64: the leeway overflowed (a panic in debug builds).
        (
            "expired at the start of time",
            issuer.token(&with(|c| {
                c.insert("exp".into(), json!(i64::MIN));
            })),
        ),
        (
            "valid only at the end of time",
            issuer.token(&with(|c| {
                c.insert("exp".into(), json!(i64::MAX));
                c.insert("nbf".into(), json!(i64::MAX));
            })),
        ),
        ("not a JWT", "abc".into()),
        (
            "a critical extension",
            issuer.sign(
                &json!({"alg": "ES256", "kid": "ec1", "crit": ["exp"], "exp": 1}),
                &claims(),
            ),
        ),
    ];
    for (what, token) in cases {
        assert_eq!(
            auth.verify(token.as_bytes(), NOW).map(|c| c.subject),
            Err(Rejection::InvalidToken),
            "{what}"
        );
    }
}

#[test]
fn a_valid_token_without_the_scope_is_insufficient_scope() {
    let issuer = Issuer::new();
    let auth = server(&issuer);
    let token = issuer.token(&with(|c| {
        c.insert("scope".into(), json!("openid warden:callx"));
    }));
    assert_eq!(
        auth.verify(token.as_bytes(), NOW),
        Err(Rejection::InsufficientScope)
    );
    let challenge = super::super::HttpAuth::Jwt(auth).challenge(Rejection::InsufficientScope);
    assert!(
        challenge.contains(r#"error="insufficient_scope", scope="warden:call""#)
            && challenge.contains(
                r#"resource_metadata="https://warden.test/.well-known/oauth-protected-resource""#
            ),
        "{challenge}"
    );
}

#[test]
fn configuration_names_what_is_wrong() {
    let issuer = Issuer::new();
    assert!(matches!(
        JwtAuth::new(ISSUER, "warden", &issuer.jwks(), vec![]),
        Err(AuthConfigError::Audience { .. })
    ));
    for (jwks, what) in [
        ("{", "is not JSON"),
        ("{}", "has no `keys` array"),
        (
            r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#,
            "signing key",
        ),
    ] {
        let error = JwtAuth::new(ISSUER, AUDIENCE, jwks, vec![]).unwrap_err();
        assert!(error.to_string().contains(what), "{jwks}: {error}");
    }
    let metadata = server(&issuer).metadata();
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
}

/// A JWKS the test publishes and replaces, counting fetches.
#[derive(Debug)]
struct Published {
    jwks: std::sync::Mutex<String>,
    fetches: std::sync::atomic::AtomicUsize,
}

impl Published {
    fn new(jwks: String) -> Arc<Self> {
        Arc::new(Published {
            jwks: std::sync::Mutex::new(jwks),
            fetches: Default::default(),
        })
    }

    fn publish(&self, jwks: String) {
        *self.jwks.lock().unwrap() = jwks;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[async_trait::async_trait]
impl JwksSource for Published {
    async fn fetch(&self) -> Result<String, String> {
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.jwks.lock().unwrap().clone())
    }
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_the_withdrawn_one_stops_verifying() {
    let (old, new) = (Issuer::new(), Issuer::new());
    let source = Published::new(old.jwks());
    let auth = server(&old).with_rotation(source.clone());
    let connection = auth.clone();
    // The issuer replaces its EC key (kid ec1) with another (kid ec2).
    source.publish(new.jwks().replace("\"ec1\"", "\"ec2\""));
    let rotated = new.sign(&json!({"alg": "ES256", "kid": "ec2"}), &claims());
    let before = old.token(&claims());
    assert!(auth.verify(rotated.as_bytes(), NOW).is_err());
    // A token naming a known key never makes a fetch.
    assert!(!auth.refresh_keys_for(before.as_bytes()).await);
    assert_eq!(source.fetches(), 0);

    assert!(auth.refresh_keys_for(rotated.as_bytes()).await);
    assert_eq!(source.fetches(), 1);
    // Every clone (another connection) sees the new keys.
    let caller = connection.verify(rotated.as_bytes(), NOW).unwrap();
    assert_eq!(caller.subject, "alice");
    assert!(
        auth.verify(before.as_bytes(), NOW).is_err(),
        "the withdrawn key still verifies"
    );
    // Made-up kids within the interval fetch nothing.
    let bogus = new.sign(&json!({"alg": "ES256", "kid": "made-up"}), &claims());
    assert!(!auth.refresh_keys_for(bogus.as_bytes()).await);
    assert_eq!(source.fetches(), 1);
}

#[tokio::test]
async fn a_failed_fetch_keeps_the_current_keys() {
    let issuer = Issuer::new();
    let source = Published::new("not json".into());
    let auth = server(&issuer).with_rotation(source.clone());
    let unknown = issuer.sign(&json!({"alg": "ES256", "kid": "ec9"}), &claims());
    assert!(!auth.refresh_keys_for(unknown.as_bytes()).await);
    assert_eq!(source.fetches(), 1);
    let token = issuer.token(&claims());
    assert_eq!(auth.verify(token.as_bytes(), NOW).unwrap().subject, "alice");
}
