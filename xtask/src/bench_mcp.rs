//! `cargo xtask bench-mcp`: the MCP round trip of `warden serve` over stdio,
//! driven by a plain JSON-RPC client (no SDK in the figure).
//!
//! Reports p50/p99 latency and calls/s for N sequential `echo` calls and N
//! calls with K in flight, server CPU per call (from `/proc/<pid>/stat`),
//! spawn-to-`tools/list` time with a warm cache, peak RSS (`VmHWM`), and
//! what the server costs while idle (CPU and thread wake-ups per second,
//! summed over its threads, after the calls). `--cold`, `--fairness` and
//! `--clients` measure a cold start, a cheap call beside CPU-bound ones, and
//! the per-call CPU with three clients, each against its baseline in the same
//! run (see the modules).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::workspace;

mod clients;
mod cold;
mod fairness;
mod wassette;

/// Options of `bench-mcp`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Calls per phase.
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Calls in flight in the concurrent phase.
    #[arg(long, default_value_t = 8)]
    inflight: usize,
    /// Seconds the idle server is watched after the calls (0: skip).
    #[arg(long, default_value_t = 5)]
    idle_secs: u64,
    /// Use this warden binary instead of building `target/release/warden`.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// Cold start (empty compile cache) against warm, alternating runs.
    #[arg(long)]
    cold: bool,
    /// A cheap call's latency while CPU-bound calls run, with the long-call
    /// lane and without it (`serve --long-call-threads 0`), alternating runs.
    #[arg(long)]
    fairness: bool,
    /// Server CPU per sequential call with three clients (the channel client
    /// above, the same writing whole lines, a plain line-buffered one),
    /// alternating runs.
    #[arg(long)]
    clients: bool,
    /// With `--clients`: also measure this warden binary, run by run beside
    /// the one measured, and print the ratios.
    #[arg(long, requires = "clients")]
    baseline: Option<PathBuf>,
    /// With `--cold`: also start this Wassette executable (`wassette run`)
    /// cold and warm, alternating with Warden's runs, on an echo component
    /// doing the same work (built from `xtask/bench/wassette-echo`).
    #[arg(long, requires = "cold")]
    wassette: Option<PathBuf>,
    /// Runs per configuration in `--cold`, `--fairness` and `--clients`.
    #[arg(long, default_value_t = 8)]
    runs: usize,
}

/// Start `warden serve` over stdio on `data_dir` with piped stdin and stdout.
pub(crate) fn spawn_serve(binary: &Path, data_dir: &Path, extra: &[&str]) -> Result<Child> {
    let mut serve = Command::new(binary);
    serve
        .args(["serve", "--data-dir"])
        .arg(data_dir)
        .args(extra)
        // Offline, the bundled hosted-MCP package cannot be listed: keep its
        // warnings out of the figures (set RUST_LOG to see them).
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "off".into()),
        );
    spawn_piped(serve)
}

/// Start `server` with piped stdin and stdout (stderr passes through).
pub(crate) fn spawn_piped(mut server: Command) -> Result<Child> {
    server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", server.get_program().to_string_lossy()))
}

pub(crate) struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
    /// Write each request with one `write(2)` (as MCP SDKs do) instead of
    /// one per JSON token.
    whole_lines: bool,
}

impl Server {
    pub(crate) fn spawn(binary: &Path, data_dir: &Path) -> Result<Server> {
        Server::spawn_with(binary, data_dir, &[])
    }

    pub(crate) fn spawn_with(binary: &Path, data_dir: &Path, extra: &[&str]) -> Result<Server> {
        Ok(Server::over(spawn_serve(binary, data_dir, extra)?))
    }

    /// A client of `child`, a server spawned with piped stdin and stdout.
    pub(crate) fn over(mut child: Child) -> Server {
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
            next_id: 1,
            whole_lines: false,
        }
    }

    /// Requests from now on are written with one `write(2)` each.
    pub(crate) fn writing_whole_lines(mut self) -> Self {
        self.whole_lines = true;
        self
    }

    pub(crate) fn send(&mut self, method: &str, params: Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if self.whole_lines {
            let mut line = serde_json::to_vec(&message)?;
            line.push(b'\n');
            self.stdin.write_all(&line)?;
        } else {
            // Straight into the unbuffered pipe: a `write(2)` per JSON token.
            writeln!(self.stdin, "{message}")?;
        }
        Ok(id)
    }

    fn notify(&mut self, method: &str) -> Result<()> {
        writeln!(
            self.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "method": method })
        )?;
        Ok(())
    }

    /// The next response (notifications are skipped).
    pub(crate) fn response(&self) -> Result<Value> {
        self.response_within(Duration::from_secs(30))?
            .context("no answer from warden serve")
    }

    /// The next response, or `None` after `wait`.
    pub(crate) fn response_within(&self, wait: Duration) -> Result<Option<Value>> {
        loop {
            let value = match self.lines.recv_timeout(wait) {
                Ok(value) => value,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return Ok(None),
                Err(_) => bail!("warden serve closed its output"),
            };
            if value.get("id").is_some() {
                if let Some(error) = value.get("error") {
                    bail!("JSON-RPC error: {error}");
                }
                return Ok(Some(value));
            }
        }
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.send(method, params)?;
        self.response()
    }

    pub(crate) fn initialize(&mut self) -> Result<()> {
        self.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" } }),
        )?;
        self.notify("notifications/initialized")
    }

    /// CPU time of the server so far (see [`thread_cpu`]).
    pub(crate) fn cpu(&self) -> Result<Duration> {
        thread_cpu(self.child.id())
    }

    /// Peak resident set (`VmHWM`): the process's own memory and the pages
    /// of files it maps (mostly the binary's code) that it touched.
    pub(crate) fn peak_rss_kib(&self) -> Result<u64> {
        self.status_kib("VmHWM")
    }

    /// Resident anonymous memory now (`RssAnon`): what the process itself
    /// allocated, without the binary's shared, reclaimable code pages.
    pub(crate) fn private_rss_kib(&self) -> Result<u64> {
        self.status_kib("RssAnon")
    }

    fn status_kib(&self, field: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let line = status
            .lines()
            .find(|l| {
                l.strip_prefix(field)
                    .is_some_and(|rest| rest.starts_with(':'))
            })
            .with_context(|| format!("{field} in /proc/<pid>/status"))?;
        Ok(line
            .split_whitespace()
            .nth(1)
            .with_context(|| format!("{field} value"))?
            .parse()?)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn echo_call(i: usize) -> Value {
    json!({ "name": "echo_echo", "arguments": { "text": format!("hello {i}"), "transform": "upper" } })
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

struct Phase {
    latencies: Vec<Duration>,
    elapsed: Duration,
    cpu: Duration,
}

impl Phase {
    fn print(&self, name: &str) {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let n = sorted.len() as f64;
        println!(
            "| {name} | {} | {:.3} ms | {:.3} ms | {:.0} | {:.1} µs |",
            sorted.len(),
            percentile(&sorted, 0.5).as_secs_f64() * 1e3,
            percentile(&sorted, 0.99).as_secs_f64() * 1e3,
            n / self.elapsed.as_secs_f64(),
            self.cpu.as_secs_f64() * 1e6 / n,
        );
    }
}

fn sequential(server: &mut Server, calls: usize) -> Result<Phase> {
    let cpu = server.cpu()?;
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..calls {
        let sent = Instant::now();
        let answer = server.request("tools/call", echo_call(i))?;
        latencies.push(sent.elapsed());
        check_echo(&answer)?;
    }
    Ok(Phase {
        latencies,
        elapsed: start.elapsed(),
        cpu: server.cpu()? - cpu,
    })
}

fn concurrent(server: &mut Server, calls: usize, inflight: usize) -> Result<Phase> {
    let cpu = server.cpu()?;
    let start = Instant::now();
    let mut sent_at = HashMap::new();
    let mut latencies = Vec::with_capacity(calls);
    let mut next = 0;
    while latencies.len() < calls {
        while next < calls && sent_at.len() < inflight {
            let id = server.send("tools/call", echo_call(next))?;
            sent_at.insert(id, Instant::now());
            next += 1;
        }
        let answer = server.response()?;
        let id = answer["id"].as_u64().context("response id")?;
        latencies.push(
            sent_at
                .remove(&id)
                .context("unknown response id")?
                .elapsed(),
        );
        check_echo(&answer)?;
    }
    Ok(Phase {
        latencies,
        elapsed: start.elapsed(),
        cpu: server.cpu()? - cpu,
    })
}

/// Watch the server with nothing to do for `period`.
fn idle(server: &Server, period: Duration) -> Result<()> {
    // Let the last call's tail (output, logging) settle first.
    std::thread::sleep(Duration::from_millis(500));
    let pid = server.child.id();
    let before = per_thread(pid)?;
    std::thread::sleep(period);
    // Thread by thread: an idle blocking-pool thread may exit meanwhile
    // (what it used in the window is lost, a few microseconds at most).
    let (mut cpu_ns, mut switches) = (0, 0);
    for (tid, now) in per_thread(pid)? {
        let then = before.get(&tid).copied().unwrap_or_default();
        cpu_ns += now.cpu_ns.saturating_sub(then.cpu_ns);
        switches += now.switches.saturating_sub(then.switches);
    }
    let secs = period.as_secs_f64();
    println!(
        "idle over {secs:.0} s: {:.2} ms CPU/s, {:.1} wake-ups/s (context switches of all threads)",
        cpu_ns as f64 / 1e6 / secs,
        switches as f64 / secs,
    );
    Ok(())
}

pub(crate) fn check_echo(answer: &Value) -> Result<()> {
    if answer["result"]["isError"] == json!(true)
        || answer["result"]["structuredContent"]["text"]
            .as_str()
            .is_none()
    {
        bail!("echo call failed: {answer}");
    }
    Ok(())
}

/// Run the benchmark and print a Markdown table.
pub(crate) fn run(args: &Args) -> Result<()> {
    // What is stale, as `test` and `demo` do: the bundled packages the
    // release build embeds (a fresh clone has none built, and a binary built
    // without them serves no `echo`) and the fixture `--fairness` installs.
    crate::bundle::run(&crate::bundle::Args::default())?;
    let binary = match &args.binary {
        Some(path) => path.clone(),
        None => release_binary("warden")?,
    };
    if args.cold || args.fairness || args.clients {
        if args.cold {
            cold::run(&binary, args.wassette.as_deref(), args.runs)?;
        }
        if args.fairness {
            fairness::run(&binary, args.runs)?;
        }
        if args.clients {
            clients::run(&binary, args.baseline.as_deref(), args.runs, args.calls)?;
        }
        return Ok(());
    }
    warm(&binary, args)
}

/// Build workspace package `package` in the release profile and return its
/// binary (of the same name): what the benchmark measures is built as users
/// run it, never in the unoptimised dev profile.
pub(crate) fn release_binary(package: &str) -> Result<PathBuf> {
    let status = workspace::cargo()
        .args(["build", "--release", "-p", package])
        .status()?;
    if !status.success() {
        bail!("building {package} in the release profile failed");
    }
    Ok(workspace::root().join("target/release").join(package))
}

/// CPU time of process `pid` so far: the sum over its threads of the
/// nanoseconds the scheduler ran them (`/proc/<pid>/task/*/schedstat`), not
/// `stat`'s 10 ms ticks, too coarse for a few hundred calls of tens of
/// microseconds each. (Threads that ended are not counted; none end during
/// a measured phase.)
pub(crate) fn thread_cpu(pid: u32) -> Result<Duration> {
    Ok(Duration::from_nanos(
        per_thread(pid)?.values().map(|t| t.cpu_ns).sum(),
    ))
}

/// What one thread has used so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ThreadUse {
    /// Run time, nanoseconds (`schedstat`).
    pub(crate) cpu_ns: u64,
    /// Context switches, voluntary or not (`status`).
    pub(crate) switches: u64,
}

/// What each of process `pid`'s live threads has used so far, by thread id.
pub(crate) fn per_thread(pid: u32) -> Result<HashMap<String, ThreadUse>> {
    let mut threads = HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let task = task?;
        let tid = task.file_name().to_string_lossy().into_owned();
        let (Ok(stat), Ok(status)) = (
            std::fs::read_to_string(task.path().join("schedstat")),
            std::fs::read_to_string(task.path().join("status")),
        ) else {
            continue; // the thread ended meanwhile
        };
        let cpu_ns = stat
            .split_whitespace()
            .next()
            .context("schedstat format")?
            .parse::<u64>()?;
        let switches = switches_in(&status)?;
        threads.insert(tid, ThreadUse { cpu_ns, switches });
    }
    Ok(threads)
}

/// Voluntary and involuntary context switches in a thread's `status`.
fn switches_in(status: &str) -> Result<u64> {
    let mut total = 0;
    for line in status.lines() {
        if let Some(count) = line
            .strip_prefix("voluntary_ctxt_switches:")
            .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
        {
            total += count.trim().parse::<u64>()?;
        }
    }
    Ok(total)
}

/// `read`-family system calls process `pid` made so far (`syscr` of
/// `/proc/<pid>/io`): how many pieces the server read its input in.
pub(crate) fn read_syscalls(pid: u32) -> Result<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
    io.lines()
        .find_map(|line| line.strip_prefix("syscr:"))
        .context("syscr in /proc/<pid>/io")?
        .trim()
        .parse()
        .context("syscr value")
}

/// A fresh, empty data directory under the system's temp directory.
pub(crate) fn temp_data_dir(name: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("warden-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Median of `values`.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The warm figures: latency, throughput and CPU per call, RSS, idle cost.
fn warm(binary: &Path, args: &Args) -> Result<()> {
    let binary = binary.to_owned();
    let data_dir = temp_data_dir("mcp")?;
    // First start fills the compiled-component cache; the measured start is warm.
    cold::fill_cache(&binary, &data_dir)?;
    let spawned = Instant::now();
    let mut server = Server::spawn(&binary, &data_dir)?;
    server.initialize()?;
    let tools = server.request("tools/list", json!({}))?;
    let to_list = spawned.elapsed();
    let count = tools["result"]["tools"].as_array().map_or(0, Vec::len);
    for i in 0..50 {
        check_echo(&server.request("tools/call", echo_call(i))?)?;
    }
    println!(
        "spawn to tools/list (warm cache): {:.1} ms ({count} tools)",
        to_list.as_secs_f64() * 1e3
    );
    println!();
    println!("| phase | calls | p50 | p99 | calls/s | server CPU/call |");
    println!("|---|---|---|---|---|---|");
    sequential(&mut server, args.calls)?.print("sequential");
    concurrent(&mut server, args.calls, args.inflight)?
        .print(&format!("{} in flight", args.inflight));
    println!();
    println!(
        "peak RSS: {:.1} MiB",
        server.peak_rss_kib()? as f64 / 1024.0
    );
    if args.idle_secs > 0 {
        idle(&server, Duration::from_secs(args.idle_secs))?;
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(())
}
