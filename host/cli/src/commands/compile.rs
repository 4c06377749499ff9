//! Compiling components in a process of their own.
//!
//! On a compile-cache miss the host runs `warden compile-component` (this
//! binary, hidden subcommand) with the component on stdin; the child builds
//! a runtime of the same configuration, compiles into the data directory's
//! cache and exits, and the host loads the verified artifact. The tens of
//! MiB a compilation takes leave with the child, so a long-running `serve`
//! does not keep a compiler's peak for the rest of its life (measured by
//! `cargo xtask bench-mcp --cold`). Anything that goes wrong there and the
//! host compiles in-process, as without it. The child compiles on every
//! core.
//!
//! For `serve`, the child compiles twice: baseline code first (Winch, an
//! order of magnitude faster), which it announces on stdout so a call waiting
//! for the component can run it, then the optimized code at a lower priority than
//! the host (`nice` 10), which the host swaps in when the child exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context as _, Result};

use super::Context;

/// The largest component accepted on stdin (a package's wasm is bounded far
/// below this by the package reader).
const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// Stderr of a failed child kept for the warning.
const MAX_REASON_BYTES: usize = 2048;
/// How much lower than the host's the compiler's scheduling priority is.
const COMPILER_NICENESS: i32 = 10;

/// `warden compile-component --name N [--baseline] < component.wasm`.
pub(crate) fn run(cx: &Context, name: &str, baseline: bool) -> Result<ExitCode> {
    let mut wasm = Vec::new();
    std::io::stdin()
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut wasm)
        .context("reading the component from stdin")?;
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        anyhow::bail!("the component is over {MAX_COMPONENT_BYTES} bytes");
    }
    let mut config = cx.runtime_config();
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

/// The line the compiler process prints once baseline code is in the cache.
const BASELINE_READY: &str = "baseline";

/// Runs `warden compile-component` for the host's runtime.
#[derive(Debug)]
pub(crate) struct ChildCompiler {
    exe: PathBuf,
    data_dir: PathBuf,
    /// The host's `--config`: the child's runtime is configured alike (its
    /// cache bound, `[cache] max_bytes`, above all).
    config_file: Option<PathBuf>,
    /// Compile baseline code first (see [`Context::baseline_code`]).
    baseline: bool,
}

impl ChildCompiler {
    /// `None` when this binary's path is unknown (then the host compiles in-process).
    pub(crate) fn new(
        data_dir: PathBuf,
        config_file: Option<PathBuf>,
        baseline: bool,
    ) -> Option<ChildCompiler> {
        let exe = std::env::current_exe().ok()?;
        Some(ChildCompiler {
            exe,
            data_dir,
            config_file,
            baseline,
        })
    }

    fn run(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: Option<&mut dyn FnMut()>,
    ) -> Result<(), String> {
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
            .arg(format!("--name={name}"));
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
            .map_err(|e| format!("starting {}: {e}", self.exe.display()))?;
        // Read on a thread of its own, so a chatty compiler never blocks on
        // stderr while this thread waits for its stdout.
        let stderr = child
            .stderr
            .take()
            .map(|stderr| std::thread::spawn(move || kept_prefix(stderr, MAX_REASON_BYTES)));
        let written = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(wasm))
            .transpose();
        if let (Some(ready), Some(stdout)) = (baseline_ready, child.stdout.take()) {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line == BASELINE_READY {
                    ready();
                }
            }
        }
        let status = child
            .wait()
            .map_err(|e| format!("waiting for the compiler process: {e}"))?;
        let stderr = stderr
            .and_then(|reader| reader.join().ok())
            .unwrap_or_default();
        if status.success() {
            return written
                .map(|_| ())
                .map_err(|e| format!("writing the component: {e}"));
        }
        let reason = String::from_utf8_lossy(&stderr);
        Err(format!("the compiler process {status}: {}", reason.trim()))
    }
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
        self.run(name, wasm, None)
    }

    fn compile_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), String> {
        self.run(name, wasm, self.baseline.then_some(baseline_ready))
    }
}
