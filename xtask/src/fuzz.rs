//! `cargo xtask fuzz --minutes N [--target T]...`: the fuzzing campaign of
//! `tests/fuzz` (its own workspace, see its `Cargo.toml`).
//!
//! Builds the `warden-fuzz` binary with `cargo afl build --release` into
//! `tests/fuzz/target/afl/` (`afl-light/` when no chosen target needs the
//! host, whose build leaves wasmtime out; `AFL_OPT_LEVEL` sets the
//! optimisation level, 3 by default), runs `afl-fuzz` (through `cargo afl fuzz`, so
//! the fuzzer and the binary's runtime are the same AFL++ version) on each
//! target for its share of the N minutes, seeded from
//! `tests/fuzz/corpus/<target>/` and writing to
//! `tests/fuzz/target/afl-out/<target>/`, then prints per target:
//! executions, paths (corpus entries), crashes and hangs. Any crash fails the
//! command, with its files' paths: each one is a regression test to write
//! (copy it under `tests/fuzz/regressions/<target>/` and into the owning
//! crate's tests). `cargo xtask test` replays the corpus only.
//!
//! Installs what it needs: `cargo-afl` (`cargo install`), and AFL++ itself
//! (`cargo afl config --build`; Debian's `afl++` package is installed with
//! apt-get when `afl-fuzz` is missing and this runs as root, for its
//! tools, `afl-tmin` among them). No system file is changed: AFL's checks
//! of the CPU governor and the core pattern are skipped through its
//! environment instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::{setup, workspace};

/// The targets of `tests/fuzz` (`warden_fuzz::TARGETS`), in campaign order.
pub(crate) const TARGETS: &[&str] = &[
    "manifest",
    "package",
    "sums",
    "mcp_line",
    "mcp_http",
    "tape",
    "jwt",
    "redact",
    "headers_json",
];

/// The targets that need the `host` feature of `tests/fuzz` (the host and
/// its wasmtime runtime); without one of them the instrumented build leaves
/// wasmtime and Cranelift out.
const HOST_TARGETS: &[&str] = &["package", "sums", "headers_json"];

/// The least a target runs, whatever `--minutes` gives it.
const MIN_SECONDS: u64 = 10;

/// Options of `cargo xtask fuzz`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Minutes in all, split evenly across the targets run.
    #[arg(long, default_value_t = 10)]
    pub(crate) minutes: u64,
    /// Fuzz only this target (repeatable); default: every target.
    #[arg(long = "target", value_name = "TARGET")]
    pub(crate) targets: Vec<String>,
}

/// What one target's run did (from AFL's `fuzzer_stats`).
#[derive(Debug, Default)]
struct Outcome {
    execs: u64,
    paths: u64,
    crashes: u64,
    hangs: u64,
    crash_files: Vec<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let targets = chosen(&args.targets)?;
    ensure_afl()?;
    let fuzz_dir = workspace::root().join("tests/fuzz");
    let with_host = targets.iter().any(|t| HOST_TARGETS.contains(t));
    let binary = build(&fuzz_dir, with_host)?;
    let seconds = (args.minutes * 60 / targets.len() as u64).max(MIN_SECONDS);
    let mut outcomes = BTreeMap::new();
    for target in &targets {
        println!("xtask fuzz: {target} for {seconds} s");
        outcomes.insert(*target, fuzz(&fuzz_dir, &binary, target, seconds)?);
    }
    println!(
        "\n{:<14} {:>12} {:>8} {:>8} {:>6}",
        "target", "executions", "paths", "crashes", "hangs"
    );
    for (target, o) in &outcomes {
        println!(
            "{target:<14} {:>12} {:>8} {:>8} {:>6}",
            o.execs, o.paths, o.crashes, o.hangs
        );
    }
    let crashes: Vec<&PathBuf> = outcomes.values().flat_map(|o| &o.crash_files).collect();
    if !crashes.is_empty() {
        for file in &crashes {
            eprintln!("crash: {}", file.display());
        }
        bail!("{} crashing input(s) found", crashes.len());
    }
    Ok(())
}

/// The targets named on the command line, or all of them.
fn chosen(names: &[String]) -> Result<Vec<&'static str>> {
    if names.is_empty() {
        return Ok(TARGETS.to_vec());
    }
    names
        .iter()
        .map(|name| {
            TARGETS
                .iter()
                .find(|t| *t == name)
                .copied()
                .with_context(|| {
                    format!("no fuzz target `{name}`; targets: {}", TARGETS.join(", "))
                })
        })
        .collect()
}

/// `cargo afl`, and AFL++ built for it; Debian's `afl++` when running as root.
fn ensure_afl() -> Result<()> {
    if !on_path("afl-fuzz") && is_root() {
        // Optional: `cargo afl` brings its own fuzzer; the package adds
        // afl-tmin, afl-cmin and friends for working on crashes.
        if let Err(error) = setup::apt_install("afl++", "AFL++'s tools are not installed") {
            eprintln!("xtask fuzz: {error:#} (going on with cargo-afl's own AFL++)");
        }
    }
    let has_cargo_afl = || {
        workspace::cargo()
            .args(["afl", "--version"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has_cargo_afl() {
        println!("xtask fuzz: installing cargo-afl (cargo install cargo-afl)");
        let status = workspace::cargo()
            .args(["install", "--locked", "cargo-afl"])
            .status()
            .context("running cargo install cargo-afl")?;
        if !status.success() || !has_cargo_afl() {
            bail!("cargo install cargo-afl failed");
        }
    }
    // cargo-afl builds AFL++ from the sources it ships when it is
    // installed; `cargo afl config --build` does it again when that copy is
    // missing (its version shows in `cargo afl --version` once built).
    let afl_built = workspace::cargo()
        .args(["afl", "--version"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("AFL++ version"));
    if !afl_built {
        println!("xtask fuzz: building AFL++ (cargo afl config --build)");
        let status = workspace::cargo()
            .args(["afl", "config", "--build", "--force"])
            .status()
            .context("running cargo afl config --build")?;
        if !status.success() {
            bail!("cargo afl config --build failed");
        }
    }
    Ok(())
}

/// Build the instrumented binary (with the `host` targets or without); its path.
fn build(fuzz_dir: &Path, with_host: bool) -> Result<PathBuf> {
    // Two directories: the two builds differ in features only, and would
    // otherwise relink each other's binary on every switch.
    let target_dir = fuzz_dir.join(if with_host {
        "target/afl"
    } else {
        "target/afl-light"
    });
    println!("xtask fuzz: cargo afl build --release (tests/fuzz)");
    let started = std::time::Instant::now();
    let mut build = workspace::cargo();
    build.args(["afl", "build", "--release", "--features", "afl"]);
    if !with_host {
        build.arg("--no-default-features");
    }
    let status = build
        .arg("--manifest-path")
        .arg(fuzz_dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .status()
        .context("running cargo afl build")?;
    if !status.success() {
        bail!("cargo afl build failed");
    }
    println!("xtask fuzz: built in {:.0?}", started.elapsed());
    Ok(target_dir.join("release/warden-fuzz"))
}

/// Run `afl-fuzz` on `target` for `seconds`.
fn fuzz(fuzz_dir: &Path, binary: &Path, target: &str, seconds: u64) -> Result<Outcome> {
    let out = fuzz_dir.join("target/afl-out").join(target);
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let status = workspace::cargo()
        .args(["afl", "fuzz", "-i"])
        .arg(fuzz_dir.join("corpus").join(target))
        .arg("-o")
        .arg(&out)
        .args(["-V", &seconds.to_string()])
        // Per input: the package targets write and read an archive.
        .args(["-t", "5000", "-m", "none", "--"])
        .arg(binary)
        .arg(target)
        .envs(afl_env())
        .stdout(std::process::Stdio::null())
        .status()
        .context("running cargo afl fuzz")?;
    if !status.success() {
        bail!(
            "afl-fuzz failed on `{target}` (its output is under {})",
            out.display()
        );
    }
    outcome(&out.join("default"))
}

/// What this VM needs: no UI, no CPU governor or core pattern check (the
/// system's settings are left alone), no CPU binding (the cores are shared).
fn afl_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("AFL_NO_UI", "1"),
        ("AFL_SKIP_CPUFREQ", "1"),
        ("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1"),
        ("AFL_NO_AFFINITY", "1"),
        // Inputs the seeds already cover are not an error.
        ("AFL_IGNORE_SEED_PROBLEMS", "1"),
    ]
}

/// The counts of `fuzzer_stats` and the crash files of one run.
fn outcome(dir: &Path) -> Result<Outcome> {
    let stats = std::fs::read_to_string(dir.join("fuzzer_stats"))
        .with_context(|| format!("reading {}/fuzzer_stats", dir.display()))?;
    let field = |names: &[&str]| {
        stats
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| names.contains(&name.trim()))
            .and_then(|(_, value)| value.trim().parse().ok())
            .unwrap_or(0)
    };
    let crash_files = std::fs::read_dir(dir.join("crashes"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.ends_with("README.txt"))
        .collect();
    Ok(Outcome {
        execs: field(&["execs_done"]),
        paths: field(&["corpus_count", "paths_total"]),
        crashes: field(&["saved_crashes", "unique_crashes"]),
        hangs: field(&["saved_hangs", "unique_hangs"]),
        crash_files,
    })
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
