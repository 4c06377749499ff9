//! `warden admin show|set|unset`: the values of a package's
//! `[admin_configuration]` (see [`warden_host::AdminValue`]).

use std::process::ExitCode;

use anyhow::Result;

use super::Context;
use super::secret::read_value;
use crate::cli::AdminCommand;
use crate::render;

/// Run an `admin` subcommand.
pub(crate) async fn run(cx: &Context, command: AdminCommand) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    match command {
        AdminCommand::Show { id } => {
            let values = location.admin_values(&id).await?;
            if cx.json {
                render::json(&values);
                return Ok(ExitCode::SUCCESS);
            }
            let missing = values.iter().filter(|v| v.field.required && !v.set).count();
            if let Some(first) = values.first() {
                out!("{id}: form `{}`", render::escape(&first.group));
            }
            for v in &values {
                let state = match (&v.value, v.set, v.field.secret) {
                    (Some(value), _, _) => format!("= {}", render::escape(value)),
                    (None, true, _) => "set (secret)".to_owned(),
                    (None, false, _) if v.field.host_managed => "host-managed".to_owned(),
                    (None, false, _) if v.field.required => "missing (required)".to_owned(),
                    (None, false, _) => "not set".to_owned(),
                };
                out!(
                    "  {:<24} {}  ({})",
                    render::escape(&v.field.handle),
                    state,
                    render::escape(&v.field.label)
                );
            }
            if missing > 0 {
                out!("  {missing} required field(s) not set: `warden admin set {id} <field>`");
            }
        }
        AdminCommand::Set { id, field } => {
            let value = read_value(&format!("{id} {field}"))?;
            let declared = location.set_admin_value(&id, &field, value).await?;
            if cx.json {
                render::json(
                    &serde_json::json!({ "set": field, "package": id, "secret": declared.secret }),
                );
            } else {
                out!("set {field} of {id}");
            }
        }
        AdminCommand::Unset { id, field } => {
            let removed = location.unset_admin_value(&id, &field).await?;
            if cx.json {
                render::json(
                    &serde_json::json!({ "unset": field, "package": id, "was_set": removed }),
                );
            } else if removed {
                out!("unset {field} of {id}");
            } else {
                out!("{field} of {id} was not set");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
