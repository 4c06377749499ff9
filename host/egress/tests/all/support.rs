//! Shared fixtures: a local "GitHub" behind a generated CA, reached through
//! a resolver override, and a store holding one staged token.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use secrecy::SecretString;
use warden_core::net::{GuestRequest, GuestResponse};
use warden_core::spec::{CredentialSpec, NetworkTarget};
use warden_egress::secrets::{
    AccountAudience, AccountBinding, AccountKey, MemoryStore, RefreshGuard, SecretError,
    SecretStore,
};
use warden_egress::testing::{self, RecordedRequest, TestCa, TestResponse, TestServer};
use warden_egress::{CallSession, Egress, EgressConfig};

pub(crate) const TOKEN: &str = "ghp_TestTokenValue0123456789abcdefABCD";
pub(crate) const LOCAL_HOSTS: &[&str] = &[
    "api.github.com",
    "uploads.github.com",
    "github.com",
    "evil.test",
];

pub(crate) struct Fixture {
    pub(crate) server: TestServer,
    pub(crate) egress: Egress,
    /// What another host sharing this store is built from.
    config: EgressConfig,
    resolver: warden_egress::resolve::OverrideResolver,
}

pub(crate) fn github_credential() -> CredentialSpec {
    CredentialSpec::bearer("gh", "github", &["repo"], "api.github.com")
}

pub(crate) fn target(host: &str) -> NetworkTarget {
    NetworkTarget {
        scheme: "https".into(),
        host_pattern: host.into(),
        port: None,
    }
}

pub(crate) async fn fixture_with(
    tune: impl FnOnce(EgressConfig) -> EgressConfig,
    handler: impl Fn(&RecordedRequest) -> TestResponse + Send + Sync + 'static,
) -> Fixture {
    let ca = TestCa::new();
    let server = TestServer::start(&ca, LOCAL_HOSTS, handler).await.unwrap();
    let resolver = server
        .resolver(LOCAL_HOSTS)
        .with_ip("loopback.test", [IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .with_ip(
            "metadata.test",
            [IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254))],
        );
    // Only the GitHub origins may reach the local (loopback) server.
    let config = tune(testing::config(
        &ca,
        &[
            ("api.github.com", 443),
            ("uploads.github.com", 443),
            ("github.com", 443),
        ],
    ));
    let store = MemoryStore::new().with(
        AccountKey::new("github", "gh", ["repo"]),
        github_account(),
        TOKEN,
    );
    let egress = Egress::new(config.clone(), Arc::new(store), Arc::new(resolver.clone())).unwrap();
    Fixture {
        server,
        egress,
        config,
        resolver,
    }
}

impl Fixture {
    /// A host with this fixture's configuration on `store`.
    pub(crate) fn host_on(&self, store: Arc<dyn SecretStore>) -> Egress {
        Egress::new(self.config.clone(), store, Arc::new(self.resolver.clone())).unwrap()
    }

    /// Another host's egress on the same secret store (a shared database):
    /// the same configuration, nothing else in common (its own refresh
    /// single-flight locks).
    pub(crate) fn another_host(&self) -> Egress {
        Egress::new(
            self.config.clone(),
            self.egress.store().clone(),
            Arc::new(self.resolver.clone()),
        )
        .unwrap()
    }
}

pub(crate) async fn fixture(
    handler: impl Fn(&RecordedRequest) -> TestResponse + Send + Sync + 'static,
) -> Fixture {
    fixture_with(|c| c, handler).await
}

impl Fixture {
    pub(crate) async fn session(&self) -> CallSession {
        let targets = [
            target("uploads.github.com"),
            target("loopback.test"),
            target("metadata.test"),
        ];
        self.egress
            .session(
                "github.search",
                "github",
                &[github_credential()],
                &targets,
                4 << 20,
            )
            .await
            .unwrap()
    }
}

/// A store that several hosts share and that locks refreshes across them,
/// as [`warden_egress::secrets::PgSecretStore`] does: the fixture's memory
/// store behind one lock for every account.
#[derive(Debug)]
pub(crate) struct TurnTaking {
    inner: Arc<dyn SecretStore>,
    turns: Arc<tokio::sync::Mutex<()>>,
}

impl TurnTaking {
    pub(crate) fn new(inner: Arc<dyn SecretStore>) -> Self {
        TurnTaking {
            inner,
            turns: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl SecretStore for TurnTaking {
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        self.inner.get(key).await
    }

    async fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        self.inner.put(key, value).await
    }

    async fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        self.inner.delete(key).await
    }

    async fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        self.inner.list().await
    }

    async fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        self.inner.binding(key).await
    }

    async fn set_binding(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
    ) -> Result<(), SecretError> {
        self.inner.set_binding(key, binding).await
    }

    async fn lock_refresh(&self, _key: &AccountKey) -> Result<Option<RefreshGuard>, SecretError> {
        let turn = Arc::clone(&self.turns).lock_owned().await;
        Ok(Some(RefreshGuard::new(turn)))
    }
}

/// The binding of the fixture's account: extension `github`, sent only to api.github.com.
pub(crate) fn github_account() -> AccountBinding {
    AccountBinding::new(
        "github",
        [AccountAudience {
            scheme: "https".into(),
            host: "api.github.com".into(),
            port: 443,
        }],
    )
}

pub(crate) fn get(url: &str) -> GuestRequest {
    request("GET", url, None)
}

pub(crate) fn request(method: &str, url: &str, body: Option<&[u8]>) -> GuestRequest {
    GuestRequest {
        method: method.into(),
        url: url.into(),
        headers: vec![("accept".into(), "application/json".into())],
        body: body.map(<[u8]>::to_vec),
        timeout: None,
    }
}

pub(crate) const CALL: Duration = Duration::from_secs(10);

/// Every encoding of the token a leak could take.
pub(crate) fn token_forms() -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    vec![
        TOKEN.to_owned(),
        TOKEN.to_ascii_lowercase(),
        percent_encoding::utf8_percent_encode(TOKEN, percent_encoding::NON_ALPHANUMERIC)
            .to_string(),
        b64.encode(TOKEN),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(TOKEN),
        // The token inside a longer base64 text (Basic auth style).
        b64.encode(format!("x-access-token:{TOKEN}"))[20..40].to_owned(),
    ]
}

/// Fail if `text` carries the token in any form.
pub(crate) fn assert_clean(text: &str) {
    let lower = text.to_ascii_lowercase();
    for form in token_forms() {
        assert!(
            !lower.contains(&form.to_ascii_lowercase()),
            "leak of a staged secret in: {text}"
        );
    }
}

pub(crate) fn assert_response_clean(response: &GuestResponse) {
    assert_clean(&String::from_utf8_lossy(&response.body));
    for (name, value) in &response.headers {
        assert_clean(&format!("{name}: {value}"));
    }
}
