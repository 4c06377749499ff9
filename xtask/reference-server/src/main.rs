//! `bench-reference`: the least a newline-JSON-RPC MCP server over stdio can
//! do per `echo` call, measured by `cargo xtask bench-mcp --clients` run by
//! run beside `warden serve`, so that what any server pays for a client's
//! write pattern and placement can be told apart from what Warden does.
//!
//! It reads stdin the way `warden serve`'s current-thread runtime does — the
//! pipe non-blocking, registered edge-triggered with `epoll`, read until a
//! short read, then back to `epoll_wait` — parses each line with
//! `serde_json`, and answers `initialize` and `tools/call` of `echo_echo`
//! with what the bundled echo tool answers for `"transform": "upper"` (the
//! text upper-cased and its length), each answer written whole
//! (`write_all`, one `write(2)` for a line this size). No MCP library, no
//! sandbox, no authorization, no audit line.
//!
//! The benchmark builds it in the release profile, as it builds `warden`:
//! unoptimised, `serde_json` alone took 25 µs per line instead of 3.
//!
//! Limits, by design of a baseline: stdin must be a pipe (as MCP clients
//! spawn servers); a line that is not JSON ends the server with an error;
//! Linux only (`epoll`).

#[cfg(target_os = "linux")]
mod serve;

fn main() -> std::process::ExitCode {
    #[cfg(target_os = "linux")]
    let result = serve::serve();
    #[cfg(not(target_os = "linux"))]
    let result: anyhow::Result<()> =
        Err(anyhow::anyhow!("the reference server runs on Linux only"));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench-reference: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
