//! `warden grants list|revoke`.

use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::json;
use warden_registry::{GrantId, LocationId, now_millis};

use super::Context;
use crate::cli::GrantsCommand;
use crate::render;

/// Run a `grants` subcommand.
pub(crate) async fn run(cx: &Context, command: GrantsCommand) -> Result<ExitCode> {
    let host = cx.host()?;
    let approvals = host.approvals();
    match command {
        GrantsCommand::List => {
            let location = LocationId::from(cx.location.as_str());
            let grants = approvals.grants(&location, now_millis()).await?;
            if cx.json {
                render::json(&grants);
            } else if grants.is_empty() {
                out!("no grants in `{}`", cx.location);
            } else {
                for grant in grants {
                    let session = grant.session.as_deref().unwrap_or("any session");
                    let expires = grant
                        .expires_at
                        .map_or_else(|| "until revoked".to_owned(), |t| format!("until {t} ms"));
                    out!(
                        "{}  {}  from {}  ({session}, {expires})",
                        grant.id,
                        grant.capability_id,
                        grant.origin.as_str()
                    );
                }
            }
        }
        GrantsCommand::Revoke { id } => {
            if !approvals.revoke_grant(&GrantId(id.clone())).await? {
                bail!("no live grant `{id}` (see `warden grants list`)");
            }
            if cx.json {
                render::json(&json!({ "grant_id": id, "revoked": true }));
            } else {
                out!("revoked {id}; the calls it covered need approval again");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
