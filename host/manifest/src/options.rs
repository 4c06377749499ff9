//! What the host tells the validator.

use std::collections::BTreeSet;

/// Largest accepted `manifest.toml` by default (256 KiB).
pub const DEFAULT_MAX_MANIFEST_BYTES: usize = 256 * 1024;
/// Largest accepted schema file (64 KiB).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Largest accepted prompt doc (16 KiB).
pub const MAX_PROMPT_BYTES: usize = 16 * 1024;

/// Host-side inputs to validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Capability ids the host has reviewed for `loop_run = "ungated"`.
    pub ungated_loop_run_allowlist: BTreeSet<String>,
    /// Check that the `[runtime] module` file exists (it is a build output; off by default).
    pub require_module: bool,
    /// Largest accepted manifest, in bytes.
    pub max_manifest_bytes: usize,
    /// Accept `scheme = "http"` in `network_targets` (off by default: HTTPS only).
    pub allow_http_network_targets: bool,
    /// Vendors whose auth recipe the host composition supplies, so tools may
    /// use them without an `[auth.<vendor>]` table.
    pub host_auth_vendors: BTreeSet<String>,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        ValidationOptions {
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

    /// Require the wasm module to exist.
    pub fn require_module(mut self, yes: bool) -> Self {
        self.require_module = yes;
        self
    }
}
