//! `cargo xtask bench-mcp`: the MCP round trip of `warden serve` over stdio,
//! driven by a plain JSON-RPC client (no SDK in the figure).
//!
//! Reports p50/p99 latency and calls/s for N sequential `echo` calls and N
//! calls with K in flight, server CPU per call (from `/proc/<pid>/stat`),
//! spawn-to-`tools/list` time with a warm cache, peak RSS (`VmHWM`), and
//! what the server costs while idle (CPU and thread wake-ups per second,
//! summed over its threads, after the calls).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::workspace;

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
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
}

impl Server {
    fn spawn(binary: &Path, data_dir: &Path) -> Result<Server> {
        let mut child = Command::new(binary)
            .args(["serve", "--data-dir"])
            .arg(data_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
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
        Ok(Server {
            child,
            stdin,
            lines,
            next_id: 1,
        })
    }

    fn send(&mut self, method: &str, params: Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        writeln!(self.stdin, "{message}")?;
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
    fn response(&self) -> Result<Value> {
        loop {
            let value = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .context("no answer from warden serve")?;
            if value.get("id").is_some() {
                if let Some(error) = value.get("error") {
                    bail!("JSON-RPC error: {error}");
                }
                return Ok(value);
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.send(method, params)?;
        self.response()
    }

    fn initialize(&mut self) -> Result<()> {
        self.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" } }),
        )?;
        self.notify("notifications/initialized")
    }

    fn cpu(&self) -> Result<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("stat format")?
            .1
            .split_whitespace()
            .collect();
        let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
        Ok(Duration::from_secs_f64(ticks as f64 / 100.0))
    }

    /// Context switches of all the server's threads so far: each is a
    /// thread going to sleep or being woken.
    fn switches(&self) -> Result<u64> {
        let mut total = 0;
        for task in std::fs::read_dir(format!("/proc/{}/task", self.child.id()))? {
            let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else {
                continue; // the thread ended meanwhile
            };
            for line in status.lines() {
                if let Some(count) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    total += count.trim().parse::<u64>()?;
                }
            }
        }
        Ok(total)
    }

    fn peak_rss_kib(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let line = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .context("VmHWM")?;
        Ok(line
            .split_whitespace()
            .nth(1)
            .context("VmHWM value")?
            .parse()?)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn echo_call(i: usize) -> Value {
    json!({ "name": "echo_echo", "arguments": { "text": format!("hello {i}"), "transform": "upper" } })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
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
    let (cpu, switches) = (server.cpu()?, server.switches()?);
    std::thread::sleep(period);
    let cpu = server.cpu()? - cpu;
    let switches = server.switches()? - switches;
    let secs = period.as_secs_f64();
    println!(
        "idle over {secs:.0} s: {:.2} ms CPU/s, {:.1} wake-ups/s (context switches of all threads)",
        cpu.as_secs_f64() * 1e3 / secs,
        switches as f64 / secs,
    );
    Ok(())
}

fn check_echo(answer: &Value) -> Result<()> {
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
    let binary = match &args.binary {
        Some(path) => path.clone(),
        None => {
            let status = workspace::cargo()
                .args(["build", "--release", "-p", "warden"])
                .status()?;
            if !status.success() {
                bail!("building warden failed");
            }
            workspace::root().join("target/release/warden")
        }
    };
    let data_dir = std::env::temp_dir().join(format!("warden-bench-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&data_dir)?;
    // First start fills the compiled-component cache; the measured start is warm.
    {
        let mut cold = Server::spawn(&binary, &data_dir)?;
        cold.initialize()?;
        cold.request("tools/list", json!({}))?;
    }
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
