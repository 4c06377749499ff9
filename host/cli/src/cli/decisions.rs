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

#[cfg(test)]
mod tests {
    use super::*;

    fn workers(args: &[&str]) -> Result<Option<usize>, clap::Error> {
        let argv = ["warden"].iter().chain(args);
        Ok(Cli::try_parse_from(argv)?.command.worker_threads())
    }

    #[test]
    fn stdio_serves_on_one_worker_unless_told() {
        assert_eq!(workers(&["serve"]).unwrap(), Some(1));
        assert_eq!(workers(&["serve", "--workers", "4"]).unwrap(), Some(4));
    }

    #[test]
    fn http_and_other_commands_use_one_worker_per_core() {
        assert_eq!(workers(&["serve", "--http", "127.0.0.1:0"]).unwrap(), None);
        assert_eq!(workers(&["list"]).unwrap(), None);
    }

    #[test]
    fn memory_budget_takes_binary_units_and_refuses_less_than_one_call() {
        let budget = |args: &[&str]| {
            let argv = ["warden", "serve"].iter().chain(args);
            Cli::try_parse_from(argv).map(|cli| match cli.command {
                Command::Serve(serve) => serve.memory_budget,
                _ => unreachable!(),
            })
        };
        assert_eq!(budget(&[]).unwrap(), None);
        assert_eq!(budget(&["--memory-budget", "8GiB"]).unwrap(), Some(8 << 30));
        assert_eq!(
            budget(&["--memory-budget", "512MiB"]).unwrap(),
            Some(512 << 20)
        );
        assert_eq!(
            budget(&["--memory-budget", "67108864"]).unwrap(),
            Some(64 << 20)
        );
        for bad in ["1MiB", "lots", "8GB", "99999999999GiB"] {
            let error = budget(&["--memory-budget", bad]).unwrap_err();
            assert!(error.to_string().contains("--memory-budget"), "{error}");
        }
    }

    #[test]
    fn zero_workers_is_refused() {
        let error = workers(&["serve", "--workers", "0"]).unwrap_err();
        assert!(error.to_string().contains("--workers"), "{error}");
    }
}
