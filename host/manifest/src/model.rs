//! The resolved package model: what later layers use instead of TOML.

use std::collections::BTreeMap;
use std::path::PathBuf;

use warden_core::spec::{Audience, AuthRecipe, CredentialSpec, NetworkTarget};

pub use crate::surfaces::{AdminConfiguration, AdminField};
use warden_core::{Effect, GateMatrix, Permission, Visibility};

use crate::Unsupported;

/// A validated extension package.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Package {
    /// Extension id (`github`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Package version (`0.1.0`).
    pub version: String,
    /// Short description.
    pub description: String,
    /// The trust the manifest asks for; the host decides the effective trust
    /// (see [`Package::effective_trust`]).
    pub requested_trust: Trust,
    /// How the tools run.
    pub implementation: Implementation,
    /// The package directory (or the bundle's virtual root).
    #[serde(skip)]
    pub root: PathBuf,
    /// The `[[tools]]`, in manifest order.
    pub capabilities: Vec<Capability>,
    /// `[auth.<vendor>]` recipes by vendor.
    pub auth: BTreeMap<String, AuthRecipe>,
    /// `[admin_configuration]`: the operator form of a bundled package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_configuration: Option<AdminConfiguration>,
    /// Whether the manifest declares a `[memory]` provider surface.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub memory: bool,
    /// Whether the manifest declares a `[channel]` surface.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub channel: bool,
}

impl Package {
    /// The capability with id `id`.
    pub fn capability(&self, id: &str) -> Option<&Capability> {
        self.capabilities.iter().find(|c| c.id == id)
    }

    /// Every package-relative file the manifest refers to (module, schemas,
    /// prompts), sorted and deduplicated: what a bundle must carry.
    pub fn files(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .capabilities
            .iter()
            .flat_map(|c| {
                [
                    &c.refs.input_schema,
                    &c.refs.output_schema,
                    &c.refs.prompt_doc,
                ]
            })
            .filter_map(|r| r.as_deref())
            .collect();
        if let Implementation::Wasm { module } = &self.implementation {
            out.push(module);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The trust to run with: the requested trust, capped by what the host grants this package.
    pub fn effective_trust(&self, host_grants: Trust) -> Trust {
        self.requested_trust.min(host_grants)
    }

    /// Every surface or mechanism the package declares that the format has
    /// but Warden does not run: a `[channel]` or `[memory]` surface, a
    /// `first_party` service not in `registered_services`, a `device_link`
    /// recipe, an injection type egress does not perform. Install refuses a
    /// package with any it has not waived ([`crate::refusal`]); `warden check`
    /// reports the same list.
    pub fn unsupported(&self, registered_services: &[&str]) -> Vec<Unsupported> {
        let mut reasons = Vec::new();
        if self.channel {
            reasons.push(Unsupported::Channel);
        }
        if self.memory {
            reasons.push(Unsupported::Memory);
        }
        if let Implementation::FirstParty { service } = &self.implementation
            && !registered_services.contains(&service.as_str())
        {
            reasons.push(Unsupported::FirstPartyService(service.clone()));
        }
        for (vendor, recipe) in &self.auth {
            if matches!(recipe, AuthRecipe::DeviceLink(_)) {
                reasons.push(Unsupported::DeviceLink(vendor.clone()));
            }
        }
        let credentials = self.capabilities.iter().flat_map(|c| &c.credentials);
        let mcp = match &self.implementation {
            Implementation::Mcp(m) => &m.credentials[..],
            _ => &[],
        };
        for cred in credentials.chain(mcp) {
            let kind = Unsupported::Injection(cred.injection.type_name());
            if !cred.injection.is_supported() && !reasons.contains(&kind) {
                reasons.push(kind);
            }
        }
        reasons
    }

    /// [`Package::unsupported`], waiving nothing, as a refusal.
    pub fn unsupported_lane(&self, registered_services: &[&str]) -> Option<String> {
        crate::refusal(&self.id, &self.unsupported(registered_services))
    }
}

/// The trust a manifest requests (`trust`, default `untrusted`). Ordered from
/// least to most trusted. Only a host-bundled package may request
/// `first_party_requested` or `system_requested`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// No claim (the default).
    Untrusted,
    /// A registry or user-installed extension.
    ThirdParty,
    /// Shipped by the host's vendor (host-bundled only).
    FirstPartyRequested,
    /// Part of the host itself (host-bundled only).
    SystemRequested,
}

#[allow(non_upper_case_globals)]
impl Trust {
    /// Former name of [`Trust::FirstPartyRequested`] (the format's word is
    /// `first_party_requested`; `first_party` is refused).
    pub const FirstParty: Trust = Trust::FirstPartyRequested;
    /// Former name of [`Trust::SystemRequested`].
    pub const System: Trust = Trust::SystemRequested;

    /// Every value, in order.
    pub const ALL: &'static [Trust] = &[
        Trust::Untrusted,
        Trust::ThirdParty,
        Trust::FirstPartyRequested,
        Trust::SystemRequested,
    ];

    /// The manifest word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Trust::Untrusted => "untrusted",
            Trust::ThirdParty => "third_party",
            Trust::FirstPartyRequested => "first_party_requested",
            Trust::SystemRequested => "system_requested",
        }
    }

    /// Whether only a host-bundled package may request it.
    pub const fn is_bundled_only(self) -> bool {
        matches!(self, Trust::FirstPartyRequested | Trust::SystemRequested)
    }
}

impl std::fmt::Display for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The single implementation of a package.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Implementation {
    /// `[runtime] kind = "wasm"`: a component in the package.
    Wasm {
        /// Package-relative path of the component (a build output).
        module: String,
    },
    /// `[runtime] kind = "first_party"`: implemented in-process by the
    /// embedder's registered `service` (host-bundled only).
    FirstParty {
        /// The name of the host service that implements the tools.
        service: String,
    },
    /// `[mcp]`: a hosted MCP server.
    Mcp(McpServer),
}

/// A resolved `[mcp]` table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct McpServer {
    /// The HTTPS endpoint.
    pub server: String,
    /// The origin derived from `server`; credentials may go there only.
    pub audience: Audience,
    /// Prefix of the tools the server exposes.
    pub namespace: String,
    /// Most tools the host will take from the server.
    pub max_tools: u32,
    /// Permission of the server's tools.
    pub default_permission: Permission,
    /// Effects of the server's tools.
    pub effects: Vec<Effect>,
    /// Gate matrix of the server's tools.
    pub origin_gate_matrix: GateMatrix,
    /// Credentials, with the audience derived from `server`.
    pub credentials: Vec<CredentialSpec>,
}

/// One resolved `[[tools]]` entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Capability {
    /// `<extension_id>.<name>`.
    pub id: String,
    /// Model-facing description.
    pub description: String,
    /// Declared effects, in manifest order.
    pub effects: Vec<Effect>,
    /// `default_permission` (required).
    pub default_permission: Permission,
    /// `visibility` (default `model`).
    pub visibility: Visibility,
    /// Per-origin gate policies; omitted origins are forbidden.
    pub origin_gate_matrix: GateMatrix,
    /// The standard operation the tool binds, when it binds one: its schemas
    /// and the start of its description are then the host's
    /// ([`crate::standard`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standard_op: Option<String>,
    /// The parsed input schema.
    pub input_schema: Option<serde_json::Value>,
    /// The parsed output schema (optional in v3).
    pub output_schema: Option<serde_json::Value>,
    /// The prompt doc text.
    pub prompt: Option<String>,
    /// The package-relative paths the schemas and prompt were read from.
    pub refs: AssetRefs,
    /// Credentials the runtime may receive.
    pub credentials: Vec<CredentialSpec>,
    /// Credential-free egress targets.
    pub network_targets: Vec<NetworkTarget>,
    /// Bound on the bytes one call may send and receive, when declared.
    pub max_egress_bytes: Option<u64>,
    /// Per-tool resource limits from `resource_profile.hard_ceiling`; the
    /// runtime caps them by host maxima.
    pub limits: ToolLimits,
    /// Whether this is a pinned tool of an `[mcp]` manifest (it inherits the
    /// server's effects, credentials and gate matrix).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mcp_pinned: bool,
}

impl Capability {
    /// The part of the id after `<extension_id>.`.
    pub fn local_name<'a>(&'a self, extension_id: &str) -> &'a str {
        self.id
            .strip_prefix(extension_id)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(&self.id)
    }

    /// Whether any effect is write-class.
    pub fn is_write(&self) -> bool {
        self.effects.iter().any(|e| e.is_write())
    }
}

/// The `*_ref` fields of a tool, as written (package-relative).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AssetRefs {
    /// `input_schema_ref`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<String>,
    /// `output_schema_ref`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// `prompt_doc_ref`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_doc: Option<String>,
}

/// Per-tool limits, read from the format's `resource_profile.hard_ceiling`
/// and bounded by the host's maxima:
/// `sandbox.memory_bytes` -> `memory_bytes`, `max_wall_clock_ms` ->
/// `timeout_ms`, `max_output_bytes` -> `max_output_bytes`. The format has no
/// fuel field; `fuel` is for embedders and per-call requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ToolLimits {
    /// Fuel per call (not in the format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Linear memory per instance, in bytes (`hard_ceiling.sandbox.memory_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Wall-clock deadline per call, in milliseconds (`hard_ceiling.max_wall_clock_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Bound on the output size, in bytes (`hard_ceiling.max_output_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
}
