//! `warden approvals list|approve|deny`.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;
use warden_host::{ApprovalId, Resolution};
use warden_registry::{GrantTerms, LocationId, now_millis};

use super::Context;
use crate::cli::ApprovalsCommand;
use crate::render;

/// Run an `approvals` subcommand.
pub(crate) async fn run(cx: &Context, command: ApprovalsCommand) -> Result<ExitCode> {
    let host = cx.host()?;
    let approvals = host.approvals();
    match command {
        ApprovalsCommand::List => {
            let pending = approvals
                .pending(&LocationId::from(cx.location.as_str()))
                .await?;
            if cx.json {
                render::json(&pending);
            } else if pending.is_empty() {
                out!("no pending approvals in `{}`", cx.location);
            } else {
                for request in pending {
                    out!(
                        "{}  {}  ({})  input: {}",
                        request.id,
                        request.capability_id,
                        request.rule,
                        request.input
                    );
                }
            }
        }
        ApprovalsCommand::Approve { id, grant } => {
            let resolution = if grant {
                Resolution::ApproveAndGrant(GrantTerms::default())
            } else {
                Resolution::ApproveOnce
            };
            let resolved = approvals
                .resolve(&ApprovalId(id.clone()), resolution, now_millis())
                .await?;
            if cx.json {
                render::json(
                    &json!({ "approval_id": id, "state": resolved.state, "granted": resolved.grant.is_some() }),
                );
            } else {
                out!("approved {id}; make the identical call again (or add `--resume {id}`)");
            }
        }
        ApprovalsCommand::Deny { id, feedback } => {
            let resolution = match feedback {
                Some(text) => Resolution::DenyWithFeedback(text),
                None => Resolution::Deny,
            };
            let resolved = approvals
                .resolve(&ApprovalId(id.clone()), resolution, now_millis())
                .await?;
            if cx.json {
                render::json(&json!({ "approval_id": id, "state": resolved.state }));
            } else {
                out!("denied {id}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
