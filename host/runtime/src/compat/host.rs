//! `near:agent/host@0.4.1`: every import over the services of Warden's own
//! world (the call's log caps, its [`CallNetwork`], its deadline).
//!
//! | Import | Warden |
//! |---|---|
//! | `log` | the call's log: entry cap, byte cap, redaction (kept on success too) |
//! | `now-millis` | wall clock, ms since the Unix epoch |
//! | `workspace-read` | always `none`: Warden serves no workspace to tools |
//! | `http-request` | the call's egress session, see [`super::http`] |
//! | `tool-invoke` | always an error: Warden offers no tool-to-tool calls |
//! | `secret-exists` | whether the capability declares `name` and a value is staged |
//!
//! [`CallNetwork`]: warden_core::net::CallNetwork

use std::time::{SystemTime, UNIX_EPOCH};

use super::bindings::near::agent::host as wit;
use crate::outcome::LogLevel;
use crate::state::CallState;

/// What `tool-invoke` answers.
pub(crate) const TOOL_INVOKE_UNAVAILABLE: &str = "tool-invoke is not available in this host";

impl wit::Host for CallState {
    async fn log(&mut self, level: wit::LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            wit::LogLevel::Trace => LogLevel::Trace,
            wit::LogLevel::Debug => LogLevel::Debug,
            wit::LogLevel::Info => LogLevel::Info,
            wit::LogLevel::Warn => LogLevel::Warn,
            wit::LogLevel::Error => LogLevel::Error,
        };
        // Keep stdout/stderr lines (a panic message) in order with log calls.
        self.drain_stdio(false);
        self.push_log(level, &message);
        Ok(())
    }

    async fn now_millis(&mut self) -> wasmtime::Result<u64> {
        Ok(SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
    }

    async fn workspace_read(&mut self, _path: String) -> wasmtime::Result<Option<String>> {
        Ok(None)
    }

    async fn http_request(
        &mut self,
        method: String,
        url: String,
        headers_json: String,
        body: Option<Vec<u8>>,
        timeout_ms: Option<u32>,
    ) -> wasmtime::Result<Result<wit::HttpResponse, wit::HttpFailure>> {
        Ok(super::http::request(self, method, url, headers_json, body, timeout_ms).await)
    }

    async fn tool_invoke(
        &mut self,
        _alias: String,
        _params_json: String,
    ) -> wasmtime::Result<Result<String, String>> {
        Ok(Err(TOOL_INVOKE_UNAVAILABLE.to_owned()))
    }

    async fn secret_exists(&mut self, name: String) -> wasmtime::Result<bool> {
        Ok(self.network.acquire(&name).is_ok())
    }
}
