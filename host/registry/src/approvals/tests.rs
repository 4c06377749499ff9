use std::sync::Arc;

use tokio::sync::Barrier;

use serde_json::json;
use warden_core::{Effect, GateMatrix, GatePolicy, Permission, Visibility};

use super::*;
use crate::{Executor, MemoryApprovalStore, Registry, SqliteStore, StoreError, ToolDef};

const NOW: UnixMillis = 1_000_000;

fn call(input: Value) -> GatedCall {
    GatedCall {
        capability_id: "gh.create_issue".into(),
        scope: InvocationScope::location("loc").with_session("s1"),
        origin: Origin::LoopRun,
        input,
        package: Some(v1()),
    }
}

/// The package as approved (bundled) and a replacement with other content.
fn v1() -> PackageIdentity {
    PackageIdentity::bundled("gh", "d1")
}

fn v2() -> PackageIdentity {
    PackageIdentity::installed("gh", "d2")
}

/// `call` as provided by `package`.
fn call_of(package: PackageIdentity, input: Value) -> GatedCall {
    GatedCall {
        package: Some(package),
        ..call(input)
    }
}

/// `gated` as provided by `package`.
fn gated_of(package: PackageIdentity, policy: GatePolicy) -> ToolPolicy {
    ToolPolicy {
        package: Some(package),
        ..gated(policy)
    }
}

fn gated(policy: GatePolicy) -> ToolPolicy {
    ToolPolicy {
        capability_id: "gh.create_issue".into(),
        gate: GateMatrix {
            loop_run: Some(policy),
            ..Default::default()
        },
        default_permission: Permission::Ask,
        effects: vec![Effect::Network, Effect::ExternalWrite],
        visibility: Visibility::Model,
        package: Some(v1()),
    }
}

fn memory() -> Approvals {
    Approvals::new(
        Arc::new(MemoryApprovalStore::new()),
        ApprovalConfig::default(),
    )
}

async fn blocked(approvals: &Approvals, policy: &ToolPolicy, inv: &GatedCall) -> ApprovalRequest {
    match approvals
        .check(&Authorizer::default(), policy, inv, NOW)
        .await
        .unwrap()
    {
        Gate::Blocked(request) => *request,
        Gate::Run(rule) => panic!("expected a block, ran by {rule}"),
        Gate::Approved(dispatch) => panic!("expected a block, ran by {dispatch:?}"),
    }
}

#[tokio::test]
async fn calling_again_after_approval_claims_it_once() {
    let approvals = memory();
    let policy = gated(GatePolicy::AskAlways);
    let inv = call(json!({"title": "again"}));
    let id = blocked(&approvals, &policy, &inv).await.id;
    // Calling again before anyone answered waits on the same request.
    assert_eq!(blocked(&approvals, &policy, &inv).await.id, id);
    approvals
        .resolve(&id, Resolution::ApproveOnce, NOW)
        .await
        .unwrap();
    // Not the same call: another input, origin, session or package.
    let others = [
        call(json!({"title": "other"})),
        GatedCall {
            origin: Origin::Product,
            ..inv.clone()
        },
        GatedCall {
            scope: InvocationScope::location("loc").with_session("s2"),
            ..inv.clone()
        },
        call_of(v2(), json!({"title": "again"})),
    ];
    for other in &others {
        let policy = gated_of(other.package.clone().unwrap(), GatePolicy::AskAlways);
        let other_policy = ToolPolicy {
            gate: GateMatrix {
                loop_run: Some(GatePolicy::AskAlways),
                product: Some(GatePolicy::AskAlways),
                ..Default::default()
            },
            ..policy
        };
        assert_ne!(
            blocked(&approvals, &other_policy, other).await.id,
            id,
            "{other:?}"
        );
    }
    // The identical call claims the approval and runs.
    let gate = approvals
        .check(&Authorizer::default(), &policy, &inv, NOW + 1)
        .await
        .unwrap();
    let Gate::Approved(dispatch) = gate else {
        panic!("expected the approved call to run, got {gate:?}")
    };
    assert_eq!(dispatch.approval_id, id);
    assert_eq!(dispatch.invocation, inv);
    // Exactly once: neither a resume nor another identical call runs it again.
    assert!(matches!(
        approvals.resume(&id, &inv, NOW + 2).await,
        Err(ApprovalError::AlreadyDispatched(_))
    ));
    let next = blocked(&approvals, &policy, &inv).await;
    assert_ne!(next.id, id);
    assert_eq!(next.state, ApprovalState::Pending);
}

#[tokio::test]
async fn calling_again_after_the_lease_expired_asks_again() {
    let approvals = memory();
    let policy = gated(GatePolicy::GatedUnlessGranted);
    let inv = call(json!({"title": "late"}));
    let id = blocked(&approvals, &policy, &inv).await.id;
    let resolved = approvals
        .resolve(&id, Resolution::ApproveOnce, NOW)
        .await
        .unwrap();
    let expires_at = resolved.lease.unwrap().expires_at;
    let gate = approvals
        .check(&Authorizer::default(), &policy, &inv, expires_at)
        .await
        .unwrap();
    assert!(matches!(&gate, Gate::Blocked(r) if r.id != id), "{gate:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resumes_and_identical_calls_racing_across_connections_dispatch_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    let inv = call(json!({"title": "race again"}));
    let policy = gated(GatePolicy::GatedUnlessGranted);
    let setup = Approvals::new(
        Arc::new(SqliteStore::open(&path).unwrap()),
        ApprovalConfig::default(),
    );
    for round in 0..5 {
        let id = blocked(&setup, &policy, &inv).await.id;
        setup
            .resolve(&id, Resolution::ApproveOnce, NOW)
            .await
            .unwrap();
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                // Each racer has its own connection, as host processes would.
                let approvals = Approvals::new(
                    Arc::new(SqliteStore::open(&path).unwrap()),
                    ApprovalConfig::default(),
                );
                let (barrier, id, inv, policy) =
                    (barrier.clone(), id.clone(), inv.clone(), policy.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    if i % 2 == 0 {
                        approvals.resume(&id, &inv, NOW + 1).await.is_ok()
                    } else {
                        let gate = approvals
                            .check(&Authorizer::default(), &policy, &inv, NOW + 1)
                            .await;
                        matches!(gate, Ok(Gate::Approved(_)))
                    }
                })
            })
            .collect();
        let mut dispatched = 0;
        for handle in handles {
            dispatched += usize::from(handle.await.unwrap());
        }
        assert_eq!(dispatched, 1, "round {round}");
    }
}

#[tokio::test]
async fn request_is_persisted_with_fingerprint_before_resolution() {
    let approvals = memory();
    let inv = call(json!({"title": "bug"}));
    let request = blocked(&approvals, &gated(GatePolicy::GatedUnlessGranted), &inv).await;
    let stored = approvals
        .store()
        .approval(&request.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state, ApprovalState::Pending);
    assert_eq!(stored.fingerprint, inv.fingerprint());
    assert_eq!(stored.rule, Rule::GatedNoGrant);
    assert_eq!(approvals.pending(&"loc".into()).await.unwrap(), [stored]);
    assert!(matches!(
        approvals.resume(&request.id, &inv, NOW).await,
        Err(ApprovalError::Pending(_))
    ));
}

#[tokio::test]
async fn approval_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    let inv = call(json!({"title": "bug"}));
    let id = {
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let approvals = Approvals::new(store, ApprovalConfig::default());
        blocked(&approvals, &gated(GatePolicy::GatedUnlessGranted), &inv)
            .await
            .id
    }; // store dropped: the "host" is gone
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let approvals = Approvals::new(store, ApprovalConfig::default());
    assert_eq!(approvals.pending(&"loc".into()).await.unwrap()[0].id, id);
    approvals
        .resolve(&id, Resolution::ApproveOnce, NOW + 5)
        .await
        .unwrap();
    let dispatch = approvals.resume(&id, &inv, NOW + 6).await.unwrap();
    assert_eq!(dispatch.invocation, inv);
    assert!(matches!(
        approvals.resume(&id, &inv, NOW + 7).await,
        Err(ApprovalError::AlreadyDispatched(_))
    ));
}

#[tokio::test]
async fn resume_with_mutated_input_is_refused() {
    let approvals = memory();
    let inv = call(json!({"title": "bug"}));
    let id = blocked(&approvals, &gated(GatePolicy::GatedUnlessGranted), &inv)
        .await
        .id;
    approvals
        .resolve(&id, Resolution::ApproveOnce, NOW)
        .await
        .unwrap();
    let mutated = call(json!({"title": "bug", "labels": ["prod"]}));
    let err = approvals.resume(&id, &mutated, NOW).await.unwrap_err();
    assert!(
        matches!(
            err.into_tool_failure(),
            Ok(ToolFailure::InputChanged { .. })
        ),
        "changed input must be a typed failure"
    );
    // The refused resume did not spend the lease.
    assert!(approvals.resume(&id, &inv, NOW).await.is_ok());
}

#[tokio::test]
async fn resume_after_the_package_changed_is_refused_as_such() {
    let approvals = memory();
    let inv = call(json!({"title": "bug"}));
    let id = blocked(&approvals, &gated(GatePolicy::GatedUnlessGranted), &inv)
        .await
        .id;
    approvals
        .resolve(&id, Resolution::ApproveOnce, NOW)
        .await
        .unwrap();
    // Same capability id, same input: only the package content changed.
    let replaced = call_of(v2(), json!({"title": "bug"}));
    let failure = approvals
        .resume(&id, &replaced, NOW)
        .await
        .unwrap_err()
        .into_tool_failure()
        .unwrap();
    assert_eq!(
        failure,
        ToolFailure::PackageChanged {
            approval_id: id.clone(),
            extension_id: "gh".into()
        }
    );
    assert!(
        failure
            .to_string()
            .contains("changed since this call was approved"),
        "{failure}"
    );
    // The refusal did not spend the lease: the approved package still runs once.
    assert!(approvals.resume(&id, &inv, NOW).await.is_ok());
}

#[tokio::test]
async fn a_grant_covers_only_the_package_it_was_given_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    let authorizer = Authorizer::default();
    let policy = gated(GatePolicy::GatedUnlessGranted);
    {
        let approvals = Approvals::new(
            Arc::new(SqliteStore::open(&path).unwrap()),
            ApprovalConfig::default(),
        );
        let inv = call(json!({"title": "one"}));
        let id = blocked(&approvals, &policy, &inv).await.id;
        approvals
            .resolve(&id, Resolution::ApproveAndGrant(GrantTerms::default()), NOW)
            .await
            .unwrap();
    } // restart
    let approvals = Approvals::new(
        Arc::new(SqliteStore::open(&path).unwrap()),
        ApprovalConfig::default(),
    );
    let next = call(json!({"title": "two"}));
    assert!(matches!(
        approvals
            .check(&authorizer, &policy, &next, NOW)
            .await
            .unwrap(),
        Gate::Run(Rule::GrantCovers { .. })
    ));
    let impostor = gated_of(v2(), GatePolicy::GatedUnlessGranted);
    let request = blocked(
        &approvals,
        &impostor,
        &call_of(v2(), json!({"title": "two"})),
    )
    .await;
    assert_eq!(request.rule, Rule::GatedNoGrant);
    assert_eq!(request.package, Some(v2()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_resumes_dispatch_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    let inv = call(json!({"title": "race"}));
    let setup = Approvals::new(
        Arc::new(SqliteStore::open(&path).unwrap()),
        ApprovalConfig::default(),
    );
    for round in 0..10 {
        let id = blocked(&setup, &gated(GatePolicy::GatedUnlessGranted), &inv)
            .await
            .id;
        setup
            .resolve(&id, Resolution::ApproveOnce, NOW)
            .await
            .unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                // Each resumer has its own connection, as two host processes would.
                let approvals = Approvals::new(
                    Arc::new(SqliteStore::open(&path).unwrap()),
                    ApprovalConfig::default(),
                );
                let (barrier, id, inv) = (barrier.clone(), id.clone(), inv.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    approvals.resume(&id, &inv, NOW + 1).await
                })
            })
            .collect();
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await.unwrap());
        }
        let dispatched = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(dispatched, 1, "round {round}: {results:?}");
        assert!(
            results
                .iter()
                .any(|r| matches!(r, Err(ApprovalError::AlreadyDispatched(_)))),
            "round {round}: {results:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_resumes_on_one_shared_store_dispatch_once() {
    let approvals = Approvals::new(
        Arc::new(SqliteStore::open_in_memory().unwrap()),
        ApprovalConfig::default(),
    );
    let inv = call(json!({"title": "tasks"}));
    let id = blocked(&approvals, &gated(GatePolicy::AskAlways), &inv)
        .await
        .id;
    approvals
        .resolve(&id, Resolution::ApproveOnce, NOW)
        .await
        .unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (approvals, id, inv) = (approvals.clone(), id.clone(), inv.clone());
            tokio::spawn(async move { approvals.resume(&id, &inv, NOW + 1).await })
        })
        .collect();
    let mut dispatched = 0;
    for task in tasks {
        if task.await.unwrap().is_ok() {
            dispatched += 1;
        }
    }
    assert_eq!(dispatched, 1);
}

#[tokio::test]
async fn leases_expire() {
    let approvals = Approvals::new(
        Arc::new(MemoryApprovalStore::new()),
        ApprovalConfig {
            lease_ttl: Duration::from_secs(60),
        },
    );
    let inv = call(json!({}));
    let id = blocked(&approvals, &gated(GatePolicy::GatedUnlessGranted), &inv)
        .await
        .id;
    let resolved = approvals
        .resolve(&id, Resolution::ApproveOnce, NOW)
        .await
        .unwrap();
    assert_eq!(resolved.lease.unwrap().expires_at, NOW + 60_000);
    let err = approvals.resume(&id, &inv, NOW + 60_000).await.unwrap_err();
    assert!(matches!(
        err,
        ApprovalError::Failure(ToolFailure::ApprovalExpired { .. })
    ));
}

#[tokio::test]
async fn declines_and_dismissals_are_typed_failures() {
    let approvals = memory();
    let policy = gated(GatePolicy::GatedUnlessGranted);
    let cases = [
        (Resolution::Deny, None),
        (
            Resolution::DenyWithFeedback("label it `triage`".into()),
            Some("label it `triage`"),
        ),
    ];
    for (resolution, feedback) in cases {
        let inv = call(json!({"case": feedback}));
        let id = blocked(&approvals, &policy, &inv).await.id;
        approvals.resolve(&id, resolution, NOW).await.unwrap();
        let failure = approvals
            .resume(&id, &inv, NOW)
            .await
            .unwrap_err()
            .into_tool_failure();
        let Ok(ToolFailure::Declined { feedback: got, .. }) = failure else {
            panic!("expected a decline, got {failure:?}");
        };
        assert_eq!(got.as_deref(), feedback);
    }
    let inv = call(json!({"case": "dismiss"}));
    let id = blocked(&approvals, &policy, &inv).await.id;
    approvals
        .resolve(&id, Resolution::Dismiss, NOW)
        .await
        .unwrap();
    assert!(matches!(
        approvals
            .resume(&id, &inv, NOW)
            .await
            .unwrap_err()
            .into_tool_failure(),
        Ok(ToolFailure::Dismissed { .. })
    ));
    assert!(matches!(
        approvals.resolve(&id, Resolution::ApproveOnce, NOW).await,
        Err(ApprovalError::AlreadyResolved(_))
    ));
}

/// Without the tool (it is gone, and its package with it), a refusal is
/// told only for the call that was asked about — by capability id or model
/// name, at its Location, in its session, from its origin, with its input;
/// pending and approved answers are none.
#[tokio::test]
async fn a_refusal_is_told_for_its_own_call_only() {
    let approvals = memory();
    let policy = gated(GatePolicy::GatedUnlessGranted);
    let asked = |case: &str, resolution: Option<Resolution>| {
        let (approvals, policy) = (&approvals, &policy);
        let input = json!({ "case": case });
        async move {
            let id = blocked(approvals, policy, &call(input)).await.id;
            if let Some(resolution) = resolution {
                approvals.resolve(&id, resolution, NOW).await.unwrap();
            }
            id
        }
    };
    let refusal = |id: ApprovalId, call: GatedCall| {
        let approvals = &approvals;
        async move { approvals.refusal(&id, &call).await.unwrap() }
    };
    // The call as resumed once its tool is gone: named, no package.
    let named = |case: &str, tool: &str| GatedCall {
        capability_id: tool.into(),
        package: None,
        ..call(json!({ "case": case }))
    };

    let pending = asked("pending", None).await;
    let told = refusal(pending, named("pending", "gh.create_issue")).await;
    assert_eq!(told, None);
    let approved = asked("approved", Some(Resolution::ApproveOnce)).await;
    let told = refusal(approved, named("approved", "gh.create_issue")).await;
    assert_eq!(told, None);
    let unknown = ApprovalId("apr_unknown".into());
    assert_eq!(refusal(unknown, named("x", "gh.create_issue")).await, None);

    let feedback = Resolution::DenyWithFeedback("not today".into());
    let declined = asked("declined", Some(feedback)).await;
    for tool in ["gh.create_issue", "gh_create_issue"] {
        let told = refusal(declined.clone(), named("declined", tool)).await;
        let Some(ToolFailure::Declined {
            approval_id,
            feedback,
        }) = told
        else {
            panic!("{tool} is the declined tool: {told:?}")
        };
        assert_eq!(approval_id, declined);
        assert_eq!(feedback.as_deref(), Some("not today"));
    }
    let others = [
        named("declined", "gh.close_issue"),
        named("other input", "gh.create_issue"),
        GatedCall {
            scope: InvocationScope::location("other").with_session("s1"),
            ..named("declined", "gh.create_issue")
        },
        GatedCall {
            scope: InvocationScope::location("loc").with_session("s2"),
            ..named("declined", "gh.create_issue")
        },
        GatedCall {
            origin: Origin::Automation,
            ..named("declined", "gh.create_issue")
        },
    ];
    for other in others {
        let told = refusal(declined.clone(), other.clone()).await;
        assert_eq!(told, None, "{other:?}");
    }

    let dismissed = asked("dismissed", Some(Resolution::Dismiss)).await;
    assert!(matches!(
        refusal(dismissed, named("dismissed", "gh.create_issue")).await,
        Some(ToolFailure::Dismissed { .. })
    ));
}

#[tokio::test]
async fn interruption_and_defects_are_never_tool_failures() {
    assert!(ApprovalError::Interrupted.into_tool_failure().is_err());
    let defect = ApprovalError::Store(StoreError::Corrupt { what: "row".into() });
    assert!(defect.is_defect());
    assert!(matches!(
        defect.into_tool_failure(),
        Err(ApprovalError::Store(_))
    ));
    let denied = ApprovalError::from(ToolFailure::Denied {
        rule: Rule::DefaultPermissionDeny,
    });
    assert!(denied.into_tool_failure().is_ok());
}

#[tokio::test]
async fn approve_and_grant_covers_later_calls_except_ask_always() {
    let approvals = memory();
    let inv = call(json!({"title": "one"}));
    let policy = gated(GatePolicy::GatedUnlessGranted);
    let id = blocked(&approvals, &policy, &inv).await.id;
    let resolved = approvals
        .resolve(&id, Resolution::ApproveAndGrant(GrantTerms::default()), NOW)
        .await
        .unwrap();
    let grant_id = resolved.grant.unwrap().id;
    let _ = approvals.resume(&id, &inv, NOW).await.unwrap();
    let next = call(json!({"title": "two"}));
    let authorizer = Authorizer::default();
    assert_eq!(
        approvals
            .check(&authorizer, &policy, &next, NOW)
            .await
            .unwrap(),
        Gate::Run(Rule::GrantCovers { grant_id })
    );
    // The same grant never counts for ask_always.
    let always = gated(GatePolicy::AskAlways);
    assert!(matches!(
        approvals
            .check(&authorizer, &always, &next, NOW)
            .await
            .unwrap(),
        Gate::Blocked(_)
    ));
}

#[tokio::test]
async fn denied_calls_fail_typed_without_a_request() {
    let approvals = memory();
    let err = approvals
        .check(
            &Authorizer::default(),
            &gated(GatePolicy::Forbidden),
            &call(json!({})),
            NOW,
        )
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        ApprovalError::Failure(ToolFailure::Denied {
            rule: Rule::GateForbidden { .. }
        })
    ));
    assert!(approvals.pending(&"loc".into()).await.unwrap().is_empty());
}

#[tokio::test]
async fn filtering_is_not_authorization() {
    let registry = Registry::new("loc".into());
    let _r = registry
        .transform("builtin", |d| {
            d.add(
                ToolDef::new("edit", "Edit a file.", json!({}), Executor::key("b.edit")).with_gate(
                    GateMatrix {
                        loop_run: Some(GatePolicy::GatedUnlessGranted),
                        ..Default::default()
                    },
                ),
            )?
            .add(ToolDef::new(
                "read",
                "Read a file.",
                json!({}),
                Executor::key("b.read"),
            ))?;
            Ok(())
        })
        .unwrap();
    let snapshot = registry.snapshot().filtered(&["edit"]);
    let authorizer = Authorizer::default();
    let scope = InvocationScope::location("loc");
    // Hidden from the catalog, yet a call that reaches execution is still
    // decided by the tool's own policy (here: it asks, it is not denied).
    assert!(snapshot.is_hidden("edit"));
    let edit = snapshot.lookup("edit").unwrap();
    let decision = authorizer.authorize(&edit.def().into(), &scope, Origin::LoopRun, &[], NOW);
    assert_eq!(decision, Decision::NeedsApproval(Rule::GatedNoGrant));
    // Visible in the catalog does not authorize either: `read` has no gate.
    assert!(snapshot.tools().any(|t| t.model_name() == "read"));
    let read = snapshot.lookup("read").unwrap();
    let decision = authorizer.authorize(&read.def().into(), &scope, Origin::LoopRun, &[], NOW);
    assert_eq!(
        decision,
        Decision::Deny(Rule::GateForbidden {
            origin: Origin::LoopRun
        })
    );
}

#[tokio::test]
async fn an_approve_and_grant_leaves_nothing_to_run_after_the_grant_is_revoked() {
    let approvals = memory();
    let authorizer = Authorizer::default();
    let policy = gated(GatePolicy::GatedUnlessGranted);
    let inv = call(json!({"title": "granted"}));
    let id = blocked(&approvals, &policy, &inv).await.id;
    let grant_id = approvals
        .resolve(&id, Resolution::ApproveAndGrant(GrantTerms::default()), NOW)
        .await
        .unwrap()
        .grant
        .unwrap()
        .id;
    // The approved call itself spends its approval; later ones use the grant.
    let first = approvals
        .check(&authorizer, &policy, &inv, NOW)
        .await
        .unwrap();
    assert!(
        matches!(&first, Gate::Approved(d) if d.approval_id == id),
        "{first:?}"
    );
    assert_eq!(
        approvals
            .check(&authorizer, &policy, &inv, NOW)
            .await
            .unwrap(),
        Gate::Run(Rule::GrantCovers {
            grant_id: grant_id.clone()
        })
    );
    assert_eq!(
        approvals
            .grants(&"loc".into(), NOW)
            .await
            .unwrap()
            .into_iter()
            .map(|g| g.id.0)
            .collect::<Vec<_>>(),
        [grant_id.0.as_str()]
    );
    assert!(approvals.revoke_grant(&grant_id).await.unwrap());
    assert!(
        approvals
            .grants(&"loc".into(), NOW)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        approvals
            .check(&authorizer, &policy, &inv, NOW)
            .await
            .unwrap(),
        Gate::Blocked(_)
    ));
}
