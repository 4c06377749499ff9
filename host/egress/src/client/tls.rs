//! The rustls client configuration: ring provider, webpki and extra roots, ALPN.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::ClientError;
use crate::config::EgressConfig;

/// A client config trusting the configured roots, offering h2 and http/1.1.
pub(crate) fn client_config(
    config: &EgressConfig,
) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    let mut roots = RootCertStore::empty();
    if config.webpki_roots {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    for pem in &config.extra_roots_pem {
        let mut any = false;
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert =
                cert.map_err(|_| ClientError::Config("extra root is not valid PEM".into()))?;
            roots
                .add(cert)
                .map_err(|_| ClientError::Config("extra root is not a valid certificate".into()))?;
            any = true;
        }
        if !any {
            return Err(ClientError::Config(
                "extra root PEM holds no certificate".into(),
            ));
        }
    }
    if roots.is_empty() {
        return Err(ClientError::Config("no trusted root certificates".into()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| ClientError::Config("TLS protocol versions".into()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(tls))
}
