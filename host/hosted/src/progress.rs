//! A call's progress, from the server to whoever made the call.
//!
//! rmcp puts a fresh `progressToken` in every request it sends; the
//! server's `notifications/progress` name it. [`Routes`] maps the token of
//! each running call to the caller's [`ProgressSink`] for as long as the
//! call runs ([`Route`] removes it when dropped), so a report reaches the
//! call it belongs to and none outlives it. A report's message was redacted
//! with the rest of the stream; it is cut to one bounded line here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use warden_core::lane::{Progress, ProgressSink};

/// Longest progress message passed on, in characters.
const MAX_MESSAGE_CHARS: usize = 500;

/// The running calls' sinks, by progress token.
#[derive(Debug, Clone, Default)]
pub(crate) struct Routes(Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>);

impl Routes {
    /// Send the reports for `token` to `sink` until the route is dropped.
    pub(crate) fn route(&self, token: ProgressToken, sink: ProgressSink) -> Route {
        self.lock().insert(token.clone(), sink);
        Route {
            routes: self.clone(),
            token,
        }
    }

    /// Pass `params` to its call's sink (a report for no running call is
    /// dropped: the call ended, or the token is not one of ours).
    pub(crate) fn report(&self, params: ProgressNotificationParam) {
        let sink = self.lock().get(&params.progress_token).cloned();
        let Some(sink) = sink else {
            tracing::debug!(token = ?params.progress_token, "progress for no running call");
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A call's route; removed when dropped.
#[derive(Debug)]
pub(crate) struct Route {
    routes: Routes,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

/// `text` on one line (control characters become spaces), bounded.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_MESSAGE_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn params(token: i64, progress: f64, message: &str) -> ProgressNotificationParam {
        let mut params =
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress);
        params.message = Some(message.to_owned());
        params
    }

    #[test]
    fn reports_reach_their_call_only_while_it_runs_on_one_bounded_line() {
        let routes = Routes::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = seen.clone();
            ProgressSink::new(move |p| seen.lock().unwrap().push(p))
        };
        let route = routes.route(ProgressToken(NumberOrString::Number(1)), sink);
        routes.report(params(1, 1.0, "step\u{1b}[2J one"));
        routes.report(params(2, 5.0, "another call's"));
        routes.report(params(1, f64::NAN, "not a number"));
        drop(route);
        routes.report(params(1, 2.0, "after the end"));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].progress, 1.0);
        assert_eq!(seen[0].message.as_deref(), Some("step [2J one"));
        let long = "x".repeat(2000);
        assert_eq!(one_line(&long).len(), MAX_MESSAGE_CHARS);
    }
}
