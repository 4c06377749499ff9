//! A response body in a content or transfer coding the redactor cannot read
//! is refused, whichever header line names the coding.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use warden_egress::resolve::OverrideResolver;
use warden_egress::secrets::{AccountKey, MemoryStore};
use warden_egress::testing::{self, TestCa};
use warden_egress::{ClientError, Egress, EgressError};

use crate::support::*;

/// The start of a gzip stream: what the redactor must never pass unread.
const GZIP: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03";

/// A raw HTTP/1.1 server over TLS answering every request with `head` and a
/// chunked gzip body; counts the requests it answered.
async fn raw_server(ca: &TestCa, head: &'static str) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let mut config = (*ca.server_config(&["api.github.com"])).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&answered);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let Ok(mut tls) = acceptor.accept(stream).await else {
                continue;
            };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match tls.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let mut response = format!("HTTP/1.1 200 OK\r\n{head}\r\n").into_bytes();
            response.extend_from_slice(format!("{:x}\r\n", GZIP.len()).as_bytes());
            response.extend_from_slice(GZIP);
            response.extend_from_slice(b"\r\n0\r\n\r\n");
            let _ = tls.write_all(&response).await;
            let _ = tls.flush().await;
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (addr, answered)
}

#[tokio::test]
async fn a_coded_body_is_refused_whatever_line_names_the_coding() {
    let heads = [
        "Content-Encoding: identity\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "Content-Encoding: identity, gzip\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
    ];
    for head in heads {
        let ca = TestCa::new();
        let (addr, answered) = raw_server(&ca, head).await;
        let resolver = OverrideResolver::new().with_socket("api.github.com", [addr]);
        let config = testing::config(&ca, &[("api.github.com", 443)]);
        let store = MemoryStore::new().with(
            AccountKey::new("github", "gh", ["repo"]),
            github_account(),
            TOKEN,
        );
        let egress = Egress::new(config, Arc::new(store), Arc::new(resolver)).unwrap();
        let session = egress
            .session(
                "github.search",
                "github",
                &[github_credential()],
                &[],
                1 << 20,
            )
            .await
            .unwrap();
        let result = session
            .send_checked(get("https://api.github.com/coded"), Some("gh"), CALL)
            .await;
        assert_eq!(
            answered.load(Ordering::SeqCst),
            1,
            "{head:?}: server reached"
        );
        match result {
            Err(EgressError::Client(ClientError::Protocol(_))) => {}
            other => panic!("{head:?}: expected a refusal, got {other:?}"),
        }
    }
}
