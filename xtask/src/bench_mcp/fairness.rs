//! `bench-mcp --fairness`: a cheap call's latency while CPU-bound calls run,
//! with the long-call lane (the default: a thread per core), with one lane
//! thread (`--long-call-threads 1`, the default before the lane took every
//! core) and without it (`--long-call-threads 0`, every call on the one
//! stdio worker, as before the lane existed), alternating runs in fresh
//! processes.
//!
//! Each run keeps `BUSY` `hostile.burn` calls in flight for `PHASE` while a
//! probe `echo` call is sent every `PROBE_EVERY` (one at a time) and timed;
//! it also counts the CPU-bound calls completed, their throughput.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::{Server, check_echo, echo_call, median, percentile, temp_data_dir};
use crate::workspace;

/// CPU-bound calls kept in flight.
const BUSY: usize = 8;
/// Rounds of one `hostile.burn` call: tens of milliseconds of CPU.
const ROUNDS: u64 = 20_000_000;
/// How long each run keeps the CPU-bound calls going.
const PHASE: Duration = Duration::from_secs(4);
/// Pause between one probe's answer and the next probe.
const PROBE_EVERY: Duration = Duration::from_millis(20);

fn warden(binary: &Path, data_dir: &Path, args: &[&str]) -> Result<std::process::Output> {
    Command::new(binary)
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()
        .with_context(|| format!("running warden {args:?}"))
}

/// Install the hostile fixture and grant its `burn` tool in the Location
/// (it is third-party: gated for the model unless granted).
fn install_hostile(binary: &Path, data_dir: &Path) -> Result<()> {
    let fixture = workspace::root().join("tests/fixtures/packages/hostile");
    if !fixture.join("wasm").is_dir() {
        bail!(
            "{} has no wasm/: run `cargo xtask bundle` first",
            fixture.display()
        );
    }
    let installed = warden(binary, data_dir, &["install", &fixture.to_string_lossy()])?;
    if !installed.status.success() {
        bail!(
            "installing the hostile fixture: {}",
            String::from_utf8_lossy(&installed.stderr)
        );
    }
    let asked = warden(
        binary,
        data_dir,
        &[
            "--json",
            "call",
            "hostile.burn",
            "--origin",
            "loop-run",
            "--input",
            r#"{"rounds": 1}"#,
        ],
    )?;
    let answer: Value = serde_json::from_slice(&asked.stdout).with_context(|| {
        format!(
            "`warden call` answered {:?}",
            String::from_utf8_lossy(&asked.stdout)
        )
    })?;
    let id = answer["approval_id"]
        .as_str()
        .with_context(|| format!("no approval asked: {answer}"))?;
    let approved = warden(binary, data_dir, &["approvals", "approve", id, "--grant"])?;
    if !approved.status.success() {
        bail!(
            "granting hostile.burn: {}",
            String::from_utf8_lossy(&approved.stderr)
        );
    }
    Ok(())
}

fn burn_call() -> Value {
    json!({ "name": "hostile_burn", "arguments": { "rounds": ROUNDS } })
}

struct Run {
    probes: Vec<Duration>,
    burns_per_sec: f64,
}

fn one_run(binary: &Path, data_dir: &Path, extra: &[&str]) -> Result<Run> {
    let mut server = Server::spawn_with(binary, data_dir, extra)?;
    server.initialize()?;
    for i in 0..20 {
        check_echo(&server.request("tools/call", echo_call(i))?)?;
    }
    check_burn(&server.request("tools/call", burn_call())?)?;
    let mut busy = std::collections::HashSet::new();
    let mut probe: Option<(u64, Instant)> = None;
    let mut next_probe = Instant::now() + PROBE_EVERY;
    let (mut probes, mut burns) = (Vec::new(), 0usize);
    let start = Instant::now();
    while start.elapsed() < PHASE {
        while busy.len() < BUSY {
            busy.insert(server.send("tools/call", burn_call())?);
        }
        if probe.is_none() && Instant::now() >= next_probe {
            probe = Some((
                server.send("tools/call", echo_call(probes.len()))?,
                Instant::now(),
            ));
        }
        let Some(answer) = server.response_within(Duration::from_millis(1))? else {
            continue;
        };
        let id = answer["id"].as_u64().context("response id")?;
        if busy.remove(&id) {
            check_burn(&answer)?;
            burns += 1;
        } else if let Some((probe_id, sent)) = probe
            && probe_id == id
        {
            probes.push(sent.elapsed());
            check_echo(&answer)?;
            probe = None;
            next_probe = Instant::now() + PROBE_EVERY;
        }
    }
    let elapsed = start.elapsed();
    Ok(Run {
        probes,
        burns_per_sec: burns as f64 / elapsed.as_secs_f64(),
    })
}

fn check_burn(answer: &Value) -> Result<()> {
    if answer["result"]["isError"] == json!(true) {
        bail!("burn call failed: {answer}");
    }
    Ok(())
}

pub(crate) fn run(binary: &Path, runs: usize) -> Result<()> {
    let data_dir = temp_data_dir("fairness")?;
    install_hostile(binary, &data_dir)?;
    super::cold::fill_cache(binary, &data_dir)?;
    let configs: [(&str, &[&str]); 3] = [
        ("long-call lane (a thread per core)", &[]),
        (
            "one lane thread (--long-call-threads 1)",
            &["--long-call-threads", "1"],
        ),
        (
            "one worker (--long-call-threads 0)",
            &["--long-call-threads", "0"],
        ),
    ];
    let mut results: Vec<Vec<Run>> = vec![Vec::new(), Vec::new(), Vec::new()];
    for i in 0..runs {
        // Each run in another order, so no configuration always goes first.
        for j in 0..configs.len() {
            let k = (i + j) % configs.len();
            results[k].push(one_run(binary, &data_dir, configs[k].1)?);
        }
    }
    let _ = std::fs::remove_dir_all(&data_dir);
    println!(
        "a cheap call beside {BUSY} CPU-bound calls ({runs} alternating runs of {} s each; probe latencies pooled)",
        PHASE.as_secs()
    );
    println!();
    println!("| serve | probes | probe p50 | probe p99 | CPU-bound calls/s (median) |");
    println!("|---|---|---|---|---|");
    let mut summary = Vec::new();
    for (k, (name, _)) in configs.iter().enumerate() {
        let mut probes: Vec<Duration> = results[k].iter().flat_map(|r| r.probes.clone()).collect();
        probes.sort();
        if probes.is_empty() {
            bail!("{name}: no probe answered");
        }
        let throughput = median(
            &results[k]
                .iter()
                .map(|r| r.burns_per_sec)
                .collect::<Vec<_>>(),
        );
        let (p50, p99) = (percentile(&probes, 0.5), percentile(&probes, 0.99));
        println!(
            "| {name} | {} | {:.2} ms | {:.2} ms | {throughput:.1} |",
            probes.len(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
        );
        summary.push((p99, throughput));
    }
    println!();
    for (k, name) in [(1, "one lane thread"), (2, "one worker")] {
        println!(
            "lane / {name}: probe p99 {:.2}×, CPU-bound throughput {:.2}×",
            summary[0].0.as_secs_f64() / summary[k].0.as_secs_f64(),
            summary[0].1 / summary[k].1
        );
    }
    Ok(())
}
