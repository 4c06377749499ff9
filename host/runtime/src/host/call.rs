//! `warden:tool/call` (0.2.0): the guest's progress reports, passed on
//! as they come, and whether the caller cancelled the call.

use warden_core::lane::Progress;

use crate::bindings::v0_2::warden::tool::call::Host;
use crate::state::{CallState, redact_bounded};

/// Reports one call may pass on; the rest are dropped.
pub(crate) const MAX_PROGRESS_REPORTS: u32 = 256;
/// Bytes kept of a report's message.
const MAX_PROGRESS_MESSAGE_BYTES: usize = 512;

impl Host for CallState {
    async fn report_progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> wasmtime::Result<()> {
        self.report_progress(progress, total, message.as_deref());
        Ok(())
    }

    async fn cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(CallState::cancelled(self))
    }
}

impl CallState {
    /// Pass one report on, when someone listens, it grows, and the call
    /// has reports left: the message on one line, redacted and bounded.
    fn report_progress(&mut self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let cancelled = CallState::cancelled(self);
        let state = &mut self.progress;
        let Some(sink) = &state.sink else {
            return;
        };
        let grows = progress.is_finite() && state.last.is_none_or(|last| progress > last);
        if !grows || state.sent >= MAX_PROGRESS_REPORTS || cancelled {
            return;
        }
        state.sent += 1;
        state.last = Some(progress);
        let message = message.map(|text| {
            let line = crate::host::log::one_line(text);
            redact_bounded(self.network.as_ref(), &line, MAX_PROGRESS_MESSAGE_BYTES).0
        });
        sink.report(Progress {
            progress,
            total: total.filter(|t| t.is_finite()),
            message,
        });
    }
}
