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

/// The reports of one call, queued on their way to its client.
pub(crate) struct Reports {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    queue: tokio::sync::Mutex<mpsc::Receiver<Progress>>,
}

/// A sink for the call of `context` and its reports' way out, when the client asked
/// for progress; `(None, None)` otherwise.
pub(crate) fn reports(
    context: &RequestContext<RoleServer>,
) -> (Option<ProgressSink>, Option<Reports>) {
    let Some(token) = context.meta.get_progress_token() else {
        return (None, None);
    };
    let (sender, queue) = mpsc::channel(QUEUE);
    let sink = ProgressSink::new(move |progress| {
        let _ = sender.try_send(progress);
    });
    let reports = Reports {
        token,
        peer: context.peer.clone(),
        queue: tokio::sync::Mutex::new(queue),
    };
    (Some(sink), Some(reports))
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
            Some(progress) = queue.recv() => sender.send(progress).await,
            output = &mut call => {
                while let Ok(progress) = queue.try_recv() {
                    sender.send(progress).await;
                }
                return output;
            }
        }
    }
}

impl Reports {
    async fn send(&self, progress: Progress) {
        let mut params = ProgressNotificationParam::new(self.token.clone(), progress.progress);
        params.total = progress.total;
        params.message = progress.message;
        if let Err(error) = self.peer.notify_progress(params).await {
            tracing::debug!(%error, "a progress notification was not sent");
        }
    }
}
