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
    let called = block_on(async {
        let tool = pre.instantiate_async(&mut store).await?;
        let tool = tool.near_agent_tool();
        tool.call_description(&mut store).await?;
        tool.call_schema(&mut store).await
    });
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

/// Run `future` to completion on this thread. The probe's future only
/// waits on the guest (no timers, no sockets: its network is [`DenyAll`]
/// and `http-request` refuses outside the async runtime), so parking the
/// thread between polls is enough, inside or outside a Tokio runtime.
fn block_on<F: Future>(future: F) -> F::Output {
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
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
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
