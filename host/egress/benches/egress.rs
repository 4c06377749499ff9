//! Egress overhead: a guest request through `CallSession::send` (policy,
//! staging, resolution, address checks, injection, redaction) versus a
//! direct hyper HTTP/2 request on a kept connection to the same local
//! HTTPS server. Both reuse one connection.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use warden_core::net::{CallNetwork, GuestRequest};
use warden_core::spec::CredentialSpec;
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{self, TestCa, TestResponse, TestServer};
use warden_egress::{Egress, EgressConfig};

fn main() {
    divan::main();
}

const BODY: &[u8] = &[b'x'; 1024];

struct World {
    rt: tokio::runtime::Runtime,
    _server: TestServer,
    egress: Egress,
    direct: http2::SendRequest<Empty<Bytes>>,
}

fn spec() -> CredentialSpec {
    CredentialSpec::bearer("gh", "github", &["repo"], "api.github.com")
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ca = TestCa::new();
    let server = rt
        .block_on(TestServer::start(&ca, &["api.github.com"], |_| {
            TestResponse::ok(BODY)
        }))
        .unwrap();
    let resolver = server.resolver(&["api.github.com"]);
    let config = EgressConfig {
        max_requests_per_call: u32::MAX,
        ..testing::config(&ca, &[("api.github.com", 443)])
    };
    let api = AccountAudience {
        scheme: "https".into(),
        host: "api.github.com".into(),
        port: 443,
    };
    let store = MemoryStore::new().with(
        AccountKey::new("github", "gh", ["repo"]),
        AccountBinding::new("github", [api]),
        "ghp_BenchToken0123456789abcdefghijkl",
    );
    let egress = Egress::new(config, Arc::new(store), Arc::new(resolver)).unwrap();
    let addr = server.addr();
    let direct = rt.block_on(async {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(ca.cert_pem().as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec()];
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = ServerName::try_from("api.github.com").unwrap();
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await
            .unwrap();
        let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        sender
    });
    World {
        rt,
        _server: server,
        egress,
        direct,
    }
});

/// One guest call: a fresh session (staging + redactor), one credentialed GET.
#[divan::bench]
fn egress_send() {
    let world = &*WORLD;
    world.rt.block_on(async {
        let session = world
            .egress
            .session("github.get", "github", &[spec()], &[], u64::MAX)
            .await
            .unwrap();
        let request = GuestRequest {
            method: "GET".into(),
            url: "https://api.github.com/repos/o/r".into(),
            headers: vec![("accept".into(), "application/json".into())],
            body: None,
            timeout: None,
        };
        let response = session
            .send(request, Some("gh"), std::time::Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(response.body.len(), BODY.len());
    });
}

/// The same GET on a session kept across iterations (no per-call staging).
#[divan::bench]
fn egress_send_kept_session() {
    static SESSION: LazyLock<warden_egress::CallSession> = LazyLock::new(|| {
        WORLD
            .rt
            .block_on(
                WORLD
                    .egress
                    .session("github.get", "github", &[spec()], &[], u64::MAX),
            )
            .unwrap()
    });
    let world = &*WORLD;
    world.rt.block_on(async {
        let request = GuestRequest {
            method: "GET".into(),
            url: "https://api.github.com/repos/o/r".into(),
            headers: vec![("accept".into(), "application/json".into())],
            body: None,
            timeout: None,
        };
        let response = SESSION
            .send(request, Some("gh"), std::time::Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(response.body.len(), BODY.len());
    });
}

/// The baseline: the same GET with hyper on a kept HTTP/2 connection.
#[divan::bench]
fn direct_hyper() {
    let world = &*WORLD;
    world.rt.block_on(async {
        let request = http::Request::builder()
            .uri("https://api.github.com/repos/o/r")
            .header(
                "authorization",
                "Bearer ghp_BenchToken0123456789abcdefghijkl",
            )
            .header("accept", "application/json")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let mut sender = world.direct.clone();
        let response = sender.send_request(request).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.len(), BODY.len());
    });
}
