//! The Location-scoped tool registry.
//!
//! Rules (from the registry seed):
//!
//! - Built-ins, packages and MCP tools install through one path,
//!   [`Registry::transform`], which adds complete [`ToolDef`]s to a [`Draft`]
//!   and returns a [`Registration`] handle.
//! - Each registration targets a [`Placement`] (`"builtin"`, `"package:github"`,
//!   `"mcp:linear"`, ...). Per placement, the latest active registration wins:
//!   its tools are effective and older registrations at the same placement
//!   are shadowed (re-installing a package is this case, not a collision).
//! - Closing a registration removes only it and reveals the next active one.
//! - [`Registry::snapshot`] captures the effective tools; later changes only
//!   affect later snapshots.
//! - Two different tools whose model names meet (after flattening and
//!   sanitizing, see [`name`]) are refused with an error naming both. A new
//!   registration is checked against every active registration at *other*
//!   placements, shadowed ones included, so closing a registration can never
//!   reveal a collision.

mod identity;
pub mod name;
mod snapshot;
mod tool;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

pub use identity::PackageIdentity;
pub use snapshot::{RegisteredTool, Snapshot};
pub use tool::{Executor, LaneId, ToolDef};

/// Errors of the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool name is empty after sanitizing.
    #[error("tool name `{name}` is empty or has no usable characters")]
    InvalidName {
        /// The flattened name as given.
        name: String,
    },
    /// Two different tools have the same model-facing name.
    #[error(
        "tool name collision on `{model_name}`: `{existing}` (placement `{existing_placement}`) \
         and `{incoming}` (placement `{incoming_placement}`)"
    )]
    NameCollision {
        /// The model-facing name both flatten to.
        model_name: String,
        /// The tool already registered (flattened, unsanitized name).
        existing: String,
        /// Where the existing tool is registered.
        existing_placement: Placement,
        /// The tool that was refused.
        incoming: String,
        /// Where the refused tool was to be registered.
        incoming_placement: Placement,
    },
    /// A transform closure refused its own draft.
    #[error("registration refused: {reason}")]
    Refused {
        /// Why.
        reason: String,
    },
}

/// A workspace or project the host serves; each has its own [`Registry`].
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct LocationId(pub String);

impl LocationId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for LocationId {
    fn from(s: &str) -> Self {
        LocationId(s.to_owned())
    }
}

/// The slot a registration occupies; the latest active registration per
/// placement wins.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Placement(pub String);

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Placement {
    fn from(s: &str) -> Self {
        Placement(s.to_owned())
    }
}

impl From<String> for Placement {
    fn from(s: String) -> Self {
        Placement(s)
    }
}

/// Identifies one registration within its registry (increasing with time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegistrationId(pub u64);

/// The tools a transform is adding, checked as they are added.
#[derive(Debug)]
pub struct Draft {
    placement: Placement,
    tools: Vec<RegisteredTool>,
}

impl Draft {
    /// Where this draft will be registered.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// Adds a complete tool. Refuses an invalid name, or a name another
    /// tool in this draft already flattens to.
    pub fn add(&mut self, tool: ToolDef) -> Result<&mut Self, RegistryError> {
        let model_name = name::model_name(tool.namespace.as_deref(), &tool.name)?;
        if let Some(other) = self.tools.iter().find(|t| t.model_name == model_name) {
            return Err(RegistryError::NameCollision {
                model_name,
                existing: other.source_name(),
                existing_placement: self.placement.clone(),
                incoming: name::flatten(tool.namespace.as_deref(), &tool.name),
                incoming_placement: self.placement.clone(),
            });
        }
        self.tools.push(RegisteredTool::new(model_name, tool));
        Ok(self)
    }

    /// How many tools the draft holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the draft is empty.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[derive(Debug)]
struct Entry {
    id: RegistrationId,
    placement: Placement,
    tools: Vec<Arc<RegisteredTool>>,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    generation: u64,
    /// Active registrations, oldest first.
    active: Vec<Entry>,
    /// The last snapshot taken, cleared by every change (every call takes
    /// one, and the registry changes rarely).
    cached: Option<Snapshot>,
}

#[derive(Debug)]
struct Inner {
    location: LocationId,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave State half-updated
        // (every mutation is a single push or remove), so poison is ignored.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn close(&self, id: RegistrationId) -> bool {
        let mut state = self.lock();
        let before = state.active.len();
        state.active.retain(|e| e.id != id);
        let removed = state.active.len() != before;
        if removed {
            state.generation += 1;
            state.cached = None;
        }
        removed
    }
}

/// The tool registry of one Location. Cloning shares the same registry.
#[derive(Debug, Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl Registry {
    /// An empty registry for `location`.
    pub fn new(location: LocationId) -> Self {
        Registry {
            inner: Arc::new(Inner {
                location,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The Location this registry serves.
    pub fn location(&self) -> &LocationId {
        &self.inner.location
    }

    /// Installs tools: `build` adds them to a draft, and the draft becomes one
    /// registration at `placement`, or nothing when `build` or a collision
    /// check fails.
    pub fn transform<F>(
        &self,
        placement: impl Into<Placement>,
        build: F,
    ) -> Result<Registration, RegistryError>
    where
        F: FnOnce(&mut Draft) -> Result<(), RegistryError>,
    {
        let mut draft = Draft {
            placement: placement.into(),
            tools: Vec::new(),
        };
        build(&mut draft)?;
        let mut state = self.inner.lock();
        for tool in &draft.tools {
            let clash = state
                .active
                .iter()
                .filter(|e| e.placement != draft.placement)
                .flat_map(|e| e.tools.iter().map(move |t| (e, t)))
                .find(|(_, t)| t.model_name == tool.model_name);
            if let Some((entry, existing)) = clash {
                return Err(RegistryError::NameCollision {
                    model_name: tool.model_name.clone(),
                    existing: existing.source_name(),
                    existing_placement: entry.placement.clone(),
                    incoming: tool.source_name(),
                    incoming_placement: draft.placement.clone(),
                });
            }
        }
        let id = RegistrationId(state.next_id);
        state.next_id += 1;
        state.generation += 1;
        state.cached = None;
        let tools = draft
            .tools
            .into_iter()
            .map(|mut t| {
                t.registration = id;
                t.placement = draft.placement.clone();
                Arc::new(t)
            })
            .collect();
        state.active.push(Entry {
            id,
            placement: draft.placement.clone(),
            tools,
        });
        Ok(Registration {
            id,
            placement: draft.placement,
            registry: Arc::downgrade(&self.inner),
            closed: false,
        })
    }

    /// Closes registration `id` (see [`Registration::detach`]); false when it
    /// was not active.
    pub fn close(&self, id: RegistrationId) -> bool {
        self.inner.close(id)
    }

    /// The effective tools now. Later registry changes do not affect it.
    pub fn snapshot(&self) -> Snapshot {
        let mut state = self.inner.lock();
        if let Some(cached) = &state.cached {
            return cached.clone();
        }
        let mut winners: Vec<&Entry> = Vec::new();
        for entry in state.active.iter().rev() {
            if !winners.iter().any(|w| w.placement == entry.placement) {
                winners.push(entry);
            }
        }
        let tools = winners
            .into_iter()
            .flat_map(|e| e.tools.iter().cloned())
            .collect();
        let snapshot = Snapshot::new(self.inner.location.clone(), state.generation, tools);
        state.cached = Some(snapshot.clone());
        snapshot
    }
}

/// The handle of one registration.
///
/// Dropping the handle closes the registration (registrations are scoped,
/// like the seed's): keep it as long as the tools should stay installed, or
/// call [`Registration::detach`] to keep them until [`Registry::close`].
#[must_use = "dropping a Registration closes it and removes its tools"]
#[derive(Debug)]
pub struct Registration {
    id: RegistrationId,
    placement: Placement,
    registry: Weak<Inner>,
    closed: bool,
}

impl Registration {
    /// This registration's id.
    pub fn id(&self) -> RegistrationId {
        self.id
    }

    /// Where it is registered.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// Removes this registration only, revealing the next active one at its
    /// placement. Returns false if it was already closed.
    pub fn close(mut self) -> bool {
        self.closed = true;
        self.registry.upgrade().is_some_and(|r| r.close(self.id))
    }

    /// Leaves the registration active without a handle; close it later with
    /// [`Registry::close`].
    pub fn detach(mut self) -> RegistrationId {
        self.closed = true;
        self.id
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if !self.closed
            && let Some(registry) = self.registry.upgrade()
        {
            registry.close(self.id);
        }
    }
}

#[cfg(test)]
mod tests;
