//! What the host tells the validator.

use std::collections::BTreeSet;

/// Largest accepted `manifest.toml` by default (256 KiB).
pub const DEFAULT_MAX_MANIFEST_BYTES: usize = 256 * 1024;
/// Largest accepted schema file (64 KiB).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Largest accepted prompt doc (16 KiB).
pub const MAX_PROMPT_BYTES: usize = 16 * 1024;
/// Most bytes of schemas and prompt docs one package may reference, each
/// reference counted (4 MiB): a file is stored once however many tools
/// name it, but each reference is parsed and compiled on its own, so a
/// small package naming one schema thousands of times held gigabytes.
pub const MAX_REFERENCED_BYTES: usize = 4 * 1024 * 1024;

/// Where a package comes from; the loader says it, a manifest never does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Source {
    /// Compiled into the host binary (digest-verified). Only bundled packages
    /// may request `first_party_requested`/`system_requested` trust, use a
    /// `first_party` runtime or `[admin_configuration]`, or take an id with
    /// a reserved prefix ([`RESERVED_ID_PREFIXES`]).
    Bundled,
    /// Installed from a directory, an archive or a registry (the default).
    #[default]
    Installed,
    /// Registered by the user (`warden mcp add`); only these may take an
    /// id starting with `mcp-`.
    User,
}

impl Source {
    /// Every tier.
    pub const ALL: &'static [Source] = &[Source::Bundled, Source::Installed, Source::User];

    /// The word `warden check --as` takes.
    pub const fn as_str(self) -> &'static str {
        match self {
            Source::Bundled => "bundled",
            Source::Installed => "installed",
            Source::User => "user",
        }
    }
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(word: &str) -> Result<Self, String> {
        Source::ALL
            .iter()
            .copied()
            .find(|s| s.as_str() == word)
            .ok_or_else(|| {
                format!("unknown package source `{word}`; use bundled, installed or user")
            })
    }
}

/// Id prefixes reserved for host-bundled packages.
pub const RESERVED_ID_PREFIXES: &[&str] = &["warden.", "ironclaw."];
/// Id prefix reserved for user-registered packages.
pub const USER_ID_PREFIX: &str = "mcp-";

/// Host-side inputs to validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Where the package comes from (default [`Source::Installed`]).
    pub source: Source,
    /// Capability ids the host has reviewed for `loop_run = "ungated"`.
    pub ungated_loop_run_allowlist: BTreeSet<String>,
    /// Check that the `[runtime] module` file exists (it is a build output; off by default).
    pub require_module: bool,
    /// Largest accepted manifest, in bytes.
    pub max_manifest_bytes: usize,
    /// Accepted for compatibility; `scheme = "http"` network targets always
    /// pass the check (the format allows them) and egress refuses plain HTTP
    /// unless the host allows it.
    pub allow_http_network_targets: bool,
    /// Vendors whose auth recipe the host composition supplies, so tools may
    /// use them without an `[auth.<vendor>]` table.
    pub host_auth_vendors: BTreeSet<String>,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        ValidationOptions {
            source: Source::default(),
            ungated_loop_run_allowlist: BTreeSet::new(),
            require_module: false,
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
            allow_http_network_targets: false,
            host_auth_vendors: BTreeSet::new(),
        }
    }
}

impl ValidationOptions {
    /// Allow `loop_run = "ungated"` for `capability_id`.
    pub fn allow_ungated_loop_run(mut self, capability_id: impl Into<String>) -> Self {
        self.ungated_loop_run_allowlist.insert(capability_id.into());
        self
    }

    /// Allow `loop_run = "ungated"` for every id of `allowlist`.
    pub fn with_ungated_allowlist<S: Into<String>>(
        mut self,
        allowlist: impl IntoIterator<Item = S>,
    ) -> Self {
        self.ungated_loop_run_allowlist
            .extend(allowlist.into_iter().map(Into::into));
        self
    }

    /// The defaults with the host's reviewed `ungated` allowlist
    /// ([`warden_core::REVIEWED_UNGATED_LOOP_RUN`]): what `warden check` and
    /// `cargo xtask check` validate with.
    pub fn reviewed() -> Self {
        Self::default().with_ungated_allowlist(
            warden_core::REVIEWED_UNGATED_LOOP_RUN
                .iter()
                .map(|entry| entry.capability_id),
        )
    }

    /// Validate as a package from `source`.
    pub fn source(mut self, source: Source) -> Self {
        self.source = source;
        self
    }

    /// Require the wasm module to exist.
    pub fn require_module(mut self, yes: bool) -> Self {
        self.require_module = yes;
        self
    }
}
