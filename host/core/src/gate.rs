//! The origin gate matrix: one [`GatePolicy`] per [`Origin`].

use crate::{GatePolicy, Origin};

/// Per-origin gate policies of one capability. An omitted origin is
/// [`GatePolicy::Forbidden`], so a capability without a matrix cannot be
/// invoked from anywhere.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(deny_unknown_fields)]
pub struct GateMatrix {
    /// Policy for calls from the model's agent loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_run: Option<GatePolicy>,
    /// Policy for calls from a person in the product.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<GatePolicy>,
    /// Policy for calls from automations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation: Option<GatePolicy>,
}

impl GateMatrix {
    /// The effective policy for `origin` (omitted means forbidden).
    pub fn policy(&self, origin: Origin) -> GatePolicy {
        self.declared(origin).unwrap_or(GatePolicy::Forbidden)
    }

    /// The policy as declared, `None` when the origin was omitted.
    pub fn declared(&self, origin: Origin) -> Option<GatePolicy> {
        match origin {
            Origin::LoopRun => self.loop_run,
            Origin::Product => self.product,
            Origin::Automation => self.automation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omitted_origins_are_forbidden() {
        let matrix = GateMatrix {
            loop_run: Some(GatePolicy::AskAlways),
            ..Default::default()
        };
        assert_eq!(matrix.policy(Origin::LoopRun), GatePolicy::AskAlways);
        assert_eq!(matrix.policy(Origin::Product), GatePolicy::Forbidden);
        assert_eq!(matrix.declared(Origin::Automation), None);
    }
}
