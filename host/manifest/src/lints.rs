//! Repository review rules: warnings, not refusals. The format accepts these
//! manifests (its parser does not check them); a repository that ships
//! packages keeps them clean with a ratchet test, and `warden check` and
//! `cargo xtask check` print them. Authorization still enforces the safe
//! reading at call time (`consent_sufficient` outside `product` is denied,
//! an `ungated` `loop_run` off the allowlist asks).

use warden_core::{GateMatrix, GatePolicy, Origin, Permission};

use crate::model::{Implementation, Package};
use crate::options::ValidationOptions;

/// The stable code of a review rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LintCode {
    /// A tool (or `[mcp]`) without an `origin_gate_matrix`: no origin may call it.
    GateMatrixMissing,
    /// `consent_sufficient` for `loop_run` or `automation`.
    ConsentSufficient,
    /// `loop_run = "ungated"` for a capability not on the reviewed allowlist.
    UngatedLoopRun,
    /// A tool with a write effect whose `default_permission` is not `ask`.
    WriteDefaultsToAsk,
}

impl LintCode {
    /// The snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LintCode::GateMatrixMissing => "gate_matrix_missing",
            LintCode::ConsentSufficient => "consent_sufficient",
            LintCode::UngatedLoopRun => "ungated_loop_run",
            LintCode::WriteDefaultsToAsk => "write_defaults_to_ask",
        }
    }
}

/// One review finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Lint {
    /// The rule.
    pub code: LintCode,
    /// The capability id (`<id>.mcp_server` for the `[mcp]` table).
    pub capability: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Lint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "warning[{}]: {}", self.code.as_str(), self.message)
    }
}

/// The review findings of `package`; `opts` supplies the reviewed allowlist.
pub fn lints(package: &Package, opts: &ValidationOptions) -> Vec<Lint> {
    let mut out = Vec::new();
    if let Implementation::Mcp(mcp) = &package.implementation {
        let id = format!("{}.mcp_server", package.id);
        gate(&mut out, &id, &mcp.origin_gate_matrix, opts);
        if mcp.effects.iter().any(|e| e.is_write()) && mcp.default_permission != Permission::Ask {
            out.push(write(&id, mcp.default_permission));
        }
    }
    for cap in &package.capabilities {
        // Pinned MCP tools take the server's matrix.
        if !cap.mcp_pinned {
            gate(&mut out, &cap.id, &cap.origin_gate_matrix, opts);
        }
        if cap.is_write() && cap.default_permission != Permission::Ask {
            out.push(write(&cap.id, cap.default_permission));
        }
    }
    out
}

fn write(id: &str, permission: Permission) -> Lint {
    Lint {
        code: LintCode::WriteDefaultsToAsk,
        capability: id.to_owned(),
        message: format!(
            "`{id}` has a write effect but default_permission = \"{permission}\"; writes should default to \"ask\""
        ),
    }
}

fn gate(out: &mut Vec<Lint>, id: &str, matrix: &GateMatrix, opts: &ValidationOptions) {
    if *matrix == GateMatrix::default() {
        out.push(Lint {
            code: LintCode::GateMatrixMissing,
            capability: id.to_owned(),
            message: format!("`{id}` has no origin_gate_matrix, so no origin may invoke it"),
        });
    }
    for origin in [Origin::LoopRun, Origin::Automation] {
        if matrix.declared(origin) == Some(GatePolicy::ConsentSufficient) {
            out.push(Lint {
                code: LintCode::ConsentSufficient,
                capability: id.to_owned(),
                message: format!(
                    "`{id}`: consent_sufficient is for `product` only, not `{origin}`"
                ),
            });
        }
    }
    if matrix.declared(Origin::LoopRun) == Some(GatePolicy::Ungated)
        && !opts.ungated_loop_run_allowlist.contains(id)
    {
        out.push(Lint {
            code: LintCode::UngatedLoopRun,
            capability: id.to_owned(),
            message: format!(
                "`{id}` asks for an ungated loop_run but is not on the reviewed allowlist; it will ask"
            ),
        });
    }
}
