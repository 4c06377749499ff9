//! `warden audit tail`.

use std::process::ExitCode;

use anyhow::Result;
use warden_host::{AuditEntry, audit_tail};

use super::Context;
use crate::cli::AuditCommand;
use crate::render;

/// Run an `audit` subcommand.
pub(crate) fn run(cx: &Context, command: AuditCommand) -> Result<ExitCode> {
    match command {
        AuditCommand::Tail { lines } => {
            let tail = audit_tail(&cx.audit_path(), lines)?;
            if cx.json {
                // Lines that do not parse (a torn write) are left out.
                let entries: Vec<AuditEntry> = tail
                    .iter()
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect();
                render::json(&entries);
            } else {
                for line in tail {
                    out!("{line}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
