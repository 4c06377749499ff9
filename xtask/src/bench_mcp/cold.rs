//! `bench-mcp --cold`: a first start with an empty compile cache against a
//! start with a filled one, alternating, each in a fresh process.
//!
//! Measures spawn → `tools/list` answered, spawn → first `echo` call
//! answered, and the peak RSS once the background warm-up has compiled every
//! component (the cache stops growing). With `--wassette <path>`, Wassette's
//! cold and warm starts alternate with Warden's (see [`super::wassette`]).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;

use super::wassette::Wassette;
use super::{Server, check_echo, echo_call, median, temp_data_dir};

/// Compiled artifacts (`.cwasm`) in `dir` and below.
pub(super) fn compiled_in(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.path() {
            p if p.is_dir() => compiled_in(&p),
            p => usize::from(p.extension().is_some_and(|x| x == "cwasm")),
        })
        .sum()
}

/// Compiled artifacts in a data directory's cache.
fn artifacts(data_dir: &Path) -> usize {
    compiled_in(&data_dir.join("cache"))
}

/// Wait until the background warm-up is over — for a second, no compiler
/// process ran under the server and no artifact came or went (baseline code
/// is replaced by optimized code) — at most 60 s; the count reached.
fn wait_for_warm_up(server: &Server, data_dir: &Path) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = server.child.id();
    let (mut seen, mut since) = (artifacts(data_dir), Instant::now());
    while Instant::now() < deadline && since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(50));
        let now = artifacts(data_dir);
        if now != seen || compiling(pid) {
            (seen, since) = (now, Instant::now());
        }
    }
    seen
}

/// Whether process `pid` has a child (a `warden compile-component`).
fn compiling(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|task| {
        std::fs::read_to_string(task.path().join("children"))
            .is_ok_and(|children| !children.trim().is_empty())
    })
}

/// Start a server on `data_dir`, call echo, and let the warm-up compile
/// every component into the cache.
pub(crate) fn fill_cache(binary: &Path, data_dir: &Path) -> Result<usize> {
    let mut server = Server::spawn(binary, data_dir)?;
    server.initialize()?;
    check_echo(&server.request("tools/call", echo_call(0))?)?;
    let count = wait_for_warm_up(&server, data_dir);
    if count == 0 {
        bail!("the server compiled nothing into {}", data_dir.display());
    }
    Ok(count)
}

/// What one start took.
pub(super) struct Start {
    pub(super) to_list: Duration,
    pub(super) to_call: Duration,
    pub(super) peak_rss_mib: f64,
    pub(super) private_rss_mib: f64,
}

fn start(binary: &Path, data_dir: &Path) -> Result<Start> {
    let spawned = Instant::now();
    let mut server = Server::spawn(binary, data_dir)?;
    server.initialize()?;
    server.request("tools/list", json!({}))?;
    let to_list = spawned.elapsed();
    check_echo(&server.request("tools/call", echo_call(0))?)?;
    let to_call = spawned.elapsed();
    wait_for_warm_up(&server, data_dir);
    Ok(Start {
        to_list,
        to_call,
        peak_rss_mib: server.peak_rss_kib()? as f64 / 1024.0,
        private_rss_mib: server.private_rss_kib()? as f64 / 1024.0,
    })
}

/// Cold and warm starts of one server, alternating.
#[derive(Default)]
struct Starts {
    cold: Vec<Start>,
    warm: Vec<Start>,
}

impl Starts {
    /// One cold and one warm start, cold first when `cold_first`.
    fn measure(
        &mut self,
        cold_first: bool,
        cold: impl FnOnce() -> Result<Start>,
        warm: impl FnOnce() -> Result<Start>,
    ) -> Result<()> {
        if cold_first {
            self.cold.push(cold()?);
            self.warm.push(warm()?);
        } else {
            self.warm.push(warm()?);
            self.cold.push(cold()?);
        }
        Ok(())
    }
}

type Figure = (&'static str, fn(&Start) -> f64, &'static str);

const FIGURES: [Figure; 4] = [
    (
        "spawn → tools/list",
        |s| s.to_list.as_secs_f64() * 1e3,
        "ms",
    ),
    (
        "spawn → first call",
        |s| s.to_call.as_secs_f64() * 1e3,
        "ms",
    ),
    ("peak RSS (after warm-up)", |s| s.peak_rss_mib, "MiB"),
    (
        "private memory (RssAnon, after warm-up)",
        |s| s.private_rss_mib,
        "MiB",
    ),
];

fn median_of(starts: &[Start], figure: fn(&Start) -> f64) -> f64 {
    median(&starts.iter().map(figure).collect::<Vec<_>>())
}

pub(crate) fn run(binary: &Path, wassette: Option<&Path>, runs: usize) -> Result<()> {
    let warm_dir = temp_data_dir("warm")?;
    let components = fill_cache(binary, &warm_dir)?;
    let wassette = wassette.map(Wassette::new).transpose()?;
    let wassette_warm = wassette.as_ref().map(Wassette::warm_dir).transpose()?;
    let (mut warden, mut other) = (Starts::default(), Starts::default());
    for i in 0..runs {
        warden.measure(
            i % 2 == 0,
            || {
                let dir = temp_data_dir("cold")?;
                let start = start(binary, &dir);
                let _ = std::fs::remove_dir_all(&dir);
                start
            },
            || start(binary, &warm_dir),
        )?;
        if let (Some(wassette), Some(warm)) = (&wassette, &wassette_warm) {
            other.measure(
                i % 2 == 1,
                || {
                    let dir = wassette.cold_dir("wassette-cold")?;
                    let start = wassette.start(&dir);
                    let _ = std::fs::remove_dir_all(&dir);
                    start
                },
                || wassette.start(warm),
            )?;
        }
    }
    let _ = std::fs::remove_dir_all(&warm_dir);
    if let Some(dir) = &wassette_warm {
        let _ = std::fs::remove_dir_all(dir);
    }
    println!("cold start ({components} components; medians of {runs} alternating runs each)");
    println!();
    println!("| figure | cold cache | warm cache | cold / warm |");
    println!("|---|---|---|---|");
    for (name, figure, unit) in FIGURES {
        let (c, w) = (
            median_of(&warden.cold, figure),
            median_of(&warden.warm, figure),
        );
        println!("| {name} | {c:.1} {unit} | {w:.1} {unit} | {:.2}× |", c / w);
    }
    if wassette.is_some() {
        println!();
        println!(
            "against Wassette in the same run (its echo component: xtask/bench/wassette-echo)"
        );
        println!();
        println!(
            "| figure | Warden cold | Wassette cold | Warden / Wassette | Warden warm | Wassette warm | Warden / Wassette |"
        );
        println!("|---|---|---|---|---|---|---|");
        for (name, figure, unit) in FIGURES {
            let [wc, oc, ww, ow] = [&warden.cold, &other.cold, &warden.warm, &other.warm]
                .map(|starts| median_of(starts, figure));
            println!(
                "| {name} | {wc:.1} {unit} | {oc:.1} {unit} | {:.2}× | {ww:.1} {unit} | {ow:.1} {unit} | {:.2}× |",
                wc / oc,
                ww / ow
            );
        }
    }
    Ok(())
}
