//! A headless Chromium driven through WebDriver (Debian's `chromium` and
//! `chromium-driver`, which `cargo xtask test` installs when missing), for
//! the console's browser test: a W3C WebDriver session over plain
//! HTTP/1.1 to a `chromedriver` on loopback. Killed when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::postgres::{free_port, is_root};

/// A browser session.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Browser {
    /// Start `chromedriver` and a headless Chromium with a phone-sized
    /// window (the console is meant for one).
    pub fn start() -> Browser {
        let port = free_port();
        let driver = Command::new(
            std::env::var_os("WARDEN_CHROMEDRIVER").unwrap_or("chromedriver".into()),
        )
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver is installed (cargo xtask test installs Debian's `chromium-driver`)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        // `/dev/shm` is small in containers: Chromium uses /tmp instead.
        let mut args = vec![
            "--headless=new",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=412,915",
        ];
        if is_root() {
            args.push("--no-sandbox");
        }
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
        };
        let created = browser.call(
            "POST",
            "/session",
            &json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": chromium(), "args": args},
            }}}),
        );
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a WebDriver session: {created}"))
            .to_owned();
        browser
    }

    /// Open `url`.
    pub fn open(&self, url: &str) {
        self.session_call("POST", "/url", &json!({ "url": url }));
    }

    /// The current page's URL.
    pub fn url(&self) -> String {
        self.session_call("GET", "/url", &Value::Null)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The page's HTML as the browser holds it now.
    pub fn source(&self) -> String {
        self.session_call("GET", "/source", &Value::Null)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Run `script` in the page; its return value.
    pub fn script(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            &json!({ "script": script, "args": [] }),
        )
    }

    /// Click the first element matching the CSS `selector`.
    pub fn click(&self, selector: &str) {
        let element = self.session_call(
            "POST",
            "/element",
            &json!({ "using": "css selector", "value": selector }),
        );
        let id = element
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no `{selector}` on the page: {element}"))
            .to_owned();
        self.session_call("POST", &format!("/element/{id}/click"), &json!({}));
    }

    /// Wait (bounded) until the page's source satisfies `test`.
    pub fn wait_for(&self, what: &str, test: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let source = self.source();
            if test(&source) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what} within 30 s; the page:\n{source}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Save a PNG screenshot of the page at `path`.
    pub fn screenshot(&self, path: &Path) {
        let shot = self.session_call("GET", "/screenshot", &Value::Null);
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().expect("a screenshot"))
            .expect("base64 PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }

    fn session_call(&self, method: &str, path: &str, body: &Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    /// One WebDriver command; its `value`, or a panic with the driver's error.
    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("chromedriver");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("send");
        // chromedriver keeps the connection open whatever the request
        // says: read the head, then exactly `Content-Length` bytes.
        let mut reader = std::io::BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut reader, &mut line).expect("read");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a length");
            }
        }
        let mut payload = vec![0; length];
        reader.read_exact(&mut payload).expect("read the body");
        let answer: Value = serde_json::from_slice(&payload).unwrap_or_else(|e| {
            panic!(
                "{method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&payload)
            )
        });
        if answer["value"]["error"].is_string() {
            panic!("{method} {path}: {}", answer["value"]);
        }
        answer["value"].clone()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.call(
                    "DELETE",
                    &format!("/session/{}", self.session),
                    &Value::Null,
                )
            }));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn chromium() -> String {
    std::env::var("WARDEN_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}
