//! `bench-mcp --clients`: server CPU per sequential `echo` call with three
//! clients, alternating runs, each in a fresh server process:
//!
//! - **channel**: the client of the other phases — a reader thread parses
//!   each answer and hands it over a channel; requests are written with
//!   `writeln!` straight into the pipe (a `write(2)` per JSON token);
//! - **channel, whole lines**: the same client writing each request with
//!   one `write(2)`, as MCP SDKs do — what the write pattern alone costs;
//! - **line**: a plain line-buffered JSON-RPC client on one thread — one
//!   `write` per request line, answers read with `read_line`.
//!
//! Server CPU is the scheduler's per-thread run time (`schedstat`). Beside
//! it, per call: the server's `read` system calls (`syscr`, the pieces a
//! request arrived in) and its threads' context switches — what a client's
//! write pattern changes in the server's work.
//!
//! With `--baseline <warden>`, each run measures both binaries (in
//! alternating order) and the ratio printed is the median of the runs' own
//! ratios: this machine's speed drifts by a third within minutes, which the
//! medians of two separate invocations do not cancel and neighbouring runs do.
//!
//! Every run also measures the reference server (`xtask/reference-server`,
//! built in the release profile) with each client:
//! the least any MCP server over stdio can spend on the same exchange. What a
//! client's write pattern and the CPU it runs on cost every server shows in
//! its row; Warden's own work per call is the difference, printed per client
//! as the median of the runs' differences.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command};
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::{Server, check_echo, echo_call, median, temp_data_dir};

/// One thread, one write per request, one `read_line` per answer.
struct LineClient {
    child: Child,
    writer: BufWriter<std::process::ChildStdin>,
    reader: BufReader<ChildStdout>,
    next_id: u64,
}

impl LineClient {
    fn over(mut child: Child) -> LineClient {
        let writer = BufWriter::new(child.stdin.take().expect("piped"));
        let reader = BufReader::new(child.stdout.take().expect("piped"));
        LineClient {
            child,
            writer,
            reader,
            next_id: 1,
        }
    }

    fn write_line(&mut self, message: &Value) -> Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.writer.write_all(&line)?;
        self.writer.flush()?;
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        )?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 {
                bail!("warden serve closed its output");
            }
            let value: Value = serde_json::from_str(&line)?;
            if value.get("id").is_some() {
                return Ok(value);
            }
        }
    }
}

impl Drop for LineClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the server spent on a run's calls, per call.
#[derive(Clone, Copy, Debug)]
struct PerCall {
    /// Server CPU, microseconds.
    cpu_us: f64,
    /// `read` system calls: the pieces a request arrived in, plus the
    /// server's own reads (none per echo call beyond its input).
    reads: f64,
    /// Context switches of all the server's threads: wake-ups and sleeps.
    switches: f64,
}

/// Cumulative counters of a server process.
struct Counters {
    cpu: Duration,
    reads: u64,
    switches: u64,
}

impl Counters {
    fn of(pid: u32) -> Result<Counters> {
        let threads = super::per_thread(pid)?;
        Ok(Counters {
            cpu: Duration::from_nanos(threads.values().map(|t| t.cpu_ns).sum()),
            reads: super::read_syscalls(pid)?,
            switches: threads.values().map(|t| t.switches).sum(),
        })
    }

    fn per_call_since(&self, before: &Counters, calls: usize) -> PerCall {
        let calls = calls as f64;
        PerCall {
            cpu_us: (self.cpu - before.cpu).as_secs_f64() * 1e6 / calls,
            reads: (self.reads - before.reads) as f64 / calls,
            switches: (self.switches - before.switches) as f64 / calls,
        }
    }
}

/// What the server spent per call on `calls` sequential calls.
fn channel_run(
    subject: Subject<'_>,
    data_dir: &Path,
    calls: usize,
    whole_lines: bool,
) -> Result<PerCall> {
    let mut server = Server::over(subject.spawn(data_dir)?);
    if whole_lines {
        server = server.writing_whole_lines();
    }
    server.initialize()?;
    for i in 0..50 {
        check_echo(&server.request("tools/call", echo_call(i))?)?;
    }
    let pid = server.child.id();
    let before = Counters::of(pid)?;
    for i in 0..calls {
        check_echo(&server.request("tools/call", echo_call(i))?)?;
    }
    Ok(Counters::of(pid)?.per_call_since(&before, calls))
}

fn line_run(subject: Subject<'_>, data_dir: &Path, calls: usize) -> Result<PerCall> {
    let mut client = LineClient::over(subject.spawn(data_dir)?);
    client.request(
        "initialize",
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "line", "version": "0" } }),
    )?;
    client.write_line(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
    for i in 0..50 {
        check_echo(&client.request("tools/call", echo_call(i))?)?;
    }
    let pid = client.child.id();
    let before = Counters::of(pid)?;
    for i in 0..calls {
        check_echo(&client.request("tools/call", echo_call(i))?)?;
    }
    Ok(Counters::of(pid)?.per_call_since(&before, calls))
}

/// The clients measured, in the order of the table's columns.
#[derive(Clone, Copy)]
enum Client {
    Channel,
    ChannelWholeLines,
    Line,
}

const CLIENTS: [Client; 3] = [Client::Channel, Client::ChannelWholeLines, Client::Line];

/// The tables' client columns, in the order of [`CLIENTS`].
const COLUMNS: &str = "channel client (bench-mcp's) | channel, whole lines | line-buffered client";

impl Client {
    fn run(self, subject: Subject<'_>, data_dir: &Path, calls: usize) -> Result<PerCall> {
        match self {
            Client::Channel => channel_run(subject, data_dir, calls, false),
            Client::ChannelWholeLines => channel_run(subject, data_dir, calls, true),
            Client::Line => line_run(subject, data_dir, calls),
        }
    }
}

/// The server a run measures.
#[derive(Clone, Copy)]
enum Subject<'a> {
    /// `warden serve` of this binary.
    Warden(&'a Path),
    /// The reference server (`bench-reference`) at this path.
    Reference(&'a Path),
}

impl Subject<'_> {
    fn spawn(self, data_dir: &Path) -> Result<Child> {
        match self {
            Subject::Warden(binary) => super::spawn_serve(binary, data_dir, &[]),
            Subject::Reference(binary) => super::spawn_piped(Command::new(binary)),
        }
    }

    fn name(self) -> String {
        match self {
            Subject::Warden(binary) => binary.display().to_string(),
            Subject::Reference(_) => "reference server (no MCP library, no sandbox)".into(),
        }
    }
}

/// Every client against `binary`, against `baseline` when given, and
/// against the reference server: run `i` measures every server once with
/// each client, the servers and the clients in rotating order, so each run's
/// figures were measured side by side.
pub(crate) fn run(binary: &Path, baseline: Option<&Path>, runs: usize, calls: usize) -> Result<()> {
    // Built in release like `warden`: unoptimised, its `serde_json` alone
    // took 25 µs a line.
    let reference = super::release_binary("bench-reference")?;
    let subjects: Vec<Subject<'_>> = std::iter::once(binary)
        .chain(baseline)
        .map(Subject::Warden)
        .chain([Subject::Reference(&reference)])
        .collect();
    let mut data_dirs = Vec::new();
    for (i, subject) in subjects.iter().enumerate() {
        let data_dir = temp_data_dir(&format!("clients-{i}"))?;
        if let Subject::Warden(binary) = subject {
            super::cold::fill_cache(binary, &data_dir)?;
        }
        data_dirs.push(data_dir);
    }
    // figures[subject][client][run]
    let mut figures = vec![vec![Vec::new(); CLIENTS.len()]; subjects.len()];
    for i in 0..runs {
        let mut order: Vec<usize> = (0..subjects.len()).collect();
        order.rotate_left(i % subjects.len());
        if i % 2 == 1 {
            order.reverse();
        }
        for s in order {
            for c in 0..CLIENTS.len() {
                let c = (c + i) % CLIENTS.len();
                figures[s][c].push(CLIENTS[c].run(subjects[s], &data_dirs[s], calls)?);
            }
        }
    }
    for data_dir in data_dirs {
        let _ = std::fs::remove_dir_all(data_dir);
    }
    print_tables(&subjects, &figures, runs, calls);
    Ok(())
}

fn print_tables(
    subjects: &[Subject<'_>],
    figures: &[Vec<Vec<PerCall>>],
    runs: usize,
    calls: usize,
) {
    let cpu = |runs: &[PerCall]| runs.iter().map(|r| r.cpu_us).collect::<Vec<_>>();
    let range = |runs: &[PerCall]| {
        let v = cpu(runs);
        let (min, max) = v
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
        format!("{:.1} µs ({min:.1}–{max:.1})", median(&v))
    };
    println!(
        "server CPU per sequential echo call ({calls} calls per run, {runs} alternating runs each)"
    );
    println!();
    let row =
        |subject: Subject<'_>, figures: &[Vec<PerCall>], cell: &dyn Fn(&[PerCall]) -> String| {
            let cells: Vec<String> = figures.iter().map(|runs| cell(runs)).collect();
            format!("| {} | {} |", subject.name(), cells.join(" | "))
        };
    println!("| server | {COLUMNS} | line / channel |");
    println!("|---|---|---|---|---|");
    for (subject, figures) in subjects.iter().zip(figures) {
        let ratio = median(&cpu(&figures[2])) / median(&cpu(&figures[0]));
        println!("{} {ratio:.2}× |", row(*subject, figures, &range));
    }
    println!();
    println!("server `read` calls / context switches per call (medians of the runs)");
    println!();
    println!("| server | {COLUMNS} |");
    println!("|---|---|---|---|");
    let counts = |runs: &[PerCall]| {
        let reads: Vec<f64> = runs.iter().map(|r| r.reads).collect();
        let switches: Vec<f64> = runs.iter().map(|r| r.switches).collect();
        format!("{:.2} / {:.2}", median(&reads), median(&switches))
    };
    for (subject, figures) in subjects.iter().zip(figures) {
        println!("{}", row(*subject, figures, &counts));
    }
    // Each run's figures side by side: the median of the runs' own
    // differences and ratios, so the machine's drift cancels out.
    let paired = |a: &[Vec<PerCall>], b: &[Vec<PerCall>], c: usize, op: fn(f64, f64) -> f64| {
        let values: Vec<f64> = a[c]
            .iter()
            .zip(&b[c])
            .map(|(a, b)| op(a.cpu_us, b.cpu_us))
            .collect();
        median(&values)
    };
    let reference = figures.last().expect("the reference server is measured");
    println!();
    println!(
        "what Warden adds to the reference server's CPU per call (median of the runs' differences)"
    );
    println!();
    println!("| server | {COLUMNS} |");
    println!("|---|---|---|---|");
    for (subject, figures) in subjects
        .iter()
        .zip(figures)
        .filter(|(s, _)| matches!(s, Subject::Warden(_)))
    {
        let cells: Vec<String> = (0..CLIENTS.len())
            .map(|c| format!("{:+.1} µs", paired(figures, reference, c, |a, b| a - b)))
            .collect();
        println!("| {} | {} |", subject.name(), cells.join(" | "));
    }
    if let [measured, base, _reference] = figures {
        println!();
        println!(
            "{} / baseline, median of the runs' ratios: channel client {:.2}×, channel with whole lines {:.2}×, line-buffered client {:.2}×",
            subjects[0].name(),
            paired(measured, base, 0, |a, b| a / b),
            paired(measured, base, 1, |a, b| a / b),
            paired(measured, base, 2, |a, b| a / b),
        );
    }
}
