//! `warden`: run sandboxed WebAssembly tools from the command line, or serve
//! them to an MCP client.
//!
//! ```text
//! warden list
//! warden call echo.echo --input '{"text": "hello", "transform": "upper"}'
//! printf %s "$TOKEN" | warden secret set github github_runtime_token --scope repo
//! warden serve            # MCP over stdio
//! ```

// Every print goes through `output` (escaped, never panicking): these two
// macros are this crate's `out!` and `say!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// A line on stdout through [`output::line`]: control characters escaped; a
/// closed pipe drops the rest of the output instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Stream::Out, format_args!($($arg)*))
    };
}

/// A line on stderr through [`output::line`]: control characters escaped;
/// never panics (a server whose stderr was closed keeps serving, and says
/// nothing).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Stream::Err, format_args!($($arg)*))
    };
}

mod ask;
mod backend;
mod cli;
mod commands;
mod console;
mod output;
mod render;
mod settings;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the system allocator: a call allocates and frees a
/// few hundred small blocks (JSON values, rmcp's messages, wasmtime's store),
/// on which glibc's allocator spent a tenth to a sixth of `serve`'s CPU
/// (a call costs 0.92-0.96x as much with mimalloc).
/// Built without transparent huge pages (`no_thp` in Cargo.toml), which took
/// the resident size from 33 to 48 MiB (docs/benchmarks/mcp-server.md, "The allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Everything this process creates is its owner's alone, whatever umask
    // it was started with: the data directory holds approvals' inputs, the
    // audit log, secrets, installed packages and compiled code (SQLite's
    // side files, lock files and staging directories included).
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let cli = cli::Cli::parse();
    init_tracing(matches!(cli.command, cli::Command::Serve(_)));
    // One worker (`serve` over stdio by default) is a current-thread
    // runtime: the same single executor, without the multi-thread
    // scheduler's per-wake bookkeeping (docs/benchmarks/mcp-server.md, "Server CPU per call
    // with two clients"). Calls that run long still move to the long-call
    // lane's own threads, and blocking work to the blocking pool.
    let mut builder = match cli.command.worker_threads() {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            say!("error: starting the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(error) => {
            // Errors carry text from outside (arguments, manifests, remote
            // servers' metadata): `say!` shows it, never sends it to the
            // terminal as controls.
            say!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout carries results, or MCP messages for `serve`),
/// escaped as every other line; `RUST_LOG` tunes them.
///
/// rmcp's own events are off unless `RUST_LOG` asks for them: it logs an
/// ERROR line (naming its Rust types) for ordinary failures the command
/// reports itself in the user's terms — a hosted server that is down, a
/// wrong path, a session the server dropped.
fn init_tracing(serving: bool) {
    let default = if serving {
        "warn,rmcp=off"
    } else {
        "error,rmcp=off"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(output::Escaping)
        .with_ansi(false)
        // An event that cannot be written is dropped: reporting it went
        // through `eprintln!`, whose panic, once stderr was closed, ended
        // the task that logged (an HTTP connection, unanswered).
        .log_internal_errors(false)
        .init();
}
