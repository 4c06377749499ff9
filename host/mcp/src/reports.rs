//! What a running call reports, relayed to the client that made it.
//!
//! - Progress: a client that sends `_meta.progressToken` with `tools/call`
//!   gets each report as `notifications/progress` for that token (over
//!   HTTP, rmcp routes them to the call's own event stream).
//! - Log entries: a client that set a level (`logging/setLevel`) gets the
//!   call's entries at or above it as `notifications/message` (logger
//!   `warden`): a hosted server's as they come, a guest's when it ends. At
//!   most [`MAX_LOG_MESSAGES`] per call; past it one message says how many
//!   more were dropped.
//!
//! Reports queue in a small buffer, in order: when the client reads slower
//! than the tool reports, the surplus is dropped (a later progress report
//! says as much as the ones it replaces), and the call never waits on the
//! client.

#![expect(
    deprecated,
    reason = "logging is deprecated by a protocol after 2025-11-25, which clients still use"
)]

use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::Value;
use tokio::sync::mpsc;
use warden_core::lane::{LogEntry, LogLevel, LogSink, Progress, ProgressSink};

/// Reports waiting to be sent; past it, new ones are dropped.
const QUEUE: usize = 64;

/// Log messages one call sends a client at most.
pub(crate) const MAX_LOG_MESSAGES: u32 = 100;

/// The level a client set for its connection (`None`: it asked for no
/// log messages).
pub(crate) type Level = Arc<Mutex<Option<LoggingLevel>>>;

enum Report {
    Progress(Progress),
    Log(LogEntry),
}

/// The reports of one call, queued on their way to its client.
pub(crate) struct Reports {
    token: Option<ProgressToken>,
    level: Option<LoggingLevel>,
    peer: Peer<RoleServer>,
    queue: tokio::sync::Mutex<mpsc::Receiver<Report>>,
    /// Log messages sent, and dropped past the cap.
    logs: Mutex<(u32, u32)>,
}

/// The sinks for the call of `context` and its reports' way out: a
/// progress sink when the client sent a token, a log sink when it set a
/// level on `level`; `(None, None, None)` when it asked for neither.
pub(crate) fn reports(
    context: &RequestContext<RoleServer>,
    level: &Level,
) -> (Option<ProgressSink>, Option<LogSink>, Option<Reports>) {
    let token = context.meta.get_progress_token();
    let level = *level.lock().unwrap_or_else(|e| e.into_inner());
    if token.is_none() && level.is_none() {
        return (None, None, None);
    }
    let (sender, queue) = mpsc::channel(QUEUE);
    let progress = token.as_ref().map(|_| {
        let sender = sender.clone();
        ProgressSink::new(move |p| {
            let _ = sender.try_send(Report::Progress(p));
        })
    });
    let logs = level.map(|_| {
        LogSink::new(move |entry| {
            let _ = sender.try_send(Report::Log(entry));
        })
    });
    let reports = Reports {
        token,
        level,
        peer: context.peer.clone(),
        queue: tokio::sync::Mutex::new(queue),
        logs: Mutex::new((0, 0)),
    };
    (progress, logs, Some(reports))
}

/// Run `call`, sending the reports queued meanwhile; those that came before
/// the call's end are sent before it returns. One [`Reports`] may serve a
/// call and then its resumption once approved.
pub(crate) async fn beside<F: Future>(reports: Option<&Reports>, call: F) -> F::Output {
    let Some(sender) = reports else {
        return call.await;
    };
    let mut queue = sender.queue.lock().await;
    tokio::pin!(call);
    loop {
        tokio::select! {
            biased;
            Some(report) = queue.recv() => sender.send(report).await,
            output = &mut call => {
                while let Ok(report) = queue.try_recv() {
                    sender.send(report).await;
                }
                sender.dropped_note().await;
                return output;
            }
        }
    }
}

/// The MCP level of a log entry.
fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Trace | LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warn => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
    }
}

/// Severity rank of an MCP level (RFC 5424 order, debug lowest).
pub(crate) fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Reports {
    async fn send(&self, report: Report) {
        let sent = match report {
            Report::Progress(progress) => {
                let Some(token) = &self.token else { return };
                let mut params = ProgressNotificationParam::new(token.clone(), progress.progress);
                params.total = progress.total;
                params.message = progress.message;
                self.peer.notify_progress(params).await
            }
            Report::Log(entry) => {
                let level = mcp_level(entry.level);
                if self.level.is_none_or(|min| rank(level) < rank(min)) {
                    return;
                }
                {
                    let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
                    if logs.0 >= MAX_LOG_MESSAGES {
                        logs.1 += 1;
                        return;
                    }
                    logs.0 += 1;
                }
                self.log(level, Value::String(entry.message)).await
            }
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "a notification was not sent");
        }
    }

    async fn log(
        &self,
        level: LoggingLevel,
        data: Value,
    ) -> Result<(), rmcp::service::ServiceError> {
        let mut params = LoggingMessageNotificationParam::new(level, data);
        params.logger = Some("warden".into());
        self.peer.notify_logging_message(params).await
    }

    /// One warning saying how many log messages were dropped, if any.
    async fn dropped_note(&self) {
        let dropped = std::mem::take(&mut self.logs.lock().unwrap_or_else(|e| e.into_inner()).1);
        if dropped > 0 {
            let text = format!("{dropped} more log messages of this call were dropped");
            let _ = self.log(LoggingLevel::Warning, Value::String(text)).await;
        }
    }
}
