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
//! core at a lower priority than the host (`nice` 10).

use std::io::{Read, Write};
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

/// `warden compile-component --name N < component.wasm`.
pub(crate) fn run(cx: &Context, name: &str) -> Result<ExitCode> {
    let mut wasm = Vec::new();
    std::io::stdin()
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut wasm)
        .context("reading the component from stdin")?;
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        anyhow::bail!("the component is over {MAX_COMPONENT_BYTES} bytes");
    }
    // This process only compiles: on every core, but behind the host's
    // threads, so a host serving calls beside a compile keeps its cores (a
    // call waiting for this component gets them when nothing else runs).
    #[cfg(unix)]
    if let Err(error) = rustix::process::nice(COMPILER_NICENESS) {
        tracing::debug!(%error, "could not lower the compiler's priority");
    }
    let mut config = cx.runtime_config();
    config.parallel_compilation = true;
    // Never an external compiler here: this process is the compiler.
    let runtime = warden_runtime::Runtime::new(config)?;
    runtime.compile_to_cache(name, &wasm)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `warden compile-component` for the host's runtime.
#[derive(Debug)]
pub(crate) struct ChildCompiler {
    exe: PathBuf,
    data_dir: PathBuf,
}

impl ChildCompiler {
    /// `None` when this binary's path is unknown (then the host compiles in-process).
    pub(crate) fn new(data_dir: PathBuf) -> Option<ChildCompiler> {
        let exe = std::env::current_exe().ok()?;
        Some(ChildCompiler { exe, data_dir })
    }
}

impl warden_runtime::ExternalCompiler for ChildCompiler {
    fn compile(&self, name: &str, wasm: &[u8]) -> Result<(), String> {
        let mut command = Command::new(&self.exe);
        // The compiler needs nothing of the host's environment (not its
        // secret key): it reads wasm and writes the cache.
        command.env_clear();
        if let Some(filter) = std::env::var_os("RUST_LOG") {
            command.env("RUST_LOG", filter);
        }
        let mut child = command
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("compile-component")
            .arg(format!("--name={name}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.exe.display()))?;
        let written = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(wasm))
            .transpose();
        let output = child
            .wait_with_output()
            .map_err(|e| format!("waiting for the compiler process: {e}"))?;
        if output.status.success() {
            return written
                .map(|_| ())
                .map_err(|e| format!("writing the component: {e}"));
        }
        let mut reason = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        if reason.len() > MAX_REASON_BYTES {
            let cut = (0..=MAX_REASON_BYTES)
                .rev()
                .find(|i| reason.is_char_boundary(*i))
                .unwrap_or(0);
            reason.truncate(cut);
        }
        Err(format!("the compiler process {}: {reason}", output.status))
    }
}
