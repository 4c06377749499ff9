//! `warden call`: its options and the invocation origins.

use clap::{Args, ValueEnum};

#[derive(Args, Debug)]
pub(crate) struct CallArgs {
    /// Capability id (`echo.echo`) or model name (`echo_echo`).
    pub(crate) tool: String,
    /// The input: JSON text, or `@path` to read it from a file (`@-` for stdin).
    #[arg(long, short)]
    pub(crate) input: String,
    /// Who is calling. A person at a terminal is the `product` origin; use
    /// `loop-run` to call as a model would.
    #[arg(long, value_enum, default_value_t = OriginArg::Product)]
    pub(crate) origin: OriginArg,
    /// Approve this call once without asking (for scripts).
    #[arg(long, conflicts_with = "resume")]
    pub(crate) approve_once: bool,
    /// Run a call approved earlier with `warden approvals approve <ID>` (same input).
    #[arg(long, value_name = "APPROVAL_ID")]
    pub(crate) resume: Option<String>,
    /// Write every HTTP exchange the tool made through the host to FILE
    /// (redacted: credentials appear as placeholders).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub(crate) record: Option<std::path::PathBuf>,
    /// Answer the tool's HTTP from a FILE written by `--record`, without
    /// network or account; a request the file does not hold fails the call
    /// with a diff (exit code 4).
    #[arg(long, value_name = "FILE")]
    pub(crate) replay: Option<std::path::PathBuf>,
    /// Save the data a tool returns (images, audio, a resource's bytes) as
    /// files in DIR, one line per file saying where; without it such data
    /// is named, not shown.
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: Option<std::path::PathBuf>,
}

/// Invocation origins.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum OriginArg {
    /// The model, in an agent loop.
    LoopRun,
    /// A person, in the product.
    Product,
    /// An automation.
    Automation,
}

impl From<OriginArg> for warden_core::Origin {
    fn from(origin: OriginArg) -> Self {
        match origin {
            OriginArg::LoopRun => warden_core::Origin::LoopRun,
            OriginArg::Product => warden_core::Origin::Product,
            OriginArg::Automation => warden_core::Origin::Automation,
        }
    }
}
