//! Progress of a call, relayed to the client that asked for it.
//!
//! A client that sends `_meta.progressToken` with `tools/call` gets each
//! report of the running call as `notifications/progress` for that token,
//! in order, while the call runs (over HTTP, rmcp routes them to the
//! call's own event stream). Reports queue in a small buffer: when the
//! client reads slower than the tool reports, the surplus is dropped (a
//! later report says as much as the ones it replaces), and the call never
//! waits on the client.

use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use tokio::sync::mpsc;
use warden_core::lane::{Progress, ProgressSink};

/// Reports waiting to be sent; past it, new ones are dropped.
const QUEUE: usize = 64;

/// The reports of one call, on their way to its client.
pub(crate) struct Relay {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    reports: mpsc::Receiver<Progress>,
}

/// A sink for the call of `context` and its relay, when the client asked
/// for progress; `(None, None)` otherwise.
pub(crate) fn relay(context: &RequestContext<RoleServer>) -> (Option<ProgressSink>, Option<Relay>) {
    let Some(token) = context.meta.get_progress_token() else {
        return (None, None);
    };
    let (sender, reports) = mpsc::channel(QUEUE);
    let sink = ProgressSink::new(move |progress| {
        let _ = sender.try_send(progress);
    });
    let relay = Relay {
        token,
        peer: context.peer.clone(),
        reports,
    };
    (Some(sink), Some(relay))
}

/// Run `call`, sending the reports `relay` receives meanwhile; the reports
/// that came before the call's end are sent before it returns.
pub(crate) async fn beside<F: Future>(relay: Option<Relay>, call: F) -> F::Output {
    let Some(mut relay) = relay else {
        return call.await;
    };
    tokio::pin!(call);
    loop {
        tokio::select! {
            biased;
            Some(progress) = relay.reports.recv() => relay.send(progress).await,
            output = &mut call => {
                while let Ok(progress) = relay.reports.try_recv() {
                    relay.send(progress).await;
                }
                return output;
            }
        }
    }
}

impl Relay {
    async fn send(&self, progress: Progress) {
        let mut params = ProgressNotificationParam::new(self.token.clone(), progress.progress);
        params.total = progress.total;
        params.message = progress.message;
        if let Err(error) = self.peer.notify_progress(params).await {
            tracing::debug!(%error, "a progress notification was not sent");
        }
    }
}
