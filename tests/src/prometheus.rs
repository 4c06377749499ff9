//! A real Prometheus server for the metrics tests: Debian's `prometheus`
//! (which `cargo xtask test` installs when it is missing) with its own
//! configuration and database in a temporary directory, scraping the targets
//! a test names every second, and answering PromQL over its HTTP API.
//! Killed (and its files removed) when dropped. As root it runs as `nobody`.
//!
//! The binary is `$WARDEN_PROMETHEUS`, else `prometheus` on `PATH`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::postgres::{chown, free_port, is_root};

/// The unprivileged user the server runs as when the tests run as root.
const RUN_AS: &str = "nobody";

/// One scrape target: `job` at `http://{addr}{path}`, with `bearer` sent as
/// its `Authorization: Bearer` when given.
#[derive(Debug, Clone)]
pub struct Target {
    /// The job name (the `job` label of its series).
    pub job: String,
    /// `host:port`.
    pub addr: SocketAddr,
    /// The metrics path.
    pub path: String,
    /// A bearer token to send.
    pub bearer: Option<String>,
}

/// A running Prometheus.
#[derive(Debug)]
pub struct TestPrometheus {
    child: Child,
    root: tempfile::TempDir,
    port: u16,
}

impl TestPrometheus {
    /// Start a server scraping `targets` every second. Panics, saying what
    /// is missing, when Prometheus is not installed.
    pub fn start(targets: &[Target]) -> TestPrometheus {
        let binary = binary();
        let root = tempfile::Builder::new()
            .prefix("warden-prometheus-")
            .tempdir()
            .expect("temp dir");
        let config = root.path().join("prometheus.yml");
        std::fs::write(&config, configuration(root.path(), targets)).expect("config");
        let data = root.path().join("data");
        std::fs::create_dir(&data).expect("data dir");
        let as_root = is_root();
        if as_root {
            for entry in std::fs::read_dir(root.path()).expect("temp dir").flatten() {
                chown(&entry.path(), RUN_AS);
            }
            chown(root.path(), RUN_AS);
        }
        let port = free_port();
        let mut command = if as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", RUN_AS, "--"]).arg(&binary);
            c
        } else {
            Command::new(&binary)
        };
        let log = std::fs::File::create(root.path().join("server.log")).expect("log");
        let child = command
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .current_dir(root.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
        let server = TestPrometheus { child, root, port };
        server.wait_ready();
        server
    }

    /// The value of the PromQL `query` (an instant vector with one series,
    /// e.g. a `sum(...)`), or `None` while it has no result.
    pub fn query(&self, query: &str) -> Option<f64> {
        let answer = self.get(&format!("/api/v1/query?query={}", encode(query)))?;
        let json: Value = serde_json::from_str(&answer).ok()?;
        assert_eq!(json["status"], "success", "{query}: {json}");
        json["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// Query until the value is `expected` (Prometheus scrapes once a
    /// second); panics with the server's last answer and log after `within`.
    pub fn wait_for(&self, query: &str, expected: f64, within: Duration) {
        let deadline = Instant::now() + within;
        let mut last = None;
        while Instant::now() < deadline {
            last = self.query(query);
            if last == Some(expected) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "{query} is {last:?}, not {expected}; targets: {}\nlog:\n{}",
            self.get("/api/v1/targets").unwrap_or_default(),
            self.log()
        );
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.get("/-/ready").is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("prometheus did not become ready:\n{}", self.log());
    }

    /// The body of `GET path` when the answer is `200`.
    fn get(&self, path: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        )
        .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let (head, body) = answer.split_once("\r\n\r\n")?;
        if !head.starts_with("HTTP/1.1 200") {
            return None;
        }
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        Some(if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        })
    }
}

impl Drop for TestPrometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `prometheus.yml`: every target scraped each second.
fn configuration(root: &Path, targets: &[Target]) -> String {
    let mut yaml =
        String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
    for (n, target) in targets.iter().enumerate() {
        yaml.push_str(&format!(
            "  - job_name: {}\n    metrics_path: {}\n    static_configs:\n      - targets: ['{}']\n",
            target.job, target.path, target.addr
        ));
        if let Some(token) = &target.bearer {
            let file = root.join(format!("token-{n}"));
            std::fs::write(&file, token).expect("token file");
            yaml.push_str(&format!(
                "    authorization:\n      type: Bearer\n      credentials_file: {}\n",
                file.display()
            ));
        }
    }
    yaml
}

fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WARDEN_PROMETHEUS") {
        return PathBuf::from(path);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("prometheus"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "no prometheus binary: install Debian's `prometheus` package (`cargo xtask test` \
                 does) or set WARDEN_PROMETHEUS"
            )
        })
}

/// `text` percent-encoded for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A chunked HTTP/1.1 body joined.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}
