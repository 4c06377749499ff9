//! The full origin × gate policy × default_permission table, with and
//! without a covering grant, for a capability that is not allowlisted.

use warden_core::GatePolicy::{
    AskAlways as AskAlw, ConsentSufficient as Consent, Forbidden as Forb,
    GatedUnlessGranted as Gated, Ungated,
};
use warden_core::Origin::{Automation as A, LoopRun as L, Product as P};
use warden_core::Permission::{Allow, Ask, Deny};
use warden_core::{Effect, Visibility};

use super::*;

type Row = (Origin, GatePolicy, Permission, bool, &'static str);

#[rustfmt::skip]
const TABLE: &[Row] = &[
    (L, Forb, Allow, false, "deny:forbidden"),
    (L, Forb, Allow, true, "deny:forbidden"),
    (L, Forb, Ask, false, "deny:forbidden"),
    (L, Forb, Ask, true, "deny:forbidden"),
    (L, Forb, Deny, false, "deny:forbidden"),
    (L, Forb, Deny, true, "deny:forbidden"),
    (P, Forb, Allow, false, "deny:forbidden"),
    (P, Forb, Allow, true, "deny:forbidden"),
    (P, Forb, Ask, false, "deny:forbidden"),
    (P, Forb, Ask, true, "deny:forbidden"),
    (P, Forb, Deny, false, "deny:forbidden"),
    (P, Forb, Deny, true, "deny:forbidden"),
    (A, Forb, Allow, false, "deny:forbidden"),
    (A, Forb, Allow, true, "deny:forbidden"),
    (A, Forb, Ask, false, "deny:forbidden"),
    (A, Forb, Ask, true, "deny:forbidden"),
    (A, Forb, Deny, false, "deny:forbidden"),
    (A, Forb, Deny, true, "deny:forbidden"),
    (L, AskAlw, Allow, false, "ask:ask_always"),
    (L, AskAlw, Allow, true, "ask:ask_always"),
    (L, AskAlw, Ask, false, "ask:ask_always"),
    (L, AskAlw, Ask, true, "ask:ask_always"),
    (L, AskAlw, Deny, false, "deny:perm"),
    (L, AskAlw, Deny, true, "deny:perm"),
    (P, AskAlw, Allow, false, "ask:ask_always"),
    (P, AskAlw, Allow, true, "ask:ask_always"),
    (P, AskAlw, Ask, false, "ask:ask_always"),
    (P, AskAlw, Ask, true, "ask:ask_always"),
    (P, AskAlw, Deny, false, "deny:perm"),
    (P, AskAlw, Deny, true, "deny:perm"),
    (A, AskAlw, Allow, false, "ask:ask_always"),
    (A, AskAlw, Allow, true, "ask:ask_always"),
    (A, AskAlw, Ask, false, "ask:ask_always"),
    (A, AskAlw, Ask, true, "ask:ask_always"),
    (A, AskAlw, Deny, false, "deny:perm"),
    (A, AskAlw, Deny, true, "deny:perm"),
    (L, Gated, Allow, false, "ask:gated"),
    (L, Gated, Allow, true, "allow:grant"),
    (L, Gated, Ask, false, "ask:gated"),
    (L, Gated, Ask, true, "allow:grant"),
    (L, Gated, Deny, false, "deny:perm"),
    (L, Gated, Deny, true, "deny:perm"),
    (P, Gated, Allow, false, "ask:gated"),
    (P, Gated, Allow, true, "allow:grant"),
    (P, Gated, Ask, false, "ask:gated"),
    (P, Gated, Ask, true, "allow:grant"),
    (P, Gated, Deny, false, "deny:perm"),
    (P, Gated, Deny, true, "deny:perm"),
    (A, Gated, Allow, false, "ask:gated"),
    (A, Gated, Allow, true, "allow:grant"),
    (A, Gated, Ask, false, "ask:gated"),
    (A, Gated, Ask, true, "allow:grant"),
    (A, Gated, Deny, false, "deny:perm"),
    (A, Gated, Deny, true, "deny:perm"),
    (L, Consent, Allow, false, "deny:consent_outside"),
    (L, Consent, Allow, true, "deny:consent_outside"),
    (L, Consent, Ask, false, "deny:consent_outside"),
    (L, Consent, Ask, true, "deny:consent_outside"),
    (L, Consent, Deny, false, "deny:consent_outside"),
    (L, Consent, Deny, true, "deny:consent_outside"),
    (P, Consent, Allow, false, "allow:consent"),
    (P, Consent, Allow, true, "allow:consent"),
    (P, Consent, Ask, false, "allow:consent"),
    (P, Consent, Ask, true, "allow:consent"),
    (P, Consent, Deny, false, "deny:perm"),
    (P, Consent, Deny, true, "deny:perm"),
    (A, Consent, Allow, false, "deny:consent_outside"),
    (A, Consent, Allow, true, "deny:consent_outside"),
    (A, Consent, Ask, false, "deny:consent_outside"),
    (A, Consent, Ask, true, "deny:consent_outside"),
    (A, Consent, Deny, false, "deny:consent_outside"),
    (A, Consent, Deny, true, "deny:consent_outside"),
    (L, Ungated, Allow, false, "ask:not_allowlisted"),
    (L, Ungated, Allow, true, "allow:grant"),
    (L, Ungated, Ask, false, "ask:not_allowlisted"),
    (L, Ungated, Ask, true, "allow:grant"),
    (L, Ungated, Deny, false, "deny:perm"),
    (L, Ungated, Deny, true, "deny:perm"),
    (P, Ungated, Allow, false, "allow:ungated"),
    (P, Ungated, Allow, true, "allow:ungated"),
    (P, Ungated, Ask, false, "ask:perm_ask"),
    (P, Ungated, Ask, true, "allow:grant"),
    (P, Ungated, Deny, false, "deny:perm"),
    (P, Ungated, Deny, true, "deny:perm"),
    (A, Ungated, Allow, false, "allow:ungated"),
    (A, Ungated, Allow, true, "allow:ungated"),
    (A, Ungated, Ask, false, "ask:perm_ask"),
    (A, Ungated, Ask, true, "allow:grant"),
    (A, Ungated, Deny, false, "deny:perm"),
    (A, Ungated, Deny, true, "deny:perm"),
];

/// `kind:rule` for comparing against the table.
fn code(decision: &Decision) -> String {
    let kind = match decision {
        Decision::Allow(_) => "allow",
        Decision::NeedsApproval(_) => "ask",
        Decision::Deny(_) => "deny",
    };
    let rule = match decision.rule() {
        Rule::NotModelVisible { .. } => "not_model_visible",
        Rule::GateForbidden { .. } => "forbidden",
        Rule::ConsentOutsideProduct { .. } => "consent_outside",
        Rule::DefaultPermissionDeny => "perm",
        Rule::EffectFloor { .. } => "floor",
        Rule::AskAlways => "ask_always",
        Rule::GrantCovers { .. } => "grant",
        Rule::GatedNoGrant => "gated",
        Rule::DefaultPermissionAsk => "perm_ask",
        Rule::ConsentSufficient => "consent",
        Rule::Ungated => "ungated",
        Rule::UngatedAllowlisted => "allowlisted",
        Rule::UngatedNotAllowlisted => "not_allowlisted",
    };
    format!("{kind}:{rule}")
}

fn policy(origin: Origin, gate: GatePolicy, perm: Permission, effects: &[Effect]) -> ToolPolicy {
    let mut matrix = GateMatrix::default();
    match origin {
        L => matrix.loop_run = Some(gate),
        P => matrix.product = Some(gate),
        A => matrix.automation = Some(gate),
    }
    ToolPolicy {
        capability_id: "gh.op".into(),
        gate: matrix,
        default_permission: perm,
        effects: effects.to_vec(),
        visibility: Visibility::Model,
        package: Some(bundled()),
    }
}

fn bundled() -> PackageIdentity {
    PackageIdentity::bundled("gh", "d1")
}

fn grant_for(origin: Origin) -> Grant {
    Grant {
        id: GrantId("g1".into()),
        capability_id: "gh.op".into(),
        package_digest: Some("d1".into()),
        location: "loc".into(),
        session: None,
        origin,
        created_at: 0,
        expires_at: None,
    }
}

fn decide(authorizer: &Authorizer, row: &Row, effects: &[Effect]) -> Decision {
    let (origin, gate, perm, granted, _) = *row;
    let grants = if granted {
        vec![grant_for(origin)]
    } else {
        vec![]
    };
    let scope = InvocationScope::location("loc");
    authorizer.authorize(
        &policy(origin, gate, perm, effects),
        &scope,
        origin,
        &grants,
        1,
    )
}

#[test]
fn every_origin_policy_and_permission_combination() {
    assert_eq!(
        TABLE.len(),
        Origin::ALL.len() * GatePolicy::ALL.len() * Permission::ALL.len() * 2
    );
    let authorizer = Authorizer::default();
    for row in TABLE {
        let decision = decide(&authorizer, row, &[Effect::Network]);
        assert_eq!(code(&decision), row.4, "row {row:?}: {decision}");
    }
}

#[test]
fn allowlisted_loop_run_ungated() {
    let authorizer = Authorizer::new(["gh.op"]);
    #[rustfmt::skip]
    let rows: &[Row] = &[
        (L, Ungated, Allow, false, "allow:allowlisted"),
        (L, Ungated, Allow, true, "allow:allowlisted"),
        (L, Ungated, Ask, false, "ask:perm_ask"),
        (L, Ungated, Ask, true, "allow:grant"),
        (L, Ungated, Deny, false, "deny:perm"),
        (L, Ungated, Deny, true, "deny:perm"),
    ];
    for row in rows {
        assert_eq!(code(&decide(&authorizer, row, &[])), row.4, "row {row:?}");
    }
}

#[test]
fn financial_always_asks_even_with_grants_and_consent() {
    let authorizer = Authorizer::new(["gh.op"]);
    for row in TABLE {
        let decision = decide(&authorizer, row, &[Effect::Network, Effect::Financial]);
        let expected = if row.4.starts_with("deny:") {
            row.4
        } else {
            "ask:floor"
        };
        assert_eq!(code(&decision), expected, "row {row:?}");
    }
}

#[test]
fn omitted_origin_is_forbidden_and_explained() {
    let policy = ToolPolicy {
        capability_id: "gh.op".into(),
        gate: GateMatrix::default(),
        default_permission: Allow,
        effects: vec![],
        visibility: Visibility::Model,
        package: None,
    };
    let decision = Authorizer::default().authorize(
        &policy,
        &InvocationScope::location("loc"),
        P,
        &[grant_for(P)],
        1,
    );
    assert_eq!(decision, Decision::Deny(Rule::GateForbidden { origin: P }));
    assert_eq!(
        decision.to_string(),
        "denied: origin `product` is forbidden"
    );
}

#[test]
fn grant_for_another_origin_or_capability_does_not_cover() {
    let authorizer = Authorizer::default();
    let policy = policy(L, Gated, Allow, &[]);
    let scope = InvocationScope::location("loc");
    let mut other_cap = grant_for(L);
    other_cap.capability_id = "gh.other".into();
    let grants = [grant_for(A), other_cap];
    let decision = authorizer.authorize(&policy, &scope, L, &grants, 1);
    assert_eq!(decision, Decision::NeedsApproval(Rule::GatedNoGrant));
}

#[test]
fn non_model_tools_are_not_invocable_by_the_model() {
    let authorizer = Authorizer::new(["gh.op"]);
    let scope = InvocationScope::location("loc");
    for visibility in [Visibility::Api, Visibility::HostInternal] {
        let mut p = policy(L, Ungated, Allow, &[]);
        p.gate.product = Some(Ungated);
        p.visibility = visibility;
        let from_model = authorizer.authorize(&p, &scope, L, &[], 1);
        assert_eq!(code(&from_model), "deny:not_model_visible", "{visibility}");
        let from_product = authorizer.authorize(&p, &scope, P, &[], 1);
        assert_eq!(code(&from_product), "allow:ungated", "{visibility}");
    }
}

#[test]
fn a_grant_for_the_bundled_package_does_not_cover_an_impostor() {
    let authorizer = Authorizer::default();
    let scope = InvocationScope::location("loc");
    let mut impostor = policy(L, Gated, Allow, &[]);
    impostor.package = Some(PackageIdentity::installed("gh", "d2"));
    let grants = [grant_for(L)];
    assert_eq!(
        authorizer.authorize(&impostor, &scope, L, &grants, 1),
        Decision::NeedsApproval(Rule::GatedNoGrant)
    );
    let genuine = policy(L, Gated, Allow, &[]);
    assert!(matches!(
        authorizer.authorize(&genuine, &scope, L, &grants, 1),
        Decision::Allow(Rule::GrantCovers { .. })
    ));
}

#[test]
fn the_allowlist_binds_to_the_reviewed_package() {
    let scope = InvocationScope::location("loc");
    let mut impostor = policy(L, Ungated, Allow, &[]);
    // Same capability id and even the same digest, but installed, not built in.
    impostor.package = Some(PackageIdentity::installed("gh", "d1"));
    let bundled_only = Authorizer::new(["gh.op"]);
    assert_eq!(
        bundled_only.authorize(&impostor, &scope, L, &[], 1),
        Decision::NeedsApproval(Rule::UngatedNotAllowlisted)
    );
    let by_digest = Authorizer::new([AllowlistEntry::reviewed("gh.op", "d1")]);
    assert_eq!(
        by_digest.authorize(&impostor, &scope, L, &[], 1),
        Decision::Allow(Rule::UngatedAllowlisted)
    );
    impostor.package = Some(PackageIdentity::installed("gh", "d2"));
    assert_eq!(
        by_digest.authorize(&impostor, &scope, L, &[], 1),
        Decision::NeedsApproval(Rule::UngatedNotAllowlisted)
    );
}

#[test]
fn an_allowlisted_tool_with_effects_never_runs_ungated_and_is_refused_at_review() {
    let authorizer = Authorizer::new(["gh.op"]);
    let scope = InvocationScope::location("loc");
    let effects = [Effect::Network, Effect::UseSecret];
    let p = policy(L, Ungated, Allow, &effects);
    assert_eq!(
        authorizer.authorize(&p, &scope, L, &[], 1),
        Decision::NeedsApproval(Rule::UngatedNotAllowlisted)
    );
    let err = authorizer.review(&p).unwrap_err();
    assert_eq!(
        err,
        AllowlistError::DeclaresEffects {
            capability_id: "gh.op".into(),
            effects: effects.to_vec(),
        }
    );
    assert!(err.to_string().contains("`gh.op`"), "{err}");
    assert!(err.to_string().contains("network, use_secret"), "{err}");
    // An effect-free tool passes review; an entry for another package does not apply.
    assert_eq!(authorizer.review(&policy(L, Ungated, Allow, &[])), Ok(()));
    let mut other = p.clone();
    other.package = Some(PackageIdentity::installed("gh", "d1"));
    assert_eq!(authorizer.review(&other), Ok(()));
}

// A metric is labelled with the name; the audit log and the API carry the
// serialized tag: one spelling on every surface.
#[test]
fn a_rule_name_is_its_serialized_tag() {
    let rules = [
        Rule::NotModelVisible {
            visibility: Visibility::Api,
        },
        Rule::GateForbidden { origin: L },
        Rule::ConsentOutsideProduct { origin: A },
        Rule::DefaultPermissionDeny,
        Rule::EffectFloor {
            effect: Effect::Financial,
        },
        Rule::AskAlways,
        Rule::GrantCovers {
            grant_id: GrantId("g1".into()),
        },
        Rule::GatedNoGrant,
        Rule::DefaultPermissionAsk,
        Rule::ConsentSufficient,
        Rule::Ungated,
        Rule::UngatedAllowlisted,
        Rule::UngatedNotAllowlisted,
    ];
    for rule in rules {
        let tagged = serde_json::to_value(&rule).unwrap();
        assert_eq!(tagged["rule"], rule.name(), "{rule:?}");
    }
}
