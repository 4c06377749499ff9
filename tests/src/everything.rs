//! `@modelcontextprotocol/server-everything` (the reference server that
//! exercises every protocol feature), run with Node over streamable HTTP
//! on loopback, behind a TLS terminator that answers as `mcp.example.com`
//! with a certificate from a [`TestCa`]: Warden reaches it as it would a
//! real server, by its real-looking host, through its resolver override.
//!
//! `cargo xtask test` installs Node 22 and the server with npm into
//! `target/everything` (`WARDEN_EVERYTHING` names another install: the
//! directory holding `node_modules`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use warden_egress::testing::TestCa;

/// The host the server answers as.
pub const HOST: &str = "mcp.example.com";
/// Its endpoint.
pub const URL: &str = "https://mcp.example.com/mcp";

/// The install `cargo xtask test` makes.
fn install() -> PathBuf {
    std::env::var_os("WARDEN_EVERYTHING").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("workspace root")
                .join("target/everything")
        },
        PathBuf::from,
    )
}

/// The running server and its TLS front; both stop when dropped.
pub struct Everything {
    ca: TestCa,
    front: SocketAddr,
    node: Child,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Everything {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Everything")
            .field("front", &self.front)
            .finish_non_exhaustive()
    }
}

impl Everything {
    /// Start the server on a free loopback port and its TLS front.
    pub async fn start() -> Self {
        let dir = install();
        let node = dir.join("node_modules/.bin/node");
        let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        assert!(
            node.is_file() && script.is_file(),
            "server-everything is not installed in {} (run `cargo xtask test`, which installs \
             it, or set WARDEN_EVERYTHING)",
            dir.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let node = Command::new(node)
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts");
        let backend = SocketAddr::from(([127, 0, 0, 1], port));
        let wait = async {
            while TcpStream::connect(backend).await.is_err() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .expect("server-everything listens");

        let ca = TestCa::new();
        // Node's server speaks HTTP/1.1 only.
        let acceptor = TlsAcceptor::from(ca.server_config_alpn(&[HOST], &[b"http/1.1"]));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let front = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self {
            ca,
            front,
            node,
            task,
        }
    }

    /// Point `warden` at the server: trust the CA, resolve the host to
    /// the TLS front.
    pub fn configure(&self, warden: &crate::Warden) {
        let ca = warden.data_dir().join("everything-ca.pem");
        std::fs::write(&ca, self.ca.cert_pem()).expect("write CA");
        warden.configure(&format!(
            "[egress]\nextra_roots = [{ca:?}]\nallow_private = [\"{HOST}:443\"]\n\n[resolve]\n\"{HOST}\" = [\"{}\"]\n",
            self.front
        ));
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        self.task.abort();
        let _ = self.node.kill();
        let _ = self.node.wait();
    }
}
