//! The resolved package model: what later layers use instead of TOML.

use std::collections::BTreeMap;
use std::path::PathBuf;

use warden_core::spec::{Audience, AuthRecipe, CredentialSpec, NetworkTarget};
use warden_core::{Effect, GateMatrix, Permission, Visibility};

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
}

/// The trust a manifest requests. Ordered from least to most trusted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// A registry or user-installed extension (the default).
    ThirdParty,
    /// Shipped by the host's vendor.
    FirstParty,
    /// Part of the host itself.
    System,
}

impl Trust {
    /// Every value, in order.
    pub const ALL: &'static [Trust] = &[Trust::ThirdParty, Trust::FirstParty, Trust::System];

    /// The manifest word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Trust::ThirdParty => "third_party",
            Trust::FirstParty => "first_party",
            Trust::System => "system",
        }
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
    /// `[runtime] kind = "first_party"`: implemented by the host.
    FirstParty,
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
    pub max_tools: u64,
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
    /// `default_permission` (default `ask`).
    pub default_permission: Permission,
    /// `visibility` (default `model`).
    pub visibility: Visibility,
    /// Per-origin gate policies; omitted origins are forbidden.
    pub origin_gate_matrix: GateMatrix,
    /// A host-canonical operation supplying the schemas, when bound.
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
    /// Per-tool resource limits; the runtime caps them by host maxima.
    pub limits: ToolLimits,
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

/// `[tools.limits]`: optional per-tool requests, bounded by the host's maxima.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ToolLimits {
    /// Fuel per call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Linear memory per instance, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Wall-clock deadline per call, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Bound on the output size, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
}
