//! TLS for tests of Warden's own servers: a server certificate as PEM files
//! (what an operator hands `warden serve --tls-cert/--tls-key`), and a raw
//! HTTP/1.1 exchange over TLS trusting only the test CA.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warden_egress::testing::TestCa;

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A certificate chain and its PKCS#8 key for `hostnames`, signed by `ca`,
/// both PEM.
pub fn server_pem(ca: &TestCa, hostnames: &[&str]) -> (String, String) {
    let (chain, key) = ca.server_cert(hostnames);
    let certs: String = chain.iter().map(|c| pem("CERTIFICATE", c)).collect();
    (certs, pem("PRIVATE KEY", key.secret_der()))
}

/// A TLS client trusting only `ca`, offering HTTP/1.1.
pub fn connector(ca: &TestCa) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.cert_pem().as_bytes()) {
        roots.add(cert.expect("CA pem")).expect("CA root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// Send `request` (a whole HTTP/1.1 request, `Connection: close`) to `addr`
/// over TLS as `server_name`, trusting only `ca`; everything the server
/// answered, or the TLS error.
pub async fn exchange(
    ca: &TestCa,
    addr: SocketAddr,
    server_name: &str,
    request: &str,
) -> std::io::Result<String> {
    let connector = connector(ca);
    let name = ServerName::try_from(server_name.to_owned())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let mut tls = connector.connect(name, tcp).await?;
    tls.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    // A server may close without close_notify once it has answered.
    let _ = tls.read_to_end(&mut answer).await;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}
