//! How a host is set up: where it keeps data, its limits, its egress.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use warden_egress::EgressConfig;
use warden_hosted::{LaneLimits, ServerSettings};
use warden_registry::{AllowlistEntry, BoundConfig};
use warden_runtime::RuntimeConfig;

/// How long the store keeps what is settled, by default.
pub const DEFAULT_STORE_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Everything a [`crate::Host`] is built from. Defaults are the safe ones:
/// deny-by-default egress, HTTPS only, every runtime limit on.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Where the host keeps its approvals database, encrypted secrets,
    /// compiled-component cache and spilled outputs. `None` keeps everything
    /// in memory (stores) or in a temporary directory (spilled outputs).
    pub data_dir: Option<PathBuf>,
    /// Runtime limits, allocator and concurrency. `cache_dir` defaults to
    /// `<data_dir>/cache` when unset.
    pub runtime: RuntimeConfig,
    /// Egress timeouts, body limits, trust roots and explicit exceptions.
    pub egress: EgressConfig,
    /// Capabilities reviewed for `loop_run = "ungated"`, each bound to the
    /// package it was reviewed in: a content digest, or (without one) the
    /// package built into the binary. An entry never applies to a package
    /// installed from outside under the same id, and installing a package
    /// whose allowlisted capability declares any effect is refused.
    pub ungated_allowlist: Vec<AllowlistEntry>,
    /// Output bounding after execution. `spill_dir` defaults to `<data_dir>/outputs`.
    pub bound: BoundConfig,
    /// How long an approval's lease may wait to be used.
    pub lease_ttl: Duration,
    /// How long settled approvals, their leases and ended grants are kept
    /// before [`crate::Host::prune_store`] deletes them (default 30 days;
    /// a pending approval is kept whatever its age).
    pub store_retention: Duration,
    /// Limits of the hosted-MCP lane: call timeout, response and result
    /// bounds, and how often a server's catalog is listed again.
    pub hosted: LaneLimits,
    /// A hosted server's own settings, by package id (`warden mcp add
    /// --timeout`, `[mcp.servers.<id>]`): its call timeout, whether its
    /// requests of the caller are relayed.
    pub hosted_servers: BTreeMap<String, ServerSettings>,
    /// Packages whose tools the host runs without their `[channel]` surface
    /// (by package id; warden.toml `[packages] tools_without_channel`).
    /// Warden runs tools, not channels: a package declaring one is refused
    /// unless its operator lists it here, knowing the channel stays off.
    pub tools_without_channel: BTreeSet<String>,
    /// Vendors whose deployment accounts (stored without an owner) also
    /// serve authenticated callers that have none of their own (warden.toml
    /// `[accounts] shared`). Every other vendor's accounts are per caller:
    /// a call made for a caller ([`crate::Invocation::for_caller`]) uses
    /// that caller's accounts only.
    pub shared_accounts: Vec<String>,
    /// The origin people reach this host at (`warden serve --public-url`,
    /// e.g. `https://warden.example.com`): OAuth connections made for a
    /// remote person return to `<public_url>/oauth/callback` on it, which
    /// the server serves, instead of a loopback listener. `https`, or
    /// `http` on a loopback address; no path, query or fragment.
    pub public_url: Option<String>,
    /// The operator's trust in packages it installs, by package id, each
    /// pinned to a content digest (warden.toml `[trust]`; see
    /// [`crate::TrustPin`]).
    pub trust_pins: BTreeMap<String, crate::TrustPin>,
    /// The keys the operator trusts to sign packages (warden.toml
    /// `[trust.signers.<name>]`): a package one of them signed runs with
    /// that signer's trust (see [`crate::signature`]).
    pub signers: Vec<crate::TrustedSigner>,
    /// Refuse an installed package no trusted signer signed (warden.toml
    /// `[trust] require_signature`); built-in and the operator's own
    /// packages are the deployment's and need none.
    pub require_signature: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            data_dir: None,
            runtime: RuntimeConfig::default(),
            egress: EgressConfig::default(),
            ungated_allowlist: warden_core::REVIEWED_UNGATED_LOOP_RUN
                .iter()
                .map(AllowlistEntry::from)
                .collect(),
            bound: BoundConfig::default(),
            lease_ttl: Duration::from_secs(600),
            store_retention: DEFAULT_STORE_RETENTION,
            hosted: LaneLimits::default(),
            hosted_servers: BTreeMap::new(),
            tools_without_channel: BTreeSet::new(),
            shared_accounts: Vec::new(),
            public_url: None,
            trust_pins: BTreeMap::new(),
            signers: Vec::new(),
            require_signature: false,
        }
    }
}
