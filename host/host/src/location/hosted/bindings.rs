//! The tools an `[mcp]` package publishes: its pinned `[[tools]]` before
//! discovery, then every tool of the accepted catalog (a pinned entry of the
//! same name overriding the remote one), each with the `[mcp]` gate matrix,
//! effects and permission, and only caution added from remote hints.

use std::sync::Arc;

use warden_core::{Effect, Permission, Visibility};
use warden_hosted::{HostedServer, InputCheck, RemoteTool};
use warden_manifest::{AssetRefs, Capability, McpServer, Package, ToolLimits};

use crate::error::HostError;
use crate::lane::mcp::McpLane;
use crate::location::Binding;

/// The bindings of an `[mcp]` package. Before discovery: its pinned tools.
/// After: every tool of the catalog (which replaces the pinned set, as the
/// format says), a pinned entry of the same name overriding the remote one.
pub(super) fn bindings(
    shared: &crate::host::Shared,
    package: &Package,
    mcp: &McpServer,
    server: &Arc<HostedServer>,
    content: &str,
    catalog: Option<&[RemoteTool]>,
) -> Result<Vec<Binding>, HostError> {
    let pinned = |name: &str| {
        package
            .capabilities
            .iter()
            .find(|c| c.local_name(&package.id) == name)
    };
    let mut capabilities: Vec<(String, Capability)> = catalog
        .unwrap_or_default()
        .iter()
        .map(|remote| {
            let mut cap = remote_capability(&package.id, mcp, remote);
            if let Some(pinned) = pinned(&remote.name) {
                cap = pinned_capability(pinned, cap.effects);
            }
            if remote.destructive {
                if !cap.effects.contains(&Effect::ExternalWrite) {
                    cap.effects.push(Effect::ExternalWrite);
                }
                // Only ever tightens: a pinned `deny` stays denied (it was
                // set to `ask`, which a person, or a product's consent,
                // can then pass).
                if cap.default_permission == Permission::Allow {
                    cap.default_permission = Permission::Ask;
                }
            }
            (remote.name.clone(), cap)
        })
        .collect();
    if catalog.is_none() {
        let effects = server_effects(mcp);
        capabilities.extend(package.capabilities.iter().map(|cap| {
            let name = cap.local_name(&package.id).to_owned();
            (name, pinned_capability(cap, effects.clone()))
        }));
    }
    let endpoint = server.endpoint();
    capabilities
        .into_iter()
        .map(|(remote_name, mut capability)| {
            // The endpoint's origin is all a hosted tool can reach.
            capability.credentials = endpoint.bind(&mcp.credentials);
            capability.network_targets = vec![endpoint.target()];
            capability.origin_gate_matrix = mcp.origin_gate_matrix;
            let schema = capability
                .input_schema
                .clone()
                .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
            let input = InputCheck::compile(&schema).map_err(|source| HostError::Hosted {
                package: package.id.clone(),
                source,
            })?;
            let lane = McpLane {
                server: server.clone(),
                remote_name,
                input,
                extension: package.id.clone(),
                credentials: capability.credentials.clone(),
                shared: shared.shared_accounts.clone(),
            };
            Ok(Binding::new(
                &shared.egress,
                &package.id,
                content,
                capability,
                Arc::new(lane),
            ))
        })
        .collect()
}

/// The effects of the server's tools: the `[mcp]` effects plus `network`
/// (and `use_secret` with credentials).
fn server_effects(mcp: &McpServer) -> Vec<Effect> {
    let mut effects = mcp.effects.clone();
    let implied = [
        Some(Effect::Network),
        (!mcp.credentials.is_empty()).then_some(Effect::UseSecret),
    ];
    for effect in implied.into_iter().flatten() {
        if !effects.contains(&effect) {
            effects.push(effect);
        }
    }
    effects
}

/// A pinned tool: its own id, description, schemas, permission and
/// visibility; the server's effects (the gate matrix, credentials and
/// target are the server's for every hosted tool).
fn pinned_capability(pinned: &Capability, effects: Vec<Effect>) -> Capability {
    Capability {
        effects,
        ..pinned.clone()
    }
}

/// A remote tool as a capability with the `[mcp]` table's policy. Its
/// permission is `ask` (the format's rule for discovered tools), or `deny`
/// where `[mcp] default_permission` denies: that permission is the hidden
/// template's, and what a server lists was never in the manifest a person
/// read, so it can be held back by it but never allowed. A pinned tool of
/// the same name keeps its own.
fn remote_capability(extension_id: &str, mcp: &McpServer, remote: &RemoteTool) -> Capability {
    let effects = server_effects(mcp);
    Capability {
        id: format!("{extension_id}.{}", remote.name),
        description: remote.description.clone(),
        effects,
        default_permission: match mcp.default_permission {
            Permission::Deny => Permission::Deny,
            _ => Permission::Ask,
        },
        visibility: Visibility::Model,
        origin_gate_matrix: mcp.origin_gate_matrix,
        standard_op: None,
        input_schema: Some(remote.input_schema.clone()),
        output_schema: remote.output_schema.clone(),
        prompt: None,
        refs: AssetRefs::default(),
        credentials: Vec::new(),
        network_targets: Vec::new(),
        max_egress_bytes: None,
        limits: ToolLimits::default(),
        mcp_pinned: false,
    }
}
