//! Nothing the host logs carries a staged secret.
//!
//! This test has a process of its own: it installs a global subscriber
//! before any callsite is registered. Sharing a binary with the other
//! egress tests made it flaky — a callsite that another test thread was
//! registering while this test installed a thread-local subscriber could
//! cache "never interested", and the event went missing.

#[path = "all/support.rs"]
#[allow(dead_code)]
mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use support::{CALL, TOKEN, assert_clean, fixture, get};
use warden_core::net::CallNetwork;
use warden_egress::testing::TestResponse;

/// A log writer that keeps everything written to it.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn nothing_logged_carries_the_token() {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    // The server echoes the injected header back, so the token crosses
    // every layer that logs: client, connection, session.
    let fx =
        fixture(|req| TestResponse::ok(req.header("authorization").unwrap_or_default().to_owned()))
            .await;
    let session = fx.session().await;
    session
        .send(get("https://api.github.com/a?x=1"), Some("gh"), CALL)
        .await
        .unwrap();
    let leak = get(&format!("https://api.github.com/a?x={TOKEN}"));
    session.send(leak, Some("gh"), CALL).await.unwrap_err();

    let logs = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("egress request"), "{logs}");
    assert!(logs.contains("egress request failed"), "{logs}");
    assert_clean(&logs);
}
