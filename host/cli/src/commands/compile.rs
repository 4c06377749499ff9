//! Compiling components in a process of their own.
//!
//! On a compile-cache miss the host runs `warden compile-component` (this
//! binary, hidden subcommand) with the component on stdin; the child builds
//! a runtime of the same configuration, compiles into the data directory's
//! cache and exits, and the host loads the verified artifact. The tens of
//! MiB a compilation takes leave with the child, so a long-running `serve`
//! does not keep a compiler's peak for the rest of its life (measured by
//! `cargo xtask bench-mcp --cold`). Only when the child cannot be started
//! does the host compile in-process, as without it. The child compiles on
//! every core.
//!
//! The child is bounded: killed past `[compile] timeout_ms`, and its memory
//! capped by its data rlimit (`[compile] memory_bytes`); either ends the
//! compile as `compile_limit_exceeded`, naming the limit, and the component
//! is refused rather than compiled in the host's process, unbounded.
//!
//! For `serve`, the child compiles twice: baseline code first (Winch, an
//! order of magnitude faster), which it announces on stdout so a call waiting
//! for the component can run it, then the optimized code at a lower priority than
//! the host (`nice` 10), which the host swaps in when the child exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use warden_runtime::{CompileLimit, CompileLimits, ExternalFailure, RuntimeError};

use super::Context;

/// The largest component accepted on stdin (a package's wasm is bounded far
/// below this by the package reader).
const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// Stderr of a failed child kept for the warning.
const MAX_REASON_BYTES: usize = 2048;
/// How much lower than the host's the compiler's scheduling priority is.
const COMPILER_NICENESS: i32 = 10;

/// `warden compile-component --name N [--baseline] [--memory-limit B] < component.wasm`.
pub(crate) fn run(
    cx: &Context,
    name: &str,
    baseline: bool,
    memory_limit: Option<u64>,
) -> Result<ExitCode> {
    let mut config = cx.runtime_config()?;
    // First of all: what this process compiles is whatever a package holds.
    limit_memory(memory_limit.unwrap_or(config.compile_limits.memory_bytes))?;
    let mut wasm = Vec::new();
    std::io::stdin()
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut wasm)
        .context("reading the component from stdin")?;
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        anyhow::bail!("the component is over {MAX_COMPONENT_BYTES} bytes");
    }
    config.parallel_compilation = true;
    // Never an external compiler here: this process is the compiler.
    let runtime = warden_runtime::Runtime::new(config)?;
    if !baseline {
        // A host waits for this compile: at its own priority.
        runtime.compile_to_cache(name, &wasm)?;
        return Ok(ExitCode::SUCCESS);
    }
    // A call may wait for the baseline code: at the host's priority. The
    // optimized code only replaces it: behind the host's threads (the
    // compiler's threads start after this and take the lower priority), so a
    // host serving calls beside it keeps its cores.
    runtime.compile_to_cache_tiered(name, &wasm, &mut |baseline_ready| {
        if baseline_ready {
            let mut stdout = std::io::stdout().lock();
            // The host may be gone; the optimized code is still worth the cache.
            let _ = writeln!(stdout, "{BASELINE_READY}").and_then(|()| stdout.flush());
        }
        #[cfg(unix)]
        if let Err(error) = rustix::process::nice(COMPILER_NICENESS) {
            tracing::debug!(%error, "could not lower the compiler's priority");
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Bound the memory this process may map to `bytes`: its data rlimit, which
/// counts what is mapped writable (the compiler's heap, its threads'
/// stacks, the code it emits) and not the address space the engine only
/// reserves. Past it an allocation fails and the process ends, which the
/// host reports as the memory limit.
#[cfg(unix)]
fn limit_memory(bytes: u64) -> Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let limit = Rlimit {
        current: Some(bytes),
        maximum: Some(bytes),
    };
    setrlimit(Resource::Data, limit).context("limiting the compiler's memory")
}

/// Without rlimits only the time limit bounds the compiler.
#[cfg(not(unix))]
fn limit_memory(_bytes: u64) -> Result<()> {
    Ok(())
}

/// The line the compiler process prints once baseline code is in the cache.
const BASELINE_READY: &str = "baseline";

/// Runs `warden compile-component` for the host's runtime, bounded in time
/// (killed past [`CompileLimits::timeout`]) and memory (the child's data
/// rlimit, [`CompileLimits::memory_bytes`]).
#[derive(Debug)]
pub(crate) struct ChildCompiler {
    exe: PathBuf,
    data_dir: PathBuf,
    /// The host's `--config`: the child's runtime is configured alike (its
    /// cache bound, `[cache] max_bytes`, above all).
    config_file: Option<PathBuf>,
    /// Compile baseline code first (see [`Context::baseline_code`]).
    baseline: bool,
    limits: CompileLimits,
}

/// How often the host looks whether the compiler process has ended.
const POLL: Duration = Duration::from_millis(10);

/// What the child's stderr says when an allocation failed under its
/// memory limit (Rust's allocation failure, `ENOMEM`, mimalloc's message,
/// and `EAGAIN` from a thread whose stack the data rlimit has no room for:
/// the engine's own threads are the first a small limit stops).
const OUT_OF_MEMORY: &[&str] = &[
    "memory allocation of",
    "Cannot allocate memory",
    "out of memory",
    "unable to allocate",
    "Resource temporarily unavailable",
];

impl ChildCompiler {
    /// `None` when this binary's path is unknown (then the host compiles in-process).
    pub(crate) fn new(
        data_dir: PathBuf,
        config_file: Option<PathBuf>,
        baseline: bool,
        limits: CompileLimits,
    ) -> Option<ChildCompiler> {
        let exe = std::env::current_exe().ok()?;
        Some(ChildCompiler {
            exe,
            data_dir,
            config_file,
            baseline,
            limits,
        })
    }

    fn run(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: Option<&mut dyn FnMut()>,
    ) -> Result<(), ExternalFailure> {
        let mut command = Command::new(&self.exe);
        // The compiler needs nothing of the host's environment (not its
        // secret key): it reads wasm and writes the cache.
        command.env_clear();
        if let Some(filter) = std::env::var_os("RUST_LOG") {
            command.env("RUST_LOG", filter);
        }
        command.arg("--data-dir").arg(&self.data_dir);
        if let Some(config) = &self.config_file {
            command.arg("--config").arg(config);
        }
        command
            .arg("compile-component")
            .arg(format!("--name={name}"))
            .arg(format!("--memory-limit={}", self.limits.memory_bytes));
        let stdout = if baseline_ready.is_some() {
            command.arg("--baseline");
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                ExternalFailure::Unavailable(format!("starting {}: {e}", self.exe.display()))
            })?;
        let deadline = Instant::now() + self.limits.timeout;
        // Stdin, stdout and stderr each on a thread of their own, so this
        // thread only watches the clock: a compiler that stops reading or
        // writing is killed at its deadline like one that never finishes.
        let (ended, written, stderr) = std::thread::scope(|scope| {
            let stdin = child.stdin.take();
            let written = scope.spawn(move || stdin.map(|mut stdin| stdin.write_all(wasm)));
            let stderr = child.stderr.take();
            let stderr =
                scope.spawn(move || stderr.map(|stderr| kept_prefix(stderr, MAX_REASON_BYTES)));
            let (lines, announced) = mpsc::channel();
            if let Some(stdout) = child.stdout.take() {
                scope.spawn(move || {
                    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                        if line == BASELINE_READY {
                            let _ = lines.send(());
                        }
                    }
                });
            }
            let ended = watch(&mut child, deadline, &announced, baseline_ready);
            let written = written.join().ok().flatten().transpose();
            let stderr = stderr.join().ok().flatten().unwrap_or_default();
            (ended, written, stderr)
        });
        let status = match ended {
            Ended::Exited(status) => status,
            Ended::TimedOut => {
                return Err(self.refused(
                    name,
                    CompileLimit::Time {
                        limit: self.limits.timeout,
                    },
                ));
            }
            Ended::Lost(e) => {
                return Err(ExternalFailure::Unavailable(format!(
                    "waiting for the compiler process: {e}"
                )));
            }
        };
        if status.success() {
            return written
                .map(|_| ())
                .map_err(|e| ExternalFailure::Unavailable(format!("writing the component: {e}")));
        }
        let reason = String::from_utf8_lossy(&stderr);
        // The compiler ran on this component and failed: final. Compiling
        // it in this process instead would lift the very limits the child
        // runs under.
        if out_of_memory(&status, &reason) {
            return Err(self.refused(
                name,
                CompileLimit::Memory {
                    limit_bytes: self.limits.memory_bytes,
                },
            ));
        }
        Err(ExternalFailure::Refused(RuntimeError::Compile {
            component: name.to_owned(),
            reason: format!("the compiler process {status}: {}", reason.trim()),
        }))
    }

    fn refused(&self, name: &str, limit: CompileLimit) -> ExternalFailure {
        ExternalFailure::Refused(RuntimeError::CompileLimitExceeded {
            component: name.to_owned(),
            limit,
        })
    }
}

/// How the compiler process ended.
enum Ended {
    Exited(ExitStatus),
    /// Killed at its deadline.
    TimedOut,
    /// It could not be waited for.
    Lost(std::io::Error),
}

/// Wait for `child` until `deadline` (then kill it), telling
/// `baseline_ready` each baseline announcement meanwhile.
fn watch(
    child: &mut Child,
    deadline: Instant,
    announced: &mpsc::Receiver<()>,
    mut baseline_ready: Option<&mut dyn FnMut()>,
) -> Ended {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ended::Exited(status),
            Ok(None) => {}
            Err(e) => return Ended::Lost(e),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            // Killed and reaped, so its pipes close and the threads end.
            let _ = child.kill();
            let _ = child.wait();
            return Ended::TimedOut;
        }
        match announced.recv_timeout(left.min(POLL)) {
            Ok(()) => {
                if let Some(ready) = baseline_ready.as_deref_mut() {
                    ready();
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // No stdout (or it closed): only the clock and the exit remain.
            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(left.min(POLL)),
        }
    }
}

/// Whether the compiler process ended for want of memory: an allocation
/// failed under its rlimit (it says so on stderr), or it was ended by a
/// signal it did not send itself otherwise (an abort on a failed
/// allocation, the kernel's OOM killer).
fn out_of_memory(status: &ExitStatus, stderr: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if status.signal().is_some() {
            return true;
        }
    }
    #[cfg(not(unix))]
    let _ = status;
    OUT_OF_MEMORY.iter().any(|marker| stderr.contains(marker))
}

/// Everything `reader` gives until its end, keeping the first `keep` bytes.
fn kept_prefix(mut reader: impl Read, keep: usize) -> Vec<u8> {
    let (mut kept, mut buffer) = (Vec::new(), [0; 4096]);
    loop {
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = keep.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    kept
}

impl warden_runtime::ExternalCompiler for ChildCompiler {
    fn compile(&self, name: &str, wasm: &[u8]) -> Result<(), String> {
        self.run(name, wasm, None).map_err(|e| failure_text(&e))
    }

    fn compile_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), String> {
        self.run(name, wasm, self.baseline.then_some(baseline_ready))
            .map_err(|e| failure_text(&e))
    }

    fn compile_checked(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), ExternalFailure> {
        self.run(name, wasm, self.baseline.then_some(baseline_ready))
    }
}

fn failure_text(failure: &ExternalFailure) -> String {
    match failure {
        ExternalFailure::Unavailable(reason) => reason.clone(),
        ExternalFailure::Refused(error) => error.to_string(),
    }
}
