//! Test support (feature `testing`): a generated CA, local HTTPS servers
//! that record what they receive, and an egress config that trusts them.
//!
//! ```no_run
//! # async fn demo() {
//! use warden_egress::testing::{TestCa, TestResponse, TestServer};
//! let ca = TestCa::new();
//! let server = TestServer::start(&ca, &["api.github.com"], |_req| TestResponse::ok("{}")).await.unwrap();
//! let resolver = server.resolver(&["api.github.com"]);
//! let config = warden_egress::testing::config(&ca, &[("api.github.com", 443)]);
//! # let _ = (resolver, config);
//! # }
//! ```

mod oauth;
mod server;

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

pub use oauth::{FakeAuthServer, follow_redirect};
pub use server::{RecordedRequest, TestResponse, TestServer};

use crate::config::EgressConfig;

/// A throwaway certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    /// A fresh CA.
    pub fn new() -> Self {
        let key = KeyPair::generate().expect("generate CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "Warden Test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("self-sign CA");
        Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA certificate, PEM (add it to [`EgressConfig::extra_roots_pem`]).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A server certificate chain and key for `hostnames`.
    pub fn server_cert(
        &self,
        hostnames: &[&str],
    ) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let key = KeyPair::generate().expect("generate server key");
        let names: Vec<String> = hostnames.iter().map(|h| (*h).to_owned()).collect();
        let params = CertificateParams::new(names).expect("server params");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("sign server cert");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (vec![cert.der().clone()], key)
    }

    /// A rustls server config for `hostnames`, offering h2 and http/1.1.
    pub fn server_config(&self, hostnames: &[&str]) -> Arc<rustls::ServerConfig> {
        self.server_config_alpn(hostnames, &[b"h2", b"http/1.1"])
    }

    /// A rustls server config for `hostnames`, offering the `alpn` protocols.
    pub fn server_config_alpn(
        &self,
        hostnames: &[&str],
        alpn: &[&[u8]],
    ) -> Arc<rustls::ServerConfig> {
        let (chain, key) = self.server_cert(hostnames);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server cert");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

/// An egress config trusting only `ca`, with non-public addresses allowed
/// for exactly the listed `host:port` origins (the ones a test resolves to
/// its local server). Short timeouts suit tests.
pub fn config(ca: &TestCa, local_origins: &[(&str, u16)]) -> EgressConfig {
    let mut config = EgressConfig {
        webpki_roots: false,
        connect_timeout: std::time::Duration::from_secs(5),
        read_timeout: std::time::Duration::from_secs(5),
        total_timeout: std::time::Duration::from_secs(10),
        ..EgressConfig::default()
    }
    .with_extra_root_pem(ca.cert_pem());
    for (host, port) in local_origins {
        config = config.allow_private_address(host, *port);
    }
    config
}
