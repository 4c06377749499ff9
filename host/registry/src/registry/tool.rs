//! The complete tool object a registration adds to a draft.

use serde_json::Value;
use warden_core::{Effect, GateMatrix, Permission, Visibility};

use super::PackageIdentity;

/// A host-assigned key naming what runs a tool (its lane). The registry
/// never runs anything and cannot name the host's lane trait; the host keeps
/// a map from this key to the tool's lane for as long as the registration
/// that published the tool is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaneId(pub u64);

/// What the host runs for a tool: a capability id plus, for tools the host
/// can run, the [`LaneId`] of their lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executor {
    capability_id: String,
    lane: Option<LaneId>,
}

impl Executor {
    /// An executor for `capability_id` run by the host's lane `lane`.
    pub fn new(capability_id: impl Into<String>, lane: LaneId) -> Self {
        Executor {
            capability_id: capability_id.into(),
            lane: Some(lane),
        }
    }

    /// An executor key with no lane (the capability id is enough: policy
    /// review, catalogs, tests). The host refuses to run it as `unknown_tool`.
    pub fn key(capability_id: impl Into<String>) -> Self {
        Executor {
            capability_id: capability_id.into(),
            lane: None,
        }
    }

    /// The stable capability id (`<extension>.<name>`), used by
    /// authorization, grants and approval fingerprints.
    pub fn capability_id(&self) -> &str {
        &self.capability_id
    }

    /// The lane that runs the tool, when the host assigned one.
    pub fn lane(&self) -> Option<LaneId> {
        self.lane
    }
}

/// One tool, complete: name, schemas, docs, policy and executor key.
///
/// Build it with [`ToolDef::new`] and the `with_*` methods; the defaults are
/// visibility `model`, no effects, `default_permission = "ask"`, an empty
/// gate matrix (every origin forbidden) and `codemode = true`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolDef {
    /// The tool's own name (before namespace flattening).
    pub name: String,
    /// Optional namespace; the model name becomes `<namespace>_<name>`.
    pub namespace: Option<String>,
    /// Short model-facing description.
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// JSON Schema of the structured output, when the tool has one.
    pub output_schema: Option<Value>,
    /// Concise operation guidance appended to the description.
    pub prompt_doc: Option<String>,
    /// Who may see the tool; only `model` enters the catalog.
    pub visibility: Visibility,
    /// What the tool may do.
    pub effects: Vec<Effect>,
    /// The manifest's `default_permission`.
    pub default_permission: Permission,
    /// Per-origin gate policies.
    pub gate: GateMatrix,
    /// Whether the tool goes to code mode (true) or the provider's native
    /// tool list (false).
    pub codemode: bool,
    /// The permission action used for whole-tool filtering; `None` means the
    /// default (see [`ToolDef::effective_permission_action`]).
    pub permission_action: Option<String>,
    /// The package the tool came from, when it came from one; grants,
    /// approvals and the reviewed allowlist bind to it. `None` for tools the
    /// embedder registers from its own code (treated as built into the host).
    pub package: Option<PackageIdentity>,
    /// What the host runs.
    pub executor: Executor,
}

impl ToolDef {
    /// A tool with the defaults described on the type.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        executor: Executor,
    ) -> Self {
        ToolDef {
            name: name.into(),
            namespace: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            prompt_doc: None,
            visibility: Visibility::Model,
            effects: Vec::new(),
            default_permission: Permission::Ask,
            gate: GateMatrix::default(),
            codemode: true,
            permission_action: None,
            package: None,
            executor,
        }
    }

    /// Sets the namespace.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the prompt doc.
    pub fn with_prompt_doc(mut self, doc: impl Into<String>) -> Self {
        self.prompt_doc = Some(doc.into());
        self
    }

    /// Sets the visibility.
    pub fn with_visibility(mut self, visibility: Visibility) -> Self {
        self.visibility = visibility;
        self
    }

    /// Sets the effects.
    pub fn with_effects(mut self, effects: impl IntoIterator<Item = Effect>) -> Self {
        self.effects = effects.into_iter().collect();
        self
    }

    /// Sets `default_permission`.
    pub fn with_default_permission(mut self, permission: Permission) -> Self {
        self.default_permission = permission;
        self
    }

    /// Sets the gate matrix.
    pub fn with_gate(mut self, gate: GateMatrix) -> Self {
        self.gate = gate;
        self
    }

    /// Sets the codemode flag.
    pub fn with_codemode(mut self, codemode: bool) -> Self {
        self.codemode = codemode;
        self
    }

    /// Sets the permission action used for filtering.
    pub fn with_permission_action(mut self, action: impl Into<String>) -> Self {
        self.permission_action = Some(action.into());
        self
    }

    /// Sets the package the tool came from.
    pub fn with_package(mut self, package: PackageIdentity) -> Self {
        self.package = Some(package);
        self
    }

    /// The capability id of the executor.
    pub fn capability_id(&self) -> &str {
        self.executor.capability_id()
    }

    /// The permission action filtering uses: the explicit one, else `edit`
    /// for the tools `edit`, `write` and `patch`, else `model_name`.
    pub fn effective_permission_action(&self, model_name: &str) -> String {
        if let Some(action) = &self.permission_action {
            return action.clone();
        }
        match self.name.as_str() {
            "edit" | "write" | "patch" => "edit".to_owned(),
            _ => model_name.to_owned(),
        }
    }
}
