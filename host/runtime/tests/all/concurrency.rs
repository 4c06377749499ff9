//! Many calls at once: CPU-bound guests cannot starve the executor; queuing is FIFO and bounded.
//!
//! The queue tests hold the execution slot or the memory budget with a
//! call waiting in a [`Gate`] and wait for what has to have happened,
//! never for a length of time: a loaded machine changes how long they
//! take, not what they see.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use warden_core::net::{
    BoxFuture, CallNetwork, CredentialError, GuestRequest, GuestResponse, HttpError,
};
use warden_runtime::{
    CallOutcome, CallRequest, LimitOverrides, RuntimeConfig, RuntimeError, Unavailable,
};

use crate::support::{Host, config};

/// Rounds of the `burn` operation: tens of milliseconds of CPU each.
const ROUNDS: u64 = 20_000_000;

fn burn(rounds: u64) -> CallRequest {
    CallRequest::new("hostile.burn", format!(r#"{{"rounds": {rounds}}}"#))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_returns_while_200_cpu_bound_calls_run() {
    let host = Arc::new(Host::new(RuntimeConfig {
        max_concurrent: 256,
        ..config()
    }));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let (host, done, started) = (host.clone(), done.clone(), started.clone());
        tasks.push(tokio::spawn(async move {
            started.fetch_add(1, Ordering::SeqCst);
            // All 200 share two cores, so each one's wall time is close to the
            // total: give them a deadline far above it (this test is about
            // starvation and ordering, not about deadlines).
            let generous = LimitOverrides {
                timeout_ms: Some(60_000),
                ..LimitOverrides::default()
            };
            let outcome = host.hostile.call(burn(ROUNDS).limits(generous)).await;
            done.fetch_add(1, Ordering::SeqCst);
            outcome
        }));
    }
    while started.load(Ordering::SeqCst) < 200 {
        tokio::task::yield_now().await;
    }
    let probe = host
        .echo
        .call(CallRequest::new("echo.echo", r#"{"text": "probe"}"#))
        .await;
    let finished_before_probe = done.load(Ordering::SeqCst);
    let mut fuel = 0;
    for task in tasks {
        let outcome = task.await.expect("task");
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        fuel = outcome.usage.fuel_consumed;
    }
    assert_eq!(done.load(Ordering::SeqCst), 200);
    assert!(probe.result.is_ok(), "{:?}", probe.result);
    eprintln!(
        "probe: {finished_before_probe} of 200 CPU-bound calls finished first; probe wall {:?}; {fuel} fuel per CPU-bound call",
        probe.usage.wall_time
    );
    assert!(
        finished_before_probe < 200,
        "the probe waited for every CPU-bound call ({finished_before_probe} finished first)"
    );
}

/// A network whose requests wait until the test lets them go. A call that
/// sends one (`hostile.fetch`) holds its execution slot and its memory for
/// as long as the test wants, however loaded the machine: the queue tests
/// below wait for what they need to have happened (a call admitted, a call
/// queued), never for an amount of time.
struct Gate {
    /// Requests that arrived so far.
    entered: AtomicUsize,
    /// Requests waiting in the gate now, and the most there ever were.
    inside: AtomicUsize,
    most_inside: AtomicUsize,
    arrived: tokio::sync::Notify,
    /// One permit lets one request through.
    open: tokio::sync::Semaphore,
}

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate {
            entered: AtomicUsize::new(0),
            inside: AtomicUsize::new(0),
            most_inside: AtomicUsize::new(0),
            arrived: tokio::sync::Notify::new(),
            open: tokio::sync::Semaphore::new(0),
        })
    }

    /// Wait until `n` requests arrived in all.
    async fn entered(&self, n: usize) {
        loop {
            let arrived = self.arrived.notified();
            if self.entered.load(Ordering::SeqCst) >= n {
                return;
            }
            arrived.await;
        }
    }

    /// Let `n` more requests through.
    fn release(&self, n: usize) {
        self.open.add_permits(n);
    }

    /// A `hostile.fetch` whose request waits in this gate (a deadline far
    /// past any test's length, and `memory_bytes` of memory reserved).
    fn fetch(self: &Arc<Self>, memory_bytes: Option<u64>) -> CallRequest {
        let limits = LimitOverrides {
            timeout_ms: Some(120_000),
            memory_bytes,
            ..LimitOverrides::default()
        };
        CallRequest::new("hostile.fetch", "{}")
            .limits(limits)
            .network(self.clone())
    }
}

impl CallNetwork for Gate {
    fn acquire(&self, _handle: &str) -> Result<(), CredentialError> {
        Ok(())
    }

    fn send<'a>(
        &'a self,
        _request: GuestRequest,
        _credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        Box::pin(async move {
            let inside = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_inside.fetch_max(inside, Ordering::SeqCst);
            self.entered.fetch_add(1, Ordering::SeqCst);
            self.arrived.notify_waiters();
            self.open.acquire().await.expect("gate open").forget();
            self.inside.fetch_sub(1, Ordering::SeqCst);
            Ok(crate::support::empty_json_answer())
        })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

/// Take the only execution slot with a call waiting in `gate`; returns once
/// the call holds it.
async fn hold(
    host: &Arc<Host>,
    gate: &Arc<Gate>,
) -> tokio::task::JoinHandle<warden_runtime::CallOutcome> {
    let holder = {
        let (host, request) = (host.clone(), gate.fetch(None));
        tokio::spawn(async move { host.hostile.call(request).await })
    };
    gate.entered(1).await;
    holder
}

/// Poll `call` once: it must be waiting (for admission, in these tests).
async fn poll_once(call: &mut Pin<Box<dyn Future<Output = CallOutcome> + Send>>) {
    let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
    assert!(first.is_pending(), "a call ran while the slot was held");
}

/// Drive `calls` to their ends together; their outcomes in the order they
/// ended, with each one's index.
async fn in_order_of_ending(
    mut calls: Vec<Pin<Box<dyn Future<Output = CallOutcome> + Send>>>,
) -> Vec<(usize, CallOutcome)> {
    let mut ended = Vec::new();
    let mut pending: Vec<usize> = (0..calls.len()).collect();
    std::future::poll_fn(|cx| {
        pending.retain(|&i| match calls[i].as_mut().poll(cx) {
            Poll::Ready(outcome) => {
                ended.push((i, outcome));
                false
            }
            Poll::Pending => true,
        });
        if pending.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    ended
}

/// `call`, which the queue timeout must end while the gate holds what it
/// waits for: a call that waited on would never end, and fails here
/// instead of holding the test.
async fn refused_in_time(call: impl Future<Output = CallOutcome>) -> CallOutcome {
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("still waiting long past the queue timeout")
}

/// Calls waiting for the one execution slot get it in the order they
/// arrived. Each call is polled once, in turn, while another call holds the
/// slot, so each has joined the queue before the next arrives (the first
/// poll of a call that cannot be admitted ends in the queue); then the slot
/// is freed and every call runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_calls_are_served_in_arrival_order() {
    let host = Arc::new(Host::new(RuntimeConfig {
        max_concurrent: 1,
        ..config()
    }));
    let gate = Gate::new();
    let holder = hold(&host, &gate).await;
    let mut calls: Vec<Pin<Box<dyn Future<Output = CallOutcome> + Send>>> = Vec::new();
    for _ in 0..5 {
        let host = host.clone();
        let mut call: Pin<Box<dyn Future<Output = CallOutcome> + Send>> =
            Box::pin(async move { host.hostile("healthy", "{}").await });
        poll_once(&mut call).await;
        calls.push(call);
    }
    gate.release(1);
    let ended = in_order_of_ending(calls).await;
    // One slot: each call ended before the next got it.
    let order: Vec<usize> = ended.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        order,
        [0, 1, 2, 3, 4],
        "calls got the slot out of arrival order"
    );
    for (_, outcome) in &ended {
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    }
    assert!(holder.await.unwrap().result.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_host_refuses_after_the_queue_timeout_and_shutdown_refuses() {
    let host = Arc::new(Host::new(RuntimeConfig {
        max_concurrent: 1,
        queue_timeout: Duration::from_millis(50),
        ..config()
    }));
    let gate = Gate::new();
    let holder = hold(&host, &gate).await;
    let refused = refused_in_time(host.hostile("healthy", "{}")).await;
    assert_eq!(
        refused.result.unwrap_err(),
        RuntimeError::HostUnavailable {
            reason: Unavailable::Overloaded
        }
    );
    assert!(refused.usage.queue_time >= Duration::from_millis(50));
    gate.release(1);
    assert!(holder.await.unwrap().result.is_ok());

    host.runtime.shutdown();
    let after = host.hostile("healthy", "{}").await;
    assert_eq!(
        after.result.unwrap_err(),
        RuntimeError::HostUnavailable {
            reason: Unavailable::ShuttingDown
        }
    );
}

/// Six calls that each reserve a third of the budget: two run at once,
/// never three (counted by the calls themselves, in the gate they wait in,
/// and by the budget's own accounting); one whose limit could never fit is
/// refused at once, without waiting in the queue, while the two hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_calls_never_reserve_more_than_the_memory_budget() {
    const LARGE: u64 = 192 << 20;
    let host = Arc::new(Host::new(RuntimeConfig {
        memory_budget: 2 * LARGE,
        ..config()
    }));
    let gate = Gate::new();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (host, request) = (host.clone(), gate.fetch(Some(LARGE)));
        tasks.push(tokio::spawn(
            async move { host.hostile.call(request).await },
        ));
    }
    gate.entered(2).await;
    assert_eq!(host.runtime.memory().reserved_bytes, 2 * LARGE);

    // A limit that can never fit is refused at once, with both sizes: not
    // after waiting out the queue timeout (which would end in
    // `HostUnavailable`).
    let greedy = LimitOverrides {
        memory_bytes: Some(512 << 20),
        ..LimitOverrides::default()
    };
    let refused = host
        .hostile
        .call(CallRequest::new("hostile.healthy", "{}").limits(greedy))
        .await;
    let error = refused.result.unwrap_err();
    assert_eq!(
        error,
        RuntimeError::MemoryBudgetExceeded {
            limit_bytes: 512 << 20,
            budget_bytes: 2 * LARGE,
        }
    );
    assert_eq!(error.code(), "memory_budget_exceeded");
    assert!(
        refused.usage.queue_time < config().queue_timeout,
        "it waited in the queue"
    );

    gate.release(6);
    for task in tasks {
        let outcome = task.await.unwrap();
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    }
    assert_eq!(gate.entered.load(Ordering::SeqCst), 6);
    assert_eq!(
        gate.most_inside.load(Ordering::SeqCst),
        2,
        "two large calls ran at once, never three"
    );
    let memory = host.runtime.memory();
    assert_eq!(memory.budget_bytes, 2 * LARGE);
    assert_eq!(
        memory.peak_reserved_bytes,
        2 * LARGE,
        "two large calls reserved at once, never three"
    );
    assert_eq!(memory.reserved_bytes, 0, "every reservation was given back");
    host.assert_echo_works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_memory_is_refused_after_the_queue_timeout() {
    let host = Arc::new(Host::new(RuntimeConfig {
        memory_budget: 128 << 20,
        queue_timeout: Duration::from_millis(50),
        ..config()
    }));
    let gate = Gate::new();
    let holder = {
        let (host, request) = (host.clone(), gate.fetch(Some(100 << 20)));
        tokio::spawn(async move { host.hostile.call(request).await })
    };
    gate.entered(1).await;
    let refused = refused_in_time(host.hostile("healthy", "{}")).await;
    assert_eq!(
        refused.result.unwrap_err(),
        RuntimeError::HostUnavailable {
            reason: Unavailable::MemoryBudget
        },
        "a free slot, but 64 MiB more does not fit beside 100 MiB in 128 MiB"
    );
    assert!(refused.usage.queue_time >= Duration::from_millis(50));
    gate.release(1);
    assert!(holder.await.unwrap().result.is_ok());
    host.assert_echo_works().await;
}

/// Start `n` CPU-bound calls of `rounds` each.
fn start_burns(
    host: &Arc<Host>,
    n: usize,
    rounds: u64,
) -> Vec<tokio::task::JoinHandle<warden_runtime::CallOutcome>> {
    (0..n)
        .map(|_| {
            let host = host.clone();
            let generous = LimitOverrides {
                timeout_ms: Some(60_000),
                fuel: Some(u64::MAX),
                ..LimitOverrides::default()
            };
            tokio::spawn(async move { host.hostile.call(burn(rounds).limits(generous)).await })
        })
        .collect()
}

// One thread: without the long-call lane every guest would run here. A
// 10 ms tick: a call moves after two ticks on a CPU, which these burns (ten
// times `ROUNDS`, a second or so of CPU each) always run and an echo call
// never does, however loaded the machine (with the default 1 ms tick, an
// echo call on a loaded machine was seen to move; with `ROUNDS`, a burn
// sharing the thread with three others was seen to end before it moved).
#[tokio::test(flavor = "current_thread")]
async fn cpu_bound_calls_move_to_the_long_call_lane_and_cheap_ones_stay() {
    let host = Arc::new(Host::new(RuntimeConfig {
        long_call_threads: 1,
        epoch_tick: Duration::from_millis(10),
        ..config()
    }));
    let burns = start_burns(&host, 4, 10 * ROUNDS);
    // Each burn yields here at every tick until it has run LONG_CALL_SLICES.
    while host.runtime.stats().long_calls < 4 && !burns.iter().all(|b| b.is_finished()) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        host.runtime.stats().long_calls,
        4,
        "every CPU-bound call moved"
    );
    host.assert_echo_works().await;
    let mut fuel = Vec::new();
    for burn in burns {
        let outcome = burn.await.expect("task");
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        fuel.push(outcome.usage.fuel_consumed);
    }
    assert!(
        fuel.iter().all(|f| *f == fuel[0] && *f > 0),
        "same work, wherever it ran: {fuel:?}"
    );
    assert_eq!(
        host.runtime.stats().long_calls,
        4,
        "the echo call stayed where it started"
    );
}

/// A network that holds the calling thread off the CPU for a few ticks
/// ([`STALL`]) at each credential, as a loaded machine's kernel may preempt
/// it; and at each request too (`send_blocks`), or awaits the answer as long.
struct StallingNetwork {
    send_blocks: bool,
}

impl CallNetwork for StallingNetwork {
    fn acquire(&self, _handle: &str) -> Result<(), CredentialError> {
        std::thread::sleep(STALL);
        Ok(())
    }

    fn send<'a>(
        &'a self,
        _request: GuestRequest,
        _credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        if self.send_blocks {
            std::thread::sleep(STALL);
        }
        Box::pin(async move {
            if !self.send_blocks {
                tokio::time::sleep(STALL).await;
            }
            Ok(crate::support::empty_json_answer())
        })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

/// The epoch tick of [`fetch_stays_where_it_started`]: long beside the
/// CPU the call uses between stalls (a debug build's host code included),
/// so that none of its ticks comes with the CPU busy.
const TICK: Duration = Duration::from_millis(10);
const STALL: Duration = Duration::from_millis(30);

/// `hostile.fetch` (a credential, then a request) over `network`: ticks
/// seen after each, none with the CPU busy.
async fn fetch_stays_where_it_started(network: StallingNetwork) {
    let host = Host::new(RuntimeConfig {
        long_call_threads: 1,
        epoch_tick: TICK,
        ..config()
    });
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.fetch", "{}").network(Arc::new(network)))
        .await;
    assert_eq!(outcome.result.expect("fetched")["status"], 200);
    assert!(outcome.usage.wall_time >= 2 * STALL);
    assert_eq!(host.runtime.stats().long_calls, 0, "not a long call");
}

// Seen failing before a tick needed CPU behind it: the call, off the CPU
// for its every tick, was moved as a CPU-bound one. (Where there is no
// thread CPU clock every tick counts.)
#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn a_call_that_sees_ticks_without_using_the_cpu_stays_where_it_started() {
    fetch_stays_where_it_started(StallingNetwork { send_blocks: true }).await;
}

// Seen failing when a tick counted with the CPU busy since the resumption
// however short: the ticks that passed while the call awaited its answer
// are seen at once when it resumes.
#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn a_call_that_awaits_across_ticks_stays_where_it_started() {
    fetch_stays_where_it_started(StallingNetwork { send_blocks: false }).await;
}

#[tokio::test(flavor = "current_thread")]
async fn without_long_call_threads_every_call_stays_where_it_started() {
    let host = Arc::new(Host::new(RuntimeConfig {
        long_call_threads: 0,
        ..config()
    }));
    for burn in start_burns(&host, 2, ROUNDS) {
        assert!(burn.await.expect("task").result.is_ok());
    }
    assert_eq!(host.runtime.stats().long_calls, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_call_keeps_its_deadline_and_its_usage() {
    let host = Arc::new(Host::new(RuntimeConfig {
        long_call_threads: 1,
        ..config()
    }));
    let outcome = host.spin(300).await;
    assert_eq!(host.runtime.stats().long_calls, 1);
    assert!(
        matches!(outcome.result, Err(RuntimeError::Timeout { .. })),
        "{:?}",
        outcome.result
    );
    assert!(
        outcome.usage.fuel_consumed > 0,
        "usage comes back from the lane"
    );
    host.assert_echo_works().await;
}

/// The `nice` of every thread of this process named `name` (Linux).
#[cfg(target_os = "linux")]
fn niceness_of_threads(name: &str) -> Vec<i64> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc")
        .filter_map(|task| {
            let dir = task.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            if comm.trim() != name {
                return None;
            }
            // Field 19 of stat, counted after the `(comm)` that may hold spaces.
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let after = stat.rsplit_once(')')?.1;
            after.split_whitespace().nth(16)?.parse().ok()
        })
        .collect()
}

// The lane has a thread per core by default and yields the CPU to the
// threads serving calls: seen with every lane thread at the workers'
// priority before they were lowered.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_long_call_lane_runs_below_the_serving_threads() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(RuntimeConfig::default().long_call_threads, cores);
    let host = Arc::new(Host::new(RuntimeConfig {
        long_call_threads: 2,
        ..config()
    }));
    let outcome = host.spin(300).await;
    assert!(outcome.result.is_err(), "timed out on the lane");
    assert_eq!(host.runtime.stats().long_calls, 1);
    // (Thread names are cut to 15 bytes; other tests' lanes may be there too.)
    let lane = niceness_of_threads("warden-long-cal");
    assert!(lane.len() >= 2, "{lane:?}");
    assert!(lane.iter().all(|nice| *nice >= 10), "{lane:?}");
}

/// Drop a spinning call once it moved to the lane, on a host ticking every
/// `tick`, and wait (bounded) until the lane has dropped it.
async fn drop_a_moved_call(tick: Duration) {
    let host = Arc::new(Host::new(RuntimeConfig {
        long_call_threads: 1,
        epoch_tick: tick,
        ..config()
    }));
    // The call's store holds the only other reference to its network.
    let network: Arc<dyn warden_core::net::CallNetwork> = Arc::new(warden_core::net::DenyAll);
    let limits = LimitOverrides {
        timeout_ms: Some(30_000),
        fuel: Some(u64::MAX),
        ..LimitOverrides::default()
    };
    let request = CallRequest::new("hostile.spin", "{}")
        .limits(limits)
        .network(network.clone());
    let call = {
        let host = host.clone();
        tokio::spawn(async move { host.hostile.call(request).await })
    };
    while host.runtime.stats().long_calls < 1 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        Arc::strong_count(&network),
        2,
        "the moved call holds its store"
    );
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    // Still running on the lane until its next yield (a turn of five
    // ticks): while its store is alive it still holds its memory. (Read in
    // that order: the store only ever goes, so seen alive after the memory
    // was seen given back, it was alive then. The lane may well have
    // dropped both already, when its turn ended just after the abort.)
    let reserved = host.runtime.memory().reserved_bytes;
    let running = Arc::strong_count(&network) == 2;
    assert!(reserved > 0 || !running, "given back running");
    // The lane drops the guest's future (and its store) once it is aborted,
    // long before its 30 s deadline.
    let waited = std::time::Instant::now();
    while Arc::strong_count(&network) > 1 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the spin kept running"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Given back as the lane drops it (at once, or by the next check).
    let waited = std::time::Instant::now();
    while host.runtime.memory().reserved_bytes > 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "never given back"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    host.assert_echo_works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_moved_call_stops_it_on_the_lane() {
    drop_a_moved_call(Duration::from_millis(1)).await;
}

// The lane's turn (five ticks) outlasts the ticker's grace after the last
// call: the dropped call's guard on the ticker goes with it to the lane, so
// the ticker runs until the call ends there; and so does its admission, so
// its memory is not given back while it runs (seen given back at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_call_dropped_on_a_slow_tick_still_stops() {
    drop_a_moved_call(Duration::from_millis(20)).await;
}
