//! TLS for the HTTP endpoint (rustls, ring): a certificate chain and its
//! private key from PEM, for direct exposure without a terminating proxy.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Why a TLS certificate or key was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file holds no PEM certificate.
    #[error("no PEM certificate found (expected `-----BEGIN CERTIFICATE-----`)")]
    NoCertificate,
    /// A certificate block is not valid PEM.
    #[error("the certificate is not valid PEM: {0}")]
    Certificate(String),
    /// The key file holds no PEM private key.
    #[error("no PEM private key found (PKCS#8, PKCS#1 or SEC1)")]
    NoKey,
    /// rustls refused the pair (a key that does not match, an unsupported
    /// algorithm).
    #[error("the certificate and key cannot serve TLS: {0}")]
    Refused(String),
}

/// A rustls server configuration for `cert_pem` (the chain, leaf first) and
/// `key_pem`, offering HTTP/1.1 (the endpoint is served over HTTP/1.1).
pub fn server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| TlsError::NoKey)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Refused(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Refused(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_pem_are_refused_by_name() {
        assert!(matches!(
            server_config(b"not a certificate", b""),
            Err(TlsError::NoCertificate)
        ));
        let cert = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            server_config(cert, b"no key here"),
            Err(TlsError::NoKey)
        ));
    }
}
