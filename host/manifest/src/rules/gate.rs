//! `origin_gate_matrix`: a `loop_run` policy is required, omitted origins
//! are forbidden, `consent_sufficient` is product-only, and `ungated`
//! `loop_run` needs a host allowlist entry.

use warden_core::{GateMatrix, GatePolicy, Origin};

use super::{Ctx, words};
use crate::diag::Code;
use crate::reader::Table;

const GATE: &[&str] = &["loop_run", "product", "automation"];

/// Check the `origin_gate_matrix` of the table `t` for capability `id`
/// (the ungated allowlist is keyed by it).
pub(super) fn check_matrix(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, id: &str) -> GateMatrix {
    let sink = &mut cx.sink;
    if !t.has("origin_gate_matrix") {
        sink.error(
            Code::GateMatrix,
            &t.at,
            format!("`{id}` has no origin_gate_matrix, so no origin may invoke it"),
        );
        return GateMatrix::default();
    }
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
        if policy == GatePolicy::ConsentSufficient && *origin != Origin::Product {
            sink.error(
                Code::ConsentSufficient,
                &word.at,
                format!("consent_sufficient is not valid for `{origin}`"),
            );
        }
        if policy == GatePolicy::Ungated
            && *origin == Origin::LoopRun
            && !cx.opts.ungated_loop_run_allowlist.contains(id)
        {
            sink.error(
                Code::UngatedLoopRun,
                &word.at,
                format!("`{id}` asks for an ungated loop_run, but the host has not allowlisted it"),
            );
        }
        match origin {
            Origin::LoopRun => matrix.loop_run = Some(policy),
            Origin::Product => matrix.product = Some(policy),
            Origin::Automation => matrix.automation = Some(policy),
        }
    }
    if !m.has("loop_run") {
        sink.error(
            Code::GateMatrix,
            &m.at,
            format!("the origin_gate_matrix of `{id}` has no `loop_run` policy"),
        )
        .help("add loop_run = \"gated_unless_granted\" (or \"forbidden\" to keep the model out)");
    }
    m.finish(sink);
    matrix
}
