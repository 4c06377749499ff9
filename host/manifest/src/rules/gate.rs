//! `origin_gate_matrix`: optional (absent means every origin is forbidden),
//! each cell optional (default `forbidden`), unknown keys ignored, as the
//! format has it. Whether a matrix is present, `consent_sufficient` outside
//! `product` and an `ungated` `loop_run` off the reviewed allowlist are
//! repository review rules: [`crate::lints`] reports them, and authorization
//! enforces the safe reading at call time.

use warden_core::{GateMatrix, GatePolicy, Origin};

use super::{Ctx, words};
use crate::reader::Table;

const GATE: &[&str] = &["loop_run", "product", "automation"];

/// Check the `origin_gate_matrix` of the table `t`.
pub(super) fn check_matrix(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> GateMatrix {
    let sink = &mut cx.sink;
    let Some(m) = t.table(sink, "origin_gate_matrix", GATE) else {
        return GateMatrix::default();
    };
    let mut matrix = GateMatrix::default();
    for origin in Origin::ALL {
        let Some(word) = m.str(sink, origin.as_str()) else {
            continue;
        };
        let Some(policy) = words::word::<GatePolicy>(sink, &word) else {
            continue;
        };
        // The format clamps an `ungated` cell of a memory manifest.
        let policy = if cx.memory && policy == GatePolicy::Ungated {
            GatePolicy::GatedUnlessGranted
        } else {
            policy
        };
        match origin {
            Origin::LoopRun => matrix.loop_run = Some(policy),
            Origin::Product => matrix.product = Some(policy),
            Origin::Automation => matrix.automation = Some(policy),
        }
    }
    matrix
}
