//! One call: validate, queue, fresh store and instance, run under limits, classify.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use warden_core::Origin;
use warden_core::lane::ProgressSink;
use warden_core::net::{CallNetwork, DenyAll};
use wasmtime::{Store, UpdateDeadline};

use crate::admission;
use crate::bindings::v0_1::exports::warden::tool::tool as wit_0_1;
use crate::bindings::v0_2::exports::warden::tool::tool as wit;
use crate::classify;
use crate::compat::{self, ComponentWorld};
use crate::component::{InstalledComponent, Prepared, Ready};
use crate::config::LimitOverrides;
use crate::error::RuntimeError;
use crate::long_lane::{Handoff, LONG_CALL_TURN_TICKS};
use crate::outcome::{CallOutcome, InputError, Unavailable, Usage};
use crate::slices::SliceClock;
use crate::state::CallState;

/// Extra time past the deadline before the host-side backstop fires (the
/// epoch interrupt normally stops the guest first).
const BACKSTOP: Duration = Duration::from_millis(100);

/// How long a `warden:tool@0.2.0` guest runs on once its call is cancelled
/// (it sees `call.cancelled()`, and each `http.send` fails with
/// `cancelled`) before its instance is dropped. Guests of the other
/// worlds cannot see cancellation and are dropped at once.
pub const CANCEL_GRACE: Duration = Duration::from_millis(500);

/// A structured failure `execute` returned, in the world of the component.
enum Failed {
    Warden(wit::Failure),
    NearAgent(compat::bindings::exports::near::agent::tool::GuestFailure),
}

/// One invocation, as the host (not the model) describes it.
#[derive(Clone)]
pub struct CallRequest {
    /// The capability to run, from the authorized invocation.
    pub capability_id: String,
    /// The model's input as JSON text.
    pub input_json: String,
    /// Unique id of this invocation.
    pub call_id: String,
    /// Who started the call.
    pub origin: Origin,
    /// Per-call limit requests, bounded by the host maxima.
    pub limits: Option<LimitOverrides>,
    /// The network and credential services of this call.
    pub network: Arc<dyn CallNetwork>,
    /// The caller's [`InstalledComponent::check_input`] accepted exactly
    /// this `input_json` for this `capability_id`, on the component called
    /// (or a clone of it), so the call skips its own check: no size limit,
    /// JSON syntax or schema check, and the guest receives `input_json` as
    /// it is. Nothing verifies the claim: leave it `false` unless so.
    pub input_checked: bool,
    /// Where a `warden:tool@0.2.0` guest's progress reports go.
    pub progress: Option<ProgressSink>,
    /// The caller's cancellation: once cancelled, the call ends
    /// [`RuntimeError::Cancelled`] (see [`CANCEL_GRACE`]).
    pub cancel: Option<CancellationToken>,
}

impl std::fmt::Debug for CallRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallRequest")
            .field("capability_id", &self.capability_id)
            .field("call_id", &self.call_id)
            .field("origin", &self.origin)
            .field("limits", &self.limits)
            .field("input_checked", &self.input_checked)
            .finish_non_exhaustive()
    }
}

impl CallRequest {
    /// A call of `capability_id` with `input_json`, from the agent loop, with
    /// no network ([`DenyAll`]) and the capability's limits.
    pub fn new(capability_id: impl Into<String>, input_json: impl Into<String>) -> Self {
        CallRequest {
            capability_id: capability_id.into(),
            input_json: input_json.into(),
            call_id: "call".into(),
            origin: Origin::LoopRun,
            limits: None,
            network: Arc::new(DenyAll),
            input_checked: false,
            progress: None,
            cancel: None,
        }
    }

    /// Pass a `warden:tool@0.2.0` guest's progress reports to `sink`.
    pub fn reporting(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// End the call when `token` is cancelled.
    pub fn cancelled_by(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Set the call id.
    pub fn call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = call_id.into();
        self
    }

    /// Set the origin.
    pub fn origin(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    /// Set per-call limit requests.
    pub fn limits(mut self, limits: LimitOverrides) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Set the network service.
    pub fn network(mut self, network: Arc<dyn CallNetwork>) -> Self {
        self.network = network;
        self
    }

    /// Say whether [`InstalledComponent::check_input`] already accepted this
    /// input for this capability of the component called (see
    /// [`CallRequest::input_checked`]).
    pub fn input_checked(mut self, checked: bool) -> Self {
        self.input_checked = checked;
        self
    }
}

impl InstalledComponent {
    /// Run one call in a fresh instance. Never panics on guest behaviour:
    /// every failure is a [`RuntimeError`] in the outcome, with usage.
    ///
    /// Must run inside a Tokio runtime with the time driver enabled.
    pub async fn call(&self, request: CallRequest) -> CallOutcome {
        let queued = Instant::now();
        let outcome = self.call_inner(request, queued).await;
        let result = match &outcome.result {
            Ok(_) => "ok",
            Err(e) => e.code().as_str(),
        };
        tracing::debug!(
            component = %self.inner.name,
            result,
            fuel = outcome.usage.fuel_consumed,
            wall_us = outcome.usage.wall_time.as_micros() as u64,
            "call finished"
        );
        outcome
    }

    /// Check `input_json` against the capability's input schema (and the
    /// host's size limit) without running anything: a host checks input
    /// before asking a person to approve a call. [`Self::call`] checks again
    /// unless the request says this check passed
    /// ([`CallRequest::input_checked`]).
    pub fn check_input(&self, capability_id: &str, input_json: &str) -> Result<(), RuntimeError> {
        let capability = self.inner.capabilities.get(capability_id).ok_or_else(|| {
            RuntimeError::UnknownCapability {
                capability_id: capability_id.to_owned(),
            }
        })?;
        check_input(
            input_json,
            capability,
            self.inner.shared.config.max_input_bytes,
        )
    }

    async fn call_inner(&self, request: CallRequest, queued: Instant) -> CallOutcome {
        let inner = &self.inner;
        let config = &inner.shared.config;
        let Some(capability) = inner.capabilities.get(&request.capability_id) else {
            let error = RuntimeError::UnknownCapability {
                capability_id: request.capability_id,
            };
            return CallOutcome::refused(error, Usage::default());
        };
        let limits = match &request.limits {
            Some(overrides) => capability.limits.with_overrides(overrides, &config.maxima),
            None => capability.limits,
        };
        if !request.input_checked
            && let Err(error) = check_input(&request.input_json, capability, config.max_input_bytes)
        {
            return CallOutcome::refused(error, Usage::default());
        }
        // A lazily installed component compiles at its first call (the
        // wait counts as queue time); a failure to compile fails the call.
        // The call keeps the code it starts on (baseline code stays valid for
        // it when the optimized code replaces it meanwhile).
        let ready = match self.ready_async(true).await {
            Ok(ready) => ready,
            Err(error) => {
                let usage = Usage {
                    queue_time: queued.elapsed(),
                    ..Usage::default()
                };
                return CallOutcome::refused(error, usage);
            }
        };

        let shared = &inner.shared;
        let admitted = admission::admit(
            &shared.slots,
            &shared.memory,
            limits.memory_bytes,
            config.queue_timeout,
        )
        .await;
        let queue_time = queued.elapsed();
        let admission = match admitted {
            Ok(admission) => admission,
            Err(error) => {
                let usage = Usage {
                    queue_time,
                    ..Usage::default()
                };
                return CallOutcome::refused(error, usage);
            }
        };

        let start = Instant::now();
        let deadline = start + limits.timeout;
        let mut state = CallState::new(
            request.network,
            limits,
            deadline,
            request.call_id.clone(),
            request.capability_id.clone(),
        );
        // Only a 0.2.0 guest can see progress and cancellation.
        let sees_cancel = inner.world == ComponentWorld::Warden;
        if sees_cancel {
            state.progress.sink = request.progress;
            state.cancel = request.cancel.clone();
        }
        let mut store = Store::new(&ready.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_hostcall_fuel(crate::limits::hostcall_fuel(limits.max_output_bytes));
        if config.fuel_metering
            && let Err(e) = store.set_fuel(limits.fuel)
        {
            let error = RuntimeError::Internal {
                reason: format!("setting fuel: {e}"),
            };
            return CallOutcome::refused(error, Usage::default());
        }
        // The epoch advances while this guard lives (an idle host's ticker sleeps).
        let busy = shared.ticker.busy();
        store.set_epoch_deadline(1);
        // Each tick the guest yields to the executor; after a few slices of
        // CPU it is a long call and moves to the long-call lane at its next
        // yield.
        let clock = SliceClock::new(shared.ticker.clone(), config.epoch_tick);
        let ticks = clock.clone();
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                return Ok(UpdateDeadline::Interrupt);
            }
            if ticks.tick() {
                // Long calls take longer turns: fewer switches among them.
                return Ok(UpdateDeadline::Yield(LONG_CALL_TURN_TICKS));
            }
            Ok(UpdateDeadline::Yield(1))
        });
        let wit_request = wit::Request {
            capability_id: request.capability_id,
            input: request.input_json,
            context: wit::CallContext {
                call_id: request.call_id,
                origin: request.origin.as_str().replace('_', "-"),
            },
        };

        // The future owns the store (and gives it back), so it can move to
        // the long-call lane; the backstop timeout travels with it, and so
        // do the call's admission and the ticker's guard: a moved call
        // dropped by its caller ends on the lane at its next yield, and
        // holds its slot and memory, and the epoch advances, until then.
        let held = (admission, busy);
        let run = async move {
            let timeout = limits.timeout + BACKSTOP;
            let ran = tokio::time::timeout(timeout, execute(&ready, &mut store, &wit_request));
            let ran = ran.await;
            (store, ran, held)
        };
        let handoff = Handoff::new(run, clock, shared.long_lane.clone());
        let (handed, cancelled) =
            until_cancelled(handoff, request.cancel.as_ref(), sees_cancel).await;
        let Some((store, ran, _held)) = handed else {
            let error = if cancelled {
                RuntimeError::Cancelled
            } else {
                RuntimeError::HostUnavailable {
                    reason: Unavailable::ShuttingDown,
                }
            };
            let usage = Usage {
                queue_time,
                wall_time: start.elapsed(),
                ..Usage::default()
            };
            return CallOutcome::refused(error, usage);
        };

        let fuel_left = if config.fuel_metering {
            store.get_fuel().unwrap_or(0)
        } else {
            limits.fuel
        };
        let wall_time = start.elapsed();
        let mut state = store.into_data();
        state.drain_stdio(true);
        let mut content = Vec::new();
        let result = match ran {
            _ if cancelled => Err(RuntimeError::Cancelled),
            Err(_elapsed) => Err(RuntimeError::Timeout {
                limit: limits.timeout,
            }),
            Ok(Err((instantiating, e))) => Err(
                if instantiating
                    && !state.limiter.exceeded()
                    && e.downcast_ref::<wasmtime::Trap>().is_none()
                {
                    tracing::warn!(component = %inner.name, error = %format!("{e:#}"), "instantiation failed");
                    RuntimeError::HostUnavailable {
                        reason: Unavailable::Resources,
                    }
                } else {
                    classify::trap(&e, &state, &limits)
                },
            ),
            Ok(Ok(Ok(output))) => {
                match classify::returned(
                    output,
                    capability,
                    &limits,
                    deadline,
                    state.network.as_ref(),
                )
                .await
                {
                    Ok((value, blocks)) => {
                        content = blocks;
                        Ok(value)
                    }
                    Err(error) => Err(error),
                }
            }
            Ok(Ok(Err(Failed::Warden(failure)))) => Err(classify::failure(failure, &state)),
            Ok(Ok(Err(Failed::NearAgent(failure)))) => {
                Err(compat::classify::failure(failure, &state))
            }
        };
        let usage = Usage {
            fuel_consumed: limits.fuel.saturating_sub(fuel_left),
            peak_memory_bytes: state.limiter.peak(),
            wall_time,
            queue_time,
            http_requests: state.http.requests,
            http_bytes_sent: state.http.bytes_sent,
            http_bytes_received: state.http.bytes_received,
            log_entries_dropped: state.logs.dropped,
        };
        CallOutcome {
            result,
            content,
            usage,
            logs: state.logs.entries,
        }
    }
}

/// Await the call `handed` over to the executor; when `cancel` fires first,
/// give a guest that `sees_cancel` [`CANCEL_GRACE`] to return, and drop it
/// otherwise. The `bool` says whether the call was cancelled.
async fn until_cancelled<T>(
    handed: impl Future<Output = Option<T>>,
    cancel: Option<&CancellationToken>,
    sees_cancel: bool,
) -> (Option<T>, bool) {
    let Some(cancel) = cancel else {
        return (handed.await, false);
    };
    let mut handed = std::pin::pin!(handed);
    tokio::select! {
        biased;
        // Cancelled while finishing (a guest may see it and return at once).
        done = &mut handed => (done, cancel.is_cancelled()),
        () = cancel.cancelled() => {
            if !sees_cancel {
                return (None, true);
            }
            (tokio::time::timeout(CANCEL_GRACE, handed).await.ok().flatten(), true)
        }
    }
}

/// What `execute` returned: the output (0.1.0 and `near:agent` outputs as
/// structured output without content) or the guest's failure.
type Returned = Result<wit::Output, Failed>;

/// Instantiate the component and run `execute`; the `bool` of an error says
/// whether it came from instantiating.
async fn execute(
    ready: &Ready,
    store: &mut Store<CallState>,
    request: &wit::Request,
) -> Result<Returned, (bool, wasmtime::Error)> {
    match &ready.pre {
        Prepared::NearAgent(pre) => {
            let (id, input) = (&request.capability_id, &request.input);
            let executed = compat::call::execute(pre, &mut *store, id, input).await;
            executed.map(|r| r.map(structured_only).map_err(Failed::NearAgent))
        }
        Prepared::Warden01(pre) => {
            let tool = pre
                .instantiate_async(&mut *store)
                .await
                .map_err(|e| (true, e))?;
            let request = wit_0_1::Request {
                capability_id: request.capability_id.clone(),
                input: request.input.clone(),
                context: wit_0_1::CallContext {
                    call_id: request.context.call_id.clone(),
                    origin: request.context.origin.clone(),
                },
            };
            tool.warden_tool_tool()
                .call_execute(&mut *store, &request)
                .await
                .map(|r| {
                    r.map(structured_only)
                        .map_err(|f| Failed::Warden(failure_0_1(f)))
                })
                .map_err(|e| (false, e))
        }
        Prepared::Warden(pre) => {
            let tool = pre
                .instantiate_async(&mut *store)
                .await
                .map_err(|e| (true, e))?;
            tool.warden_tool_tool()
                .call_execute(&mut *store, request)
                .await
                .map(|r| r.map_err(Failed::Warden))
                .map_err(|e| (false, e))
        }
    }
}

/// A JSON-only world's output.
fn structured_only(text: String) -> wit::Output {
    wit::Output {
        structured: Some(text),
        content: Vec::new(),
    }
}

/// A `warden:tool@0.1.0` failure, in the words of 0.2.0 (the same record).
fn failure_0_1(failure: wit_0_1::Failure) -> wit::Failure {
    use wit::FailureKind as Kind;
    use wit_0_1::FailureKind as Kind01;
    wit::Failure {
        kind: match failure.kind {
            Kind01::Input => Kind::Input,
            Kind01::AuthRequired => Kind::AuthRequired,
            Kind01::NetworkDenied => Kind::NetworkDenied,
            Kind01::OutputTooLarge => Kind::OutputTooLarge,
            Kind01::Client => Kind::Client,
            Kind01::OperationFailed => Kind::OperationFailed,
            Kind01::Executor => Kind::Executor,
        },
        code: failure.code,
        message: failure.message,
    }
}

/// Check the input's size, JSON syntax and schema before any guest code runs.
fn check_input(
    input: &str,
    capability: &crate::component::Capability,
    max_bytes: usize,
) -> Result<(), RuntimeError> {
    let refuse = |errors: Vec<InputError>, omitted| RuntimeError::InvalidInput { errors, omitted };
    if input.len() > max_bytes {
        let error = InputError {
            pointer: String::new(),
            message: format!(
                "the input is {} bytes; the limit is {max_bytes}",
                input.len()
            ),
        };
        return Err(refuse(vec![error], 0));
    }
    let value = warden_core::schema::parse_json(input).map_err(|e| refuse(vec![e], 0))?;
    if let Some(schema) = &capability.input {
        schema
            .check(&value)
            .map_err(|refused| refuse(refused.errors, refused.omitted))?;
    }
    Ok(())
}
