//! Per-request snapshots of the effective tools, and catalog filtering.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{LocationId, Placement, RegistrationId, ToolDef, name};

/// A tool as registered: its definition plus the names the registry gave it.
#[derive(Debug)]
pub struct RegisteredTool {
    pub(super) model_name: String,
    permission_action: String,
    pub(super) registration: RegistrationId,
    pub(super) placement: Placement,
    def: ToolDef,
}

impl RegisteredTool {
    pub(super) fn new(model_name: String, def: ToolDef) -> Self {
        RegisteredTool {
            permission_action: def.effective_permission_action(&model_name),
            model_name,
            registration: RegistrationId(0),
            placement: Placement(String::new()),
            def,
        }
    }

    /// The model-facing name (flattened and sanitized).
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The permission action used for whole-tool filtering.
    pub fn permission_action(&self) -> &str {
        &self.permission_action
    }

    /// The registration that added it.
    pub fn registration(&self) -> RegistrationId {
        self.registration
    }

    /// The placement it was registered at.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The complete definition.
    pub fn def(&self) -> &ToolDef {
        &self.def
    }

    /// `<namespace>_<name>` before sanitizing (used in collision errors).
    pub(super) fn source_name(&self) -> String {
        name::flatten(self.def.namespace.as_deref(), &self.def.name)
    }
}

/// The effective tools of one registry at one moment, immutable and cheap
/// to clone.
///
/// [`Snapshot::filtered`] hides tools from the *catalog* ([`Snapshot::tools`],
/// [`Snapshot::native`], [`Snapshot::codemode`]) but [`Snapshot::lookup`]
/// still finds them: filtering is visibility, never authorization, and a
/// call that reaches execution is authorized on the tool's own policy.
#[derive(Debug, Clone)]
pub struct Snapshot {
    location: LocationId,
    generation: u64,
    tools: Arc<[Arc<RegisteredTool>]>,
    hidden: Arc<BTreeSet<String>>,
}

impl Snapshot {
    pub(super) fn new(
        location: LocationId,
        generation: u64,
        mut tools: Vec<Arc<RegisteredTool>>,
    ) -> Self {
        tools.sort_by(|a, b| a.model_name.cmp(&b.model_name));
        Snapshot {
            location,
            generation,
            tools: tools.into(),
            hidden: Arc::default(),
        }
    }

    /// The Location it was taken from.
    pub fn location(&self) -> &LocationId {
        &self.location
    }

    /// The registry generation it captured (changes on every transform/close).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The catalog-visible tools, sorted by model name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools
            .iter()
            .filter(|t| !self.hidden.contains(&t.model_name))
    }

    /// Visible tools on the provider's native tool list (`codemode = false`).
    pub fn native(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools().filter(|t| !t.def.codemode)
    }

    /// Visible tools that go to code mode (`codemode = true`).
    pub fn codemode(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools().filter(|t| t.def.codemode)
    }

    /// Any captured tool by model name, hidden by a filter or not.
    pub fn lookup(&self, model_name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools
            .binary_search_by(|t| t.model_name.as_str().cmp(model_name))
            .ok()
            .map(|i| &self.tools[i])
    }

    /// Any captured tool by its capability id (`github.get_repo`), exactly,
    /// hidden by a filter or not. A capability id is never sanitized into a
    /// model name here: `github.get.repo` and `github_get.repo` are not
    /// `github.get_repo`, though all three flatten to `github_get_repo`.
    pub fn by_capability_id(&self, capability_id: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools
            .iter()
            .find(|t| t.def.capability_id() == capability_id)
    }

    /// Whether a filter hid `model_name` from the catalog.
    pub fn is_hidden(&self, model_name: &str) -> bool {
        self.hidden.contains(model_name)
    }

    /// A snapshot whose catalog also hides every tool whose permission action
    /// is in `denied_actions`. Authorization is unaffected.
    pub fn filtered<S: AsRef<str>>(&self, denied_actions: &[S]) -> Snapshot {
        let mut hidden = (*self.hidden).clone();
        for tool in self.tools.iter() {
            if denied_actions
                .iter()
                .any(|a| a.as_ref() == tool.permission_action)
            {
                hidden.insert(tool.model_name.clone());
            }
        }
        Snapshot {
            hidden: Arc::new(hidden),
            ..self.clone()
        }
    }
}
