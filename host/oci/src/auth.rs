//! Signing in to a registry: the login for a registry (none, or a user and
//! password from the Docker config file or the embedding), and the answer
//! to its challenge — HTTP Basic with the login, or the distribution token
//! flow: a bearer token from the realm the challenge names, asked for the
//! repository and actions at hand, with the login sent to the realm only.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
#[cfg(test)]
use secrecy::ExposeSecret;
use secrecy::SecretString;

use crate::OciError;

/// How the client signs in to one registry.
#[derive(Clone, Default)]
pub enum Login {
    /// No credentials: anonymous pulls (and a token service's anonymous token).
    #[default]
    Anonymous,
    /// A user and password (or a registry access token as the password).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: SecretString,
    },
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Login::Anonymous => f.write_str("Anonymous"),
            Login::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .finish_non_exhaustive(),
        }
    }
}

/// Where the logins come from.
pub trait Logins: Send + Sync + std::fmt::Debug {
    /// The login for `registry` (`HOST[:PORT]`).
    fn login(&self, registry: &str) -> Result<Login, OciError>;
}

/// Logins the embedding holds (tests, a host with its own secret store).
#[derive(Debug, Default, Clone)]
pub struct StaticLogins(BTreeMap<String, Login>);

impl StaticLogins {
    /// No logins: anonymous everywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `login` for `registry`.
    pub fn with(mut self, registry: &str, login: Login) -> Self {
        self.0.insert(registry.to_owned(), login);
        self
    }
}

impl Logins for StaticLogins {
    fn login(&self, registry: &str) -> Result<Login, OciError> {
        Ok(self.0.get(registry).cloned().unwrap_or_default())
    }
}

/// The first login any of several sources has (the host's secret store,
/// then the Docker config file).
#[derive(Debug, Clone, Default)]
pub struct FirstOf(Vec<std::sync::Arc<dyn Logins>>);

impl FirstOf {
    /// Ask `sources` in order.
    pub fn new(sources: Vec<std::sync::Arc<dyn Logins>>) -> Self {
        FirstOf(sources)
    }
}

impl Logins for FirstOf {
    fn login(&self, registry: &str) -> Result<Login, OciError> {
        for source in &self.0 {
            if let login @ Login::Basic { .. } = source.login(registry)? {
                return Ok(login);
            }
        }
        Ok(Login::Anonymous)
    }
}

/// The Docker config file (`$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`), what `docker login`, `podman login` and
/// `skopeo login --authfile` write: `auths.<registry>.auth` is
/// base64(`user:password`) (or `username` and `password` beside it). A
/// missing file means anonymous; a credential helper (`credsStore`) is not
/// run.
#[derive(Debug, Clone)]
pub struct DockerConfig {
    path: Option<PathBuf>,
}

/// A config file larger than this is refused.
const MAX_DOCKER_CONFIG: u64 = 1 << 20;

impl DockerConfig {
    /// The file of the environment (`DOCKER_CONFIG`, then `HOME`).
    pub fn from_env() -> Self {
        let path = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")))
            .map(|dir| dir.join("config.json"));
        DockerConfig { path }
    }

    /// The file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        DockerConfig {
            path: Some(path.into()),
        }
    }
}

impl Logins for DockerConfig {
    fn login(&self, registry: &str) -> Result<Login, OciError> {
        let Some(path) = &self.path else {
            return Ok(Login::Anonymous);
        };
        let bad = |reason: String| OciError::DockerConfig {
            path: path.display().to_string(),
            reason,
        };
        let bytes = match std::fs::File::open(path) {
            Ok(file) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(file, MAX_DOCKER_CONFIG + 1),
                    &mut bytes,
                )
                .map_err(|e| bad(e.to_string()))?;
                if bytes.len() as u64 > MAX_DOCKER_CONFIG {
                    return Err(bad(format!("is over {MAX_DOCKER_CONFIG} bytes")));
                }
                bytes
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Login::Anonymous),
            Err(e) => return Err(bad(e.to_string())),
        };
        let config: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("is not JSON: {e}")))?;
        let auths = config.get("auths").and_then(|a| a.as_object());
        // Entries are keyed by `HOST[:PORT]`, sometimes written as a URL.
        let entry = auths.and_then(|auths| {
            auths.iter().find_map(|(key, value)| {
                let key = key
                    .trim_start_matches("https://")
                    .trim_start_matches("http://");
                let key = key.split('/').next().unwrap_or_default();
                (key == registry).then_some(value)
            })
        });
        let Some(entry) = entry else {
            return Ok(Login::Anonymous);
        };
        let field = |name: &str| entry.get(name).and_then(|v| v.as_str());
        if let Some(auth) = field("auth").filter(|a| !a.is_empty()) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth)
                .ok()
                .and_then(|d| String::from_utf8(d).ok())
                .ok_or_else(|| bad(format!("`auths.{registry}.auth` is not base64 of text")))?;
            let (username, password) = decoded.split_once(':').ok_or_else(|| {
                bad(format!(
                    "`auths.{registry}.auth` is not base64 of `user:password`"
                ))
            })?;
            return Ok(Login::Basic {
                username: username.to_owned(),
                password: SecretString::from(password.to_owned()),
            });
        }
        match (field("username"), field("password")) {
            (Some(username), Some(password)) => Ok(Login::Basic {
                username: username.to_owned(),
                password: SecretString::from(password.to_owned()),
            }),
            _ => Ok(Login::Anonymous),
        }
    }
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// `Basic realm="…"`.
    Basic,
    /// `Bearer realm="…",service="…",scope="…"`.
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

impl Challenge {
    /// Parse the first challenge of `header` Warden can answer.
    pub(crate) fn parse(header: &str) -> Option<Challenge> {
        let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
        let params = auth_params(params);
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => Some(Challenge::Basic),
            "bearer" => Some(Challenge::Bearer {
                realm: params.get("realm")?.clone(),
                service: params.get("service").cloned(),
                scope: params.get("scope").cloned(),
            }),
            _ => None,
        }
    }
}

/// `key=value` or `key="quoted \"value\""` pairs, comma-separated.
fn auth_params(text: &str) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars
            .by_ref()
            .take_while(|c| *c != '=')
            .collect::<String>()
            .trim()
            .to_ascii_lowercase();
        if key.is_empty() {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                value.push(c);
            }
            value = value.trim().to_owned();
        }
        params.insert(key, value);
    }
}

/// What a request carries toward the registry.
#[derive(Clone)]
pub(crate) enum Authorization {
    /// The login, as HTTP Basic.
    Basic {
        username: String,
        password: SecretString,
    },
    /// A token from the token service.
    Bearer(SecretString),
}

impl Authorization {
    /// The injection and the value, for egress.
    pub(crate) fn injection(&self) -> (warden_core::spec::Injection, SecretString) {
        use warden_core::spec::Injection;
        match self {
            Authorization::Basic { username, password } => (
                Injection::Basic {
                    username: username.clone(),
                },
                password.clone(),
            ),
            Authorization::Bearer(token) => (
                Injection::Header {
                    name: "authorization".into(),
                    prefix: Some("Bearer ".into()),
                },
                token.clone(),
            ),
        }
    }
}

/// A token service's answer: `token` (the distribution spec) or
/// `access_token` (OAuth 2), a header-safe string.
pub(crate) fn token_from(body: &[u8]) -> Result<SecretString, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| "answered something other than JSON".to_owned())?;
    let token = ["token", "access_token"]
        .iter()
        .find_map(|k| {
            value
                .get(k)
                .and_then(|t| t.as_str())
                .filter(|t| !t.is_empty())
        })
        .ok_or_else(|| "answered no `token`".to_owned())?;
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("answered a token with characters a header cannot carry".into());
    }
    Ok(SecretString::from(token.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_distribution_bearer_challenge_and_basic() {
        let challenge = Challenge::parse(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:acme/echo:pull,push""#,
        );
        assert_eq!(
            challenge,
            Some(Challenge::Bearer {
                realm: "https://auth.example.com/token".into(),
                service: Some("registry.example.com".into()),
                scope: Some("repository:acme/echo:pull,push".into()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(Challenge::parse("Negotiate"), None);
        assert_eq!(Challenge::parse("Bearer service=x"), None);
        let escaped = Challenge::parse(r#"bearer realm="https://a/t\"x", service=plain"#);
        assert_eq!(
            escaped,
            Some(Challenge::Bearer {
                realm: "https://a/t\"x".into(),
                service: Some("plain".into()),
                scope: None,
            })
        );
    }

    #[test]
    fn reads_docker_config_logins() {
        let dir = std::env::temp_dir().join(format!("warden-oci-docker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret:x");
        std::fs::write(
            &path,
            format!(r#"{{"auths":{{"https://registry.example.com:5000/v2/":{{"auth":"{auth}"}},"other.example.com":{{"username":"bob","password":"pw"}}}}}}"#),
        )
        .unwrap();
        let config = DockerConfig::at(&path);
        match config.login("registry.example.com:5000").unwrap() {
            Login::Basic { username, password } => {
                assert_eq!(username, "alice");
                assert_eq!(password.expose_secret(), "s3cret:x");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            config.login("other.example.com").unwrap(),
            Login::Basic { username, .. } if username == "bob"
        ));
        assert!(matches!(
            config.login("third.example.com").unwrap(),
            Login::Anonymous
        ));
        assert!(matches!(
            DockerConfig::at(dir.join("absent.json"))
                .login("x")
                .unwrap(),
            Login::Anonymous
        ));
        std::fs::write(&path, "{not json").unwrap();
        let error = config.login("x").unwrap_err().to_string();
        assert!(
            error.contains("not JSON") && error.contains("config.json"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_token_answer_must_carry_a_header_safe_token() {
        assert!(token_from(br#"{"token":"abc.def"}"#).is_ok());
        assert!(token_from(br#"{"access_token":"abc"}"#).is_ok());
        assert!(token_from(br#"{"token":""}"#).is_err());
        assert!(token_from(b"{\"token\":\"a\\r\\nx: y\"}").is_err());
        assert!(token_from(b"<html>").is_err());
    }
}
