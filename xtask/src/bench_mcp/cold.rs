//! `bench-mcp --cold`: a first start with an empty compile cache against a
//! start with a filled one, alternating, each in a fresh process.
//!
//! Measures spawn → `tools/list` answered, spawn → first `echo` call
//! answered, and the peak RSS once the background warm-up has compiled every
//! component (the cache stops growing).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;

use super::{Server, check_echo, echo_call, median, temp_data_dir};

/// Compiled artifacts in a data directory's cache.
fn artifacts(data_dir: &Path) -> usize {
    fn count(dir: &Path) -> usize {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .filter_map(Result::ok)
            .map(|e| match e.path() {
                p if p.is_dir() => count(&p),
                p => usize::from(p.extension().is_some_and(|x| x == "cwasm")),
            })
            .sum()
    }
    count(&data_dir.join("cache"))
}

/// Wait until the background warm-up has stopped adding artifacts (none
/// for a second), at most 60 s; the count reached.
fn wait_for_warm_up(data_dir: &Path) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut seen, mut since) = (artifacts(data_dir), Instant::now());
    while Instant::now() < deadline && since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(50));
        let now = artifacts(data_dir);
        if now != seen {
            (seen, since) = (now, Instant::now());
        }
    }
    seen
}

/// Start a server on `data_dir`, call echo, and let the warm-up compile
/// every component into the cache.
pub(crate) fn fill_cache(binary: &Path, data_dir: &Path) -> Result<usize> {
    let mut server = Server::spawn(binary, data_dir)?;
    server.initialize()?;
    check_echo(&server.request("tools/call", echo_call(0))?)?;
    let count = wait_for_warm_up(data_dir);
    if count == 0 {
        bail!("the server compiled nothing into {}", data_dir.display());
    }
    Ok(count)
}

struct Start {
    to_list: Duration,
    to_call: Duration,
    peak_rss_mib: f64,
    private_rss_mib: f64,
}

fn start(binary: &Path, data_dir: &Path) -> Result<Start> {
    let spawned = Instant::now();
    let mut server = Server::spawn(binary, data_dir)?;
    server.initialize()?;
    server.request("tools/list", json!({}))?;
    let to_list = spawned.elapsed();
    check_echo(&server.request("tools/call", echo_call(0))?)?;
    let to_call = spawned.elapsed();
    wait_for_warm_up(data_dir);
    Ok(Start {
        to_list,
        to_call,
        peak_rss_mib: server.peak_rss_kib()? as f64 / 1024.0,
        private_rss_mib: server.private_rss_kib()? as f64 / 1024.0,
    })
}

pub(crate) fn run(binary: &Path, runs: usize) -> Result<()> {
    let warm_dir = temp_data_dir("warm")?;
    let components = fill_cache(binary, &warm_dir)?;
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let mut measure_cold = || -> Result<()> {
            let dir = temp_data_dir("cold")?;
            cold.push(start(binary, &dir)?);
            let _ = std::fs::remove_dir_all(&dir);
            Ok(())
        };
        if i % 2 == 0 {
            measure_cold()?;
            warm.push(start(binary, &warm_dir)?);
        } else {
            warm.push(start(binary, &warm_dir)?);
            measure_cold()?;
        }
    }
    let _ = std::fs::remove_dir_all(&warm_dir);
    let ms = |starts: &[Start], f: fn(&Start) -> Duration| {
        median(
            &starts
                .iter()
                .map(|s| f(s).as_secs_f64() * 1e3)
                .collect::<Vec<_>>(),
        )
    };
    let mib =
        |starts: &[Start], f: fn(&Start) -> f64| median(&starts.iter().map(f).collect::<Vec<_>>());
    println!("cold start ({components} components; medians of {runs} alternating runs each)");
    println!();
    println!("| figure | cold cache | warm cache | cold / warm |");
    println!("|---|---|---|---|");
    for (name, f) in [
        (
            "spawn → tools/list",
            (|s: &Start| s.to_list) as fn(&Start) -> Duration,
        ),
        ("spawn → first call", |s: &Start| s.to_call),
    ] {
        let (c, w) = (ms(&cold, f), ms(&warm, f));
        println!("| {name} | {c:.1} ms | {w:.1} ms | {:.2}× |", c / w);
    }
    for (name, f) in [
        (
            "peak RSS (after warm-up)",
            (|s: &Start| s.peak_rss_mib) as fn(&Start) -> f64,
        ),
        ("private memory (RssAnon, after warm-up)", |s: &Start| {
            s.private_rss_mib
        }),
    ] {
        let (c, w) = (mib(&cold, f), mib(&warm, f));
        println!("| {name} | {c:.1} MiB | {w:.1} MiB | {:.2}× |", c / w);
    }
    Ok(())
}
