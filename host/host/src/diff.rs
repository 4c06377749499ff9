//! What a new version of a package changes in what it may do, shown before
//! `install --replace` puts it in place: tools, effects, network targets,
//! credentials and their scopes and audiences, gate matrix cells, default
//! permissions, trust, auth recipes and an MCP server. A version that
//! quietly gains `external_write` or a new host is noticed: every change
//! that lets it do more is marked as widening, and the CLI asks before
//! installing one (or takes `--yes`). Grants already end on a digest change.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use warden_core::spec::CredentialSpec;
use warden_core::{GatePolicy, Origin, Permission, Visibility};
use warden_manifest::{Capability, Implementation, Package};

use crate::trust::EffectiveTrust;

/// Which way a [`Change`] moves what the package may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// It may do more: a new tool, effect, host, credential, scope or
    /// audience, a looser gate or permission, more trust granted, another
    /// recipe or server (shown `+`).
    Widens,
    /// It may do less (shown `-`).
    Narrows,
    /// Neither: what it asks for changed, not what it gets (its requested
    /// trust; shown `~`).
    Neutral,
}

/// One difference between two versions of a package.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// Which way it moves what the package may do.
    pub direction: Direction,
    /// The tool it is about (`None`: the package).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What changed, in words (`effect external_write added`).
    pub what: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = match self.direction {
            Direction::Widens => '+',
            Direction::Narrows => '-',
            Direction::Neutral => '~',
        };
        match &self.tool {
            Some(tool) => write!(f, "{sign} {tool}: {}", self.what),
            None => write!(f, "{sign} {}", self.what),
        }
    }
}

/// Every difference between the installed version of a package and the one
/// replacing it, in manifest order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CapabilityDiff {
    /// The changes.
    pub changes: Vec<Change>,
}

impl CapabilityDiff {
    /// The changes between `old` (running with `old_trust`) and `new`
    /// (which would run with `new_trust`).
    pub fn between(
        old: &Package,
        old_trust: EffectiveTrust,
        new: &Package,
        new_trust: EffectiveTrust,
    ) -> Self {
        let mut diff = Differ::default();
        diff.trust(old, old_trust, new, new_trust);
        diff.recipes(old, new);
        diff.implementation(&old.implementation, &new.implementation);
        let before: BTreeMap<&str, &Capability> = old
            .capabilities
            .iter()
            .map(|c| (c.id.as_str(), c))
            .collect();
        for capability in &new.capabilities {
            match before.get(capability.id.as_str()) {
                Some(previous) => diff.tool(previous, capability),
                None => diff.push(true, Some(&capability.id), new_tool(capability)),
            }
        }
        let after: BTreeSet<&str> = new.capabilities.iter().map(|c| c.id.as_str()).collect();
        for capability in old
            .capabilities
            .iter()
            .filter(|c| !after.contains(c.id.as_str()))
        {
            diff.push(false, Some(&capability.id), "tool removed".to_owned());
        }
        CapabilityDiff {
            changes: diff.changes,
        }
    }

    /// Whether anything changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The changes that let the package do more.
    pub fn widening(&self) -> impl Iterator<Item = &Change> {
        self.changes
            .iter()
            .filter(|c| c.direction == Direction::Widens)
    }
}

#[derive(Default)]
struct Differ {
    changes: Vec<Change>,
}

impl Differ {
    fn push(&mut self, widens: bool, tool: Option<&str>, what: String) {
        let direction = match widens {
            true => Direction::Widens,
            false => Direction::Narrows,
        };
        self.changes.push(Change {
            direction,
            tool: tool.map(str::to_owned),
            what,
        });
    }

    fn trust(
        &mut self,
        old: &Package,
        old_trust: EffectiveTrust,
        new: &Package,
        new_trust: EffectiveTrust,
    ) {
        if old.requested_trust != new.requested_trust {
            let what = format!(
                "requested trust {} -> {}",
                old.requested_trust.as_str(),
                new.requested_trust.as_str()
            );
            // What it asks for; what it gets is the granted trust below.
            self.changes.push(Change {
                direction: Direction::Neutral,
                tool: None,
                what,
            });
        }
        if old_trust != new_trust {
            let what = format!("granted trust {old_trust} -> {new_trust}");
            self.push(new_trust > old_trust, None, what);
        }
    }

    fn recipes(&mut self, old: &Package, new: &Package) {
        for (vendor, recipe) in &new.auth {
            match old.auth.get(vendor) {
                None => self.push(true, None, format!("auth recipe for `{vendor}` added")),
                Some(previous) if !previous.shares_account_with(recipe) => self.push(
                    true,
                    None,
                    format!("auth recipe for `{vendor}` changed (endpoints, client or method)"),
                ),
                Some(_) => {}
            }
        }
        for vendor in old.auth.keys().filter(|v| !new.auth.contains_key(*v)) {
            self.push(false, None, format!("auth recipe for `{vendor}` removed"));
        }
    }

    fn implementation(&mut self, old: &Implementation, new: &Implementation) {
        match (old, new) {
            (Implementation::Mcp(old), Implementation::Mcp(new)) => {
                if old.server != new.server {
                    let what = format!("MCP server {} -> {}", old.server, new.server);
                    self.push(true, None, what);
                }
                let tool = Some(new.namespace.as_str());
                self.effects(tool, &old.effects, &new.effects);
                self.gates(tool, &old.origin_gate_matrix, &new.origin_gate_matrix);
                self.permission(tool, old.default_permission, new.default_permission);
                self.credentials(tool, &old.credentials, &new.credentials);
                if new.max_tools > old.max_tools {
                    let what = format!("max_tools {} -> {}", old.max_tools, new.max_tools);
                    self.push(true, tool, what);
                }
            }
            (old, new) if kind(old) != kind(new) => {
                let what = format!("runs as {} instead of {}", kind(new), kind(old));
                self.push(true, None, what);
            }
            _ => {}
        }
    }

    fn tool(&mut self, old: &Capability, new: &Capability) {
        let tool = Some(new.id.as_str());
        self.effects(tool, &old.effects, &new.effects);
        self.gates(tool, &old.origin_gate_matrix, &new.origin_gate_matrix);
        self.permission(tool, old.default_permission, new.default_permission);
        if old.visibility != new.visibility {
            let what = format!("visibility {} -> {}", old.visibility, new.visibility);
            self.push(new.visibility == Visibility::Model, tool, what);
        }
        let describe = |c: &Capability| -> BTreeSet<String> {
            c.network_targets.iter().map(|t| t.describe()).collect()
        };
        let (before, after) = (describe(old), describe(new));
        for target in after.difference(&before) {
            self.push(true, tool, format!("network {target} added"));
        }
        for target in before.difference(&after) {
            self.push(false, tool, format!("network {target} removed"));
        }
        self.credentials(tool, &old.credentials, &new.credentials);
        match (old.max_egress_bytes, new.max_egress_bytes) {
            (Some(a), Some(b)) if a != b => {
                self.push(b > a, tool, format!("max_egress_bytes {a} -> {b}"));
            }
            (Some(a), None) => self.push(true, tool, format!("max_egress_bytes {a} -> unbounded")),
            (None, Some(b)) => self.push(false, tool, format!("max_egress_bytes unbounded -> {b}")),
            _ => {}
        }
    }

    fn effects(
        &mut self,
        tool: Option<&str>,
        old: &[warden_core::Effect],
        new: &[warden_core::Effect],
    ) {
        for effect in new.iter().filter(|e| !old.contains(e)) {
            self.push(true, tool, format!("effect {effect} added"));
        }
        for effect in old.iter().filter(|e| !new.contains(e)) {
            self.push(false, tool, format!("effect {effect} removed"));
        }
    }

    fn gates(
        &mut self,
        tool: Option<&str>,
        old: &warden_core::GateMatrix,
        new: &warden_core::GateMatrix,
    ) {
        for origin in Origin::ALL {
            let (before, after) = (old.policy(*origin), new.policy(*origin));
            if before != after {
                let what = format!("gate {origin} {before} -> {after}");
                self.push(looseness(after) > looseness(before), tool, what);
            }
        }
    }

    fn permission(&mut self, tool: Option<&str>, old: Permission, new: Permission) {
        if old != new {
            let rank = |p: Permission| match p {
                Permission::Deny => 0,
                Permission::Ask => 1,
                Permission::Allow => 2,
            };
            let what = format!("default permission {old} -> {new}");
            self.push(rank(new) > rank(old), tool, what);
        }
    }

    fn credentials(&mut self, tool: Option<&str>, old: &[CredentialSpec], new: &[CredentialSpec]) {
        let by_key = |specs: &[CredentialSpec]| -> BTreeMap<String, BTreeSet<String>> {
            let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for spec in specs {
                let key = format!(
                    "credential {}/{} to {}://{}:{}",
                    spec.vendor,
                    spec.handle,
                    spec.audience.scheme,
                    spec.audience.host,
                    spec.audience.effective_port()
                );
                map.entry(key)
                    .or_default()
                    .extend(spec.scopes.iter().cloned());
            }
            map
        };
        let (before, after) = (by_key(old), by_key(new));
        for (key, scopes) in &after {
            match before.get(key) {
                None => {
                    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
                    let what = format!("{key} added (scopes: {})", scopes.join(" "));
                    self.push(true, tool, what);
                }
                Some(previous) => {
                    for scope in scopes.difference(previous) {
                        self.push(true, tool, format!("{key}: scope {scope} added"));
                    }
                    for scope in previous.difference(scopes) {
                        self.push(false, tool, format!("{key}: scope {scope} removed"));
                    }
                }
            }
        }
        for key in before.keys().filter(|k| !after.contains_key(*k)) {
            self.push(false, tool, format!("{key} removed"));
        }
    }
}

/// How much a gate policy lets through, least first.
fn looseness(policy: GatePolicy) -> u8 {
    match policy {
        GatePolicy::Forbidden => 0,
        GatePolicy::AskAlways => 1,
        GatePolicy::GatedUnlessGranted => 2,
        GatePolicy::ConsentSufficient => 3,
        GatePolicy::Ungated => 4,
    }
}

fn kind(implementation: &Implementation) -> &'static str {
    match implementation {
        Implementation::Wasm { .. } => "a WebAssembly component",
        Implementation::FirstParty { .. } => "a first-party service",
        Implementation::Mcp(_) => "a hosted MCP server",
    }
}

/// What a new tool may do, in one line.
fn new_tool(capability: &Capability) -> String {
    let effects: Vec<&str> = capability.effects.iter().map(|e| e.as_str()).collect();
    let mut what = format!(
        "tool added (effects: {})",
        if effects.is_empty() {
            "none".to_owned()
        } else {
            effects.join(", ")
        }
    );
    let targets: BTreeSet<String> = capability
        .network_targets
        .iter()
        .map(|t| t.describe())
        .collect();
    if !targets.is_empty() {
        let targets: Vec<String> = targets.into_iter().collect();
        what.push_str(&format!("; network: {}", targets.join(", ")));
    }
    let credentials: BTreeSet<String> = capability
        .credentials
        .iter()
        .map(|c| format!("{}/{} to {}", c.vendor, c.handle, c.audience.host))
        .collect();
    if !credentials.is_empty() {
        let credentials: Vec<String> = credentials.into_iter().collect();
        what.push_str(&format!("; credentials: {}", credentials.join(", ")));
    }
    what
}

impl crate::location::Location {
    /// What installing `loaded` in place of the active package of its id
    /// would change (`None` when no package has its id).
    pub fn replacement_diff(&self, loaded: &crate::LoadedPackage) -> Option<CapabilityDiff> {
        let installed = self.package(&loaded.package.id)?;
        let trust = crate::trust::granted_trust(
            &loaded.package,
            loaded.provenance,
            &loaded.digest,
            self.shared.bundled_trust,
            &self.shared.trust_pins,
            crate::signature::check(&loaded.files, &self.shared.signers).trust(),
        );
        Some(CapabilityDiff::between(
            &installed.package,
            installed.trust,
            &loaded.package,
            trust,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled echo package with `edits` applied to its manifest.
    fn echo(edits: &[(&str, &str)]) -> Package {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages/echo");
        let mut text = std::fs::read_to_string(root.join("manifest.toml")).unwrap();
        for (from, to) in edits {
            assert!(text.contains(from), "{from}");
            text = text.replace(from, to);
        }
        let mut files = warden_manifest::MemFiles::new();
        for rel in [
            "prompts/echo/echo.md",
            "schemas/echo/echo.input.v1.json",
            "schemas/echo/echo.output.v1.json",
        ] {
            files = files.with(rel, std::fs::read(root.join(rel)).unwrap());
        }
        let options =
            warden_manifest::ValidationOptions::default().source(warden_manifest::Source::Bundled);
        let name = "manifest.toml";
        warden_manifest::load_from_files(name, text.as_bytes(), &root, &files, &options).unwrap()
    }

    fn lines(diff: &CapabilityDiff) -> Vec<String> {
        diff.changes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn gates_and_permissions_are_compared_by_how_much_they_let_through() {
        let old = echo(&[]);
        let new = echo(&[
            (
                "automation = \"gated_unless_granted\"",
                "automation = \"ungated\"",
            ),
            ("loop_run = \"ungated\"", "loop_run = \"ask_always\""),
            (
                "default_permission = \"allow\"",
                "default_permission = \"ask\"",
            ),
            ("visibility = \"model\"", "visibility = \"api\""),
        ]);
        let first = EffectiveTrust::FirstParty;
        let diff = CapabilityDiff::between(&old, first, &new, first);
        assert_eq!(
            lines(&diff),
            [
                "- echo.echo: gate loop_run ungated -> ask_always",
                "+ echo.echo: gate automation gated_unless_granted -> ungated",
                "- echo.echo: default permission allow -> ask",
                "- echo.echo: visibility model -> api",
            ]
        );
        assert_eq!(diff.widening().count(), 1);
        let same = CapabilityDiff::between(&old, first, &old, first);
        assert!(same.is_empty());
        let less = CapabilityDiff::between(&old, first, &old, EffectiveTrust::ThirdParty);
        assert_eq!(lines(&less), ["- granted trust first_party -> third_party"]);
    }
}
