//! The calls a server session has running, and what reaches them while
//! they run: the server's progress, and its requests of the caller
//! (elicitation, sampling) relayed to the caller's client.
//!
//! rmcp puts a fresh `progressToken` in every request it sends; the
//! server's `notifications/progress` name it, and a request the server
//! makes on a call's answer stream arrives marked with the call's request
//! id. [`Calls`] maps both to the call's [`RunningCall`] for as long as the
//! call runs ([`Route`] removes them when dropped), so a report or a
//! request reaches the call it belongs to and none outlives it.
//!
//! Each also counts as activity: a call may go its timeout without an
//! answer or a report, and waits on no timer while the caller's client is
//! being asked (a person filling in a form takes as long as it takes; the
//! operator's maximum still bounds the call).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken, RequestId};
use tokio::sync::watch;
use tokio::time::Instant;
use warden_core::lane::{LogEntry, LogLevel, Progress, Relay};

use crate::server::Reporting;

/// Longest progress message passed on, in characters.
const MAX_MESSAGE_CHARS: usize = 500;

/// Longest log message passed on, in characters.
const MAX_LOG_CHARS: usize = 4096;

/// One running call: where its progress goes, who may be asked on its
/// behalf, and when it was last heard of.
#[derive(Debug)]
pub(crate) struct RunningCall {
    reporting: Reporting,
    /// The last activity, and how many requests of the caller are open.
    activity: watch::Sender<(Instant, u32)>,
}

impl RunningCall {
    pub(crate) fn new(reporting: Reporting) -> Self {
        Self {
            reporting,
            activity: watch::channel((Instant::now(), 0)).0,
        }
    }

    /// Who may be asked on the call's behalf.
    pub(crate) fn relay(&self) -> Option<Arc<dyn Relay>> {
        self.reporting.relay.clone()
    }

    /// Pass a server's log message for this call on (bounded, one line).
    pub(crate) fn log(&self, level: LogLevel, message: &str) {
        self.touch();
        if let Some(sink) = &self.reporting.logs {
            let line = one_line_of(message, MAX_LOG_CHARS);
            let truncated = line.len() < message.len();
            sink.report(LogEntry {
                level,
                message: line,
                truncated,
            });
        }
    }

    /// The server did something for this call.
    pub(crate) fn touch(&self) {
        self.activity
            .send_modify(|(last, _)| *last = Instant::now());
    }

    /// The caller's client is being asked until the guard drops.
    pub(crate) fn asking(&self) -> Asking<'_> {
        self.activity.send_modify(|(last, open)| {
            *last = Instant::now();
            *open += 1;
        });
        Asking(self)
    }

    /// When the call goes quiet for `timeout`: `None` while the caller is
    /// being asked.
    pub(crate) fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        let (last, open) = *self.activity.borrow();
        (open == 0).then_some(last + timeout)
    }

    /// Resolves at the next activity.
    pub(crate) fn watch(&self) -> watch::Receiver<(Instant, u32)> {
        self.activity.subscribe()
    }
}

/// An open request of the caller; closes (and counts as activity) when dropped.
pub(crate) struct Asking<'a>(&'a RunningCall);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.0.activity.send_modify(|(last, open)| {
            *last = Instant::now();
            *open = open.saturating_sub(1);
        });
    }
}

#[derive(Debug, Default)]
struct Maps {
    by_token: HashMap<ProgressToken, Arc<RunningCall>>,
    by_id: HashMap<RequestId, Arc<RunningCall>>,
}

/// The running calls of one session.
#[derive(Debug, Clone, Default)]
pub(crate) struct Calls(Arc<Mutex<Maps>>);

impl Calls {
    /// Route what names `token` or `id` to `call` until the route drops.
    pub(crate) fn route(
        &self,
        token: ProgressToken,
        id: RequestId,
        call: Arc<RunningCall>,
    ) -> Route {
        let mut maps = self.lock();
        maps.by_token.insert(token.clone(), call.clone());
        maps.by_id.insert(id.clone(), call);
        Route {
            calls: self.clone(),
            token,
            id,
        }
    }

    /// The only call running, if there is exactly one: a server's log
    /// message carries no mark of the call it belongs to, so it is passed
    /// on only when it cannot belong to another caller's call.
    pub(crate) fn sole(&self) -> Option<Arc<RunningCall>> {
        let maps = self.lock();
        match maps.by_id.len() {
            1 => maps.by_id.values().next().cloned(),
            _ => None,
        }
    }

    /// The call whose answer stream carried a server request.
    pub(crate) fn by_request(&self, id: &RequestId) -> Option<Arc<RunningCall>> {
        self.lock().by_id.get(id).cloned()
    }

    /// Pass `params` to its call (a report for no running call is dropped:
    /// the call ended, or the token is not one of ours).
    pub(crate) fn report(&self, params: ProgressNotificationParam) {
        let call = self.lock().by_token.get(&params.progress_token).cloned();
        let Some(call) = call else {
            tracing::debug!(token = ?params.progress_token, "progress for no running call");
            return;
        };
        call.touch();
        let Some(sink) = &call.reporting.progress else {
            return;
        };
        if !params.progress.is_finite() {
            return;
        }
        sink.report(Progress {
            progress: params.progress,
            total: params.total.filter(|t| t.is_finite()),
            message: params.message.map(|m| one_line(&m)),
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Maps> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A call's route; removed when dropped.
#[derive(Debug)]
pub(crate) struct Route {
    calls: Calls,
    token: ProgressToken,
    id: RequestId,
}

impl Drop for Route {
    fn drop(&mut self) {
        let mut maps = self.calls.lock();
        maps.by_token.remove(&self.token);
        maps.by_id.remove(&self.id);
    }
}

/// `text` on one line (control characters become spaces), bounded.
pub(crate) fn one_line(text: &str) -> String {
    one_line_of(text, MAX_MESSAGE_CHARS)
}

fn one_line_of(text: &str, max_chars: usize) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max_chars)
        .collect()
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;
    use warden_core::lane::ProgressSink;

    use super::*;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn params(n: i64, progress: f64, message: &str) -> ProgressNotificationParam {
        let mut params = ProgressNotificationParam::new(token(n), progress);
        params.message = Some(message.to_owned());
        params
    }

    #[test]
    fn reports_reach_their_call_only_while_it_runs_on_one_bounded_line() {
        let calls = Calls::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = seen.clone();
            ProgressSink::new(move |p| seen.lock().unwrap().push(p))
        };
        let call = Arc::new(RunningCall::new(Reporting {
            progress: Some(sink),
            ..Reporting::default()
        }));
        let route = calls.route(token(1), RequestId::Number(7), call);
        assert!(calls.by_request(&RequestId::Number(7)).is_some());
        calls.report(params(1, 1.0, "step\u{1b}[2J one"));
        calls.report(params(2, 5.0, "another call's"));
        calls.report(params(1, f64::NAN, "not a number"));
        drop(route);
        calls.report(params(1, 2.0, "after the end"));
        assert!(calls.by_request(&RequestId::Number(7)).is_none());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].progress, 1.0);
        assert_eq!(seen[0].message.as_deref(), Some("step [2J one"));
        assert_eq!(one_line(&"x".repeat(2000)).len(), MAX_MESSAGE_CHARS);
    }

    #[tokio::test]
    async fn no_idle_deadline_while_the_caller_is_asked() {
        let call = RunningCall::new(Reporting::default());
        let second = Duration::from_secs(1);
        assert!(call.idle_deadline(second).is_some());
        let asking = call.asking();
        assert_eq!(call.idle_deadline(second), None);
        drop(asking);
        let after = call.idle_deadline(second).unwrap();
        assert!(after > Instant::now());
    }
}
