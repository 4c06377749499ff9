//! `warden`: run sandboxed WebAssembly tools from the command line, or serve
//! them to an MCP client.
//!
//! ```text
//! warden list
//! warden call echo.echo --input '{"text": "hello", "transform": "upper"}'
//! printf %s "$TOKEN" | warden secret set github github_runtime_token --scope repo
//! warden serve            # MCP over stdio
//! ```

/// `eprintln!` that never panics: a server whose stderr was closed (a
/// parent that stopped reading it) keeps serving, and says nothing.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod backend;
mod cli;
mod commands;
mod render;
mod settings;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the system allocator: a call allocates and frees a
/// few hundred small blocks (JSON values, rmcp's messages, wasmtime's store),
/// on which glibc's allocator spent a tenth to a sixth of `serve`'s CPU
/// (a call costs 0.92-0.96x as much with mimalloc).
/// Built without transparent huge pages (`no_thp` in Cargo.toml), which took
/// the resident size from 33 to 48 MiB (BENCHMARKS.md, "The allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_tracing(matches!(cli.command, cli::Command::Serve { .. }));
    // One worker (`serve` over stdio by default) is a current-thread
    // runtime: the same single executor, without the multi-thread
    // scheduler's per-wake bookkeeping (BENCHMARKS.md, "Server CPU per call
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
            eprintln!("error: starting the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(error) => {
            // Errors carry text from outside (arguments, manifests, remote
            // servers' metadata): shown, never sent to the terminal as controls.
            eprintln!(
                "error: {}",
                render::escape_text(&format!("{error:#}"), true)
            );
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout carries results, or MCP messages for `serve`);
/// `RUST_LOG` tunes them.
fn init_tracing(serving: bool) {
    let default = if serving { "warn" } else { "error" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        // An event that cannot be written is dropped: reporting it went
        // through `eprintln!`, whose panic, once stderr was closed, ended
        // the task that logged (an HTTP connection, unanswered).
        .log_internal_errors(false)
        .init();
}
