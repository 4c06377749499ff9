//! The locked-down WASI 0.2 of components built for `wasm32-wasip2`.
//!
//! Only the interfaces of [`warden_core::wasi::WASI_ALLOWED`] are linked:
//! `wasi:sockets/*`, `wasi:http/*` and everything else stay absent from the
//! linker, so a component importing them is refused at install, naming the
//! import. The context a call gets has no preopened directory (every path
//! fails to open), no environment variables, no arguments, a closed stdin,
//! and stdout/stderr captured into the call's log (see [`stdio`]).
//!
//! The context is created lazily, on a component's first WASI call: a
//! contract-only component never pays for it.

mod stdio;

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, io, random};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::state::CallState;

/// The WASI side of one call: its context and the captured stdio.
pub(crate) struct WasiState {
    ctx: WasiCtx,
    pub(crate) stdout: stdio::LogPipe,
    pub(crate) stderr: stdio::LogPipe,
}

/// The most random bytes one `get-random-bytes` call returns (a seed or a
/// key needs a few dozen).
const MAX_RANDOM_BYTES: u64 = 64 << 10;

impl WasiState {
    /// A locked-down context whose stdout and stderr each keep at most
    /// `capture_bytes` bytes.
    fn new(capture_bytes: usize) -> WasiState {
        let stdout = stdio::LogPipe::new(capture_bytes);
        let stderr = stdio::LogPipe::new(capture_bytes);
        // The builder's defaults are already closed: no env, args, preopens;
        // stdin closed; sockets denied. Say so explicitly anyway, so a change
        // of defaults upstream cannot open anything.
        let ctx = WasiCtx::builder()
            .stdin(wasmtime_wasi::p2::pipe::ClosedInputStream)
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            // A guest asked for 64 MiB of random bytes at a time (the
            // default bound), allocated on the host outside its budget.
            .max_random_size(MAX_RANDOM_BYTES)
            .build();
        WasiState {
            ctx,
            stdout,
            stderr,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let capture = self.stdio_capture_bytes();
        let wasi = self
            .wasi
            .get_or_insert_with(|| Box::new(WasiState::new(capture)));
        WasiCtxView {
            ctx: &mut wasi.ctx,
            table: &mut self.table,
        }
    }
}

/// `wasi:io` host traits are implemented on the resource table itself.
struct IoTable;

impl HasData for IoTable {
    type Data<'a> = &'a mut ResourceTable;
}

fn io_table(state: &mut CallState) -> &mut ResourceTable {
    &mut state.table
}

/// Link the allowed WASI interfaces (async variants) into `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    type S = CallState;
    let l = linker;
    io::error::add_to_linker::<S, IoTable>(l, io_table)?;
    io::poll::add_to_linker::<S, IoTable>(l, io_table)?;
    io::streams::add_to_linker::<S, IoTable>(l, io_table)?;
    clocks::wall_clock::add_to_linker::<S, WasiClocks>(l, S::clocks)?;
    clocks::monotonic_clock::add_to_linker::<S, WasiClocks>(l, S::clocks)?;
    filesystem::types::add_to_linker::<S, WasiFilesystem>(l, S::filesystem)?;
    filesystem::preopens::add_to_linker::<S, WasiFilesystem>(l, S::filesystem)?;
    random::random::add_to_linker::<S, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    random::insecure::add_to_linker::<S, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<S, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    cli::exit::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::environment::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::stdin::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::stdout::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::stderr::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::terminal_input::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::terminal_output::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::terminal_stdin::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::terminal_stdout::add_to_linker::<S, WasiCli>(l, S::cli)?;
    cli::terminal_stderr::add_to_linker::<S, WasiCli>(l, S::cli)?;
    Ok(())
}
