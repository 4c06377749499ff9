//! The install-time check of a compatibility component: `description()` and
//! `schema()` are called once, in a fresh instance with no network, under the
//! runtime's default limits; `schema()` must return a JSON object.
//!
//! The result is only a sanity check: the manifest's schemas stay what the
//! model sees and what input is validated against.

use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Instant;

use warden_core::net::DenyAll;
use wasmtime::{Engine, Store, UpdateDeadline};

use super::call::Pre;
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::state::CallState;

/// Call `description()` and `schema()` of `pre`; refuse the component
/// unless the schema is a JSON object.
pub(crate) fn check_schema(
    engine: &Engine,
    config: &RuntimeConfig,
    name: &str,
    pre: &Pre,
) -> Result<(), RuntimeError> {
    let refuse = |reason: String| RuntimeError::ToolSchema {
        component: name.to_owned(),
        reason,
    };
    let limits = config.defaults.capped(&config.maxima);
    let deadline = Instant::now() + limits.timeout;
    let state = CallState::new(
        Arc::new(DenyAll),
        limits,
        deadline,
        "install".to_owned(),
        name.to_owned(),
    );
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.set_hostcall_fuel(crate::limits::hostcall_fuel(limits.max_output_bytes));
    if config.fuel_metering {
        store
            .set_fuel(limits.fuel)
            .map_err(|e| refuse(format!("setting fuel: {e}")))?;
    }
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Continue(1)
        })
    });
    let probe = async {
        let tool = pre.instantiate_async(&mut store).await?;
        let tool = tool.near_agent_tool();
        tool.call_description(&mut store).await?;
        tool.call_schema(&mut store).await
    };
    // Epoch interrupts stop guest code, not a guest waiting in a host call
    // (a WASI clock): the deadline bounds the whole probe.
    let called = match tokio::runtime::Handle::try_current() {
        Ok(_) => block_on(probe, deadline),
        // WASI clocks wait on Tokio timers: outside a runtime, a private one
        // drives them (a `sleep` in `schema()` panicked there).
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| refuse(format!("starting a timer for it: {e}")))?
            .block_on(async { tokio::time::timeout_at(deadline.into(), probe).await.ok() }),
    };
    let Some(called) = called else {
        return Err(refuse(format!(
            "took longer than its time limit ({} ms)",
            limits.timeout.as_millis()
        )));
    };
    let schema = called.map_err(|e| {
        let error = crate::classify::trap(&e, store.data(), &limits);
        refuse(format!("failed: {error}"))
    })?;
    object_schema(&schema).map_err(refuse)
}

/// `Ok` when `schema` is a JSON object; otherwise what it is instead.
fn object_schema(schema: &str) -> Result<(), String> {
    match serde_json::from_str::<serde_json::Value>(schema) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err("returned JSON that is not an object".to_owned()),
        Err(e) => Err(format!("returned text that is not JSON ({e})")),
    }
}

/// Run `future` on this thread until it completes or `deadline` passes
/// (`None`: it is dropped unfinished). Called within a Tokio runtime's
/// context (a blocking-pool thread, or a runtime's own): the future waits
/// only on the guest and on WASI clocks, whose timers that runtime drives;
/// its network is [`DenyAll`]. Where this thread is the one that would
/// drive them, a guest's sleep ends at the deadline.
fn block_on<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::park_timeout(left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_json_object_is_a_schema() {
        assert!(object_schema(r#"{"type":"object"}"#).is_ok());
        assert!(object_schema("[]").unwrap_err().contains("not an object"));
        assert!(object_schema("true").unwrap_err().contains("not an object"));
        assert!(object_schema("{oops").unwrap_err().contains("not JSON"));
    }
}
