//! Approvals, grants, the audit log and the admin forms.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub(crate) enum AuditCommand {
    /// The last lines of the audit log, oldest first.
    Tail {
        /// How many lines.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum AdminCommand {
    /// The fields of a package's form: which are required, set, secret.
    Show {
        /// The package id.
        id: String,
    },
    /// Set a field (the value is prompted for, or read from stdin).
    Set {
        /// The package id.
        id: String,
        /// The field's handle, as the manifest declares it.
        field: String,
    },
    /// Remove a field's value.
    Unset {
        /// The package id.
        id: String,
        /// The field's handle.
        field: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum GrantsCommand {
    /// Live grants of the Location: capability, package, origin, session, expiry.
    List,
    /// Revoke a grant: calls it covered need approval again.
    Revoke {
        /// The grant id (from `warden grants list`).
        id: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ApprovalsCommand {
    /// Pending approval requests of the Location.
    List,
    /// Approve a request (then run the call with `warden call ... --resume <ID>`).
    Approve {
        /// The approval id.
        id: String,
        /// Also grant future calls of this tool in this Location.
        #[arg(long)]
        grant: bool,
    },
    /// Deny a request.
    Deny {
        /// The approval id.
        id: String,
        /// Feedback the model sees.
        #[arg(long)]
        feedback: Option<String>,
    },
}
