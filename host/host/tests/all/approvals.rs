//! Approvals through the host: pending across a restart, resumed once.

use serde_json::json;
use warden_host::{
    AuthorizedBy, CallFailure, Host, HostConfig, Invocation, InvokeOutcome, Location, Origin,
    Resolution,
};
use warden_registry::{ApprovalId, ToolFailure, now_millis};

fn host(dir: &std::path::Path) -> Host {
    host_with(dir, HostConfig::default().runtime.max_input_bytes)
}

fn host_with(dir: &std::path::Path, max_input_bytes: usize) -> Host {
    let mut config = HostConfig {
        data_dir: Some(dir.to_path_buf()),
        ..HostConfig::default()
    };
    config.runtime.max_input_bytes = max_input_bytes;
    Host::builder(config).build().unwrap()
}

fn echo_from_automation() -> Invocation {
    // echo's gate for automation is gated_unless_granted: it asks.
    Invocation::new(
        "echo.echo",
        json!({ "text": "approved" }),
        Origin::Automation,
    )
}

/// `location` asks for approval of [`echo_from_automation`].
async fn ask(location: &Location) -> ApprovalId {
    let InvokeOutcome::NeedsApproval(request) =
        location.invoke(echo_from_automation()).await.unwrap()
    else {
        panic!("automation must ask")
    };
    request.id
}

/// A host on `dir` asks for approval of [`echo_from_automation`] and exits.
async fn asked_in_another_process(dir: &std::path::Path) -> ApprovalId {
    let host = host(dir);
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    ask(&location).await
}

#[tokio::test]
async fn a_pending_approval_survives_a_restart_and_dispatches_once() {
    let data = tempfile::tempdir().unwrap();
    let id = asked_in_another_process(data.path()).await;
    // A new host process on the same data dir.
    let host = host(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    assert!(
        host.approvals()
            .pending(&"p".into())
            .await
            .unwrap()
            .iter()
            .any(|r| r.id == id)
    );
    host.approvals()
        .resolve(&id, Resolution::ApproveOnce, now_millis())
        .await
        .unwrap();

    let mut changed = echo_from_automation();
    changed.input = json!({ "text": "something else" });
    let InvokeOutcome::Failed(CallFailure::Refused(ToolFailure::InputChanged { .. })) =
        location.resume(&id, changed).await.unwrap()
    else {
        panic!("a changed input is refused")
    };

    let InvokeOutcome::Completed(done) =
        location.resume(&id, echo_from_automation()).await.unwrap()
    else {
        panic!("the approved call runs")
    };
    assert_eq!(done.authorized_by, AuthorizedBy::Approval(id.clone()));
    let InvokeOutcome::Failed(CallFailure::Approval(_)) =
        location.resume(&id, echo_from_automation()).await.unwrap()
    else {
        panic!("the lease is spent")
    };
}

#[tokio::test]
async fn a_denial_with_feedback_is_a_failure_the_model_sees() {
    let data = tempfile::tempdir().unwrap();
    let host = host(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let id = ask(&location).await;
    host.approvals()
        .resolve(
            &id,
            Resolution::DenyWithFeedback("use a shorter text".into()),
            now_millis(),
        )
        .await
        .unwrap();
    let InvokeOutcome::Failed(failure) =
        location.resume(&id, echo_from_automation()).await.unwrap()
    else {
        panic!("declined")
    };
    assert_eq!(failure.code(), "user_declined");
    assert!(failure.message().contains("use a shorter text"));
}

#[tokio::test]
async fn invalid_input_never_reaches_an_approval() {
    let data = tempfile::tempdir().unwrap();
    let host = host(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let call = Invocation::new("echo.echo", json!({ "text": 1 }), Origin::Automation);
    let InvokeOutcome::Failed(failure) = location.invoke(call).await.unwrap() else {
        panic!("invalid")
    };
    assert_eq!(failure.code(), "invalid_input");
    assert!(
        host.approvals()
            .pending(&"p".into())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_resumed_call_is_checked_again_by_the_process_that_runs_it() {
    let data = tempfile::tempdir().unwrap();
    let id = asked_in_another_process(data.path()).await;
    // The process that resumes allows less input than the one that asked.
    let strict = host_with(data.path(), 8);
    let location = strict.open_location("p");
    location.install_embedded().unwrap();
    strict
        .approvals()
        .resolve(&id, Resolution::ApproveOnce, now_millis())
        .await
        .unwrap();
    let InvokeOutcome::Failed(failure) =
        location.resume(&id, echo_from_automation()).await.unwrap()
    else {
        panic!("over this process's input limit")
    };
    assert!(
        matches!(
            failure.runtime_error(),
            Some(warden_runtime::RuntimeError::InvalidInput { .. })
        ),
        "{failure:?}"
    );
    let CallFailure::Runtime { usage, .. } = &failure else {
        panic!("a runtime failure: {failure:?}")
    };
    assert_eq!(usage.fuel_consumed, 0, "no guest code ran");
}

/// Issue 43: the answer to an approval is the host's (`Location::answer`):
/// it runs the call the store recorded, in its session; a grant given in a
/// session covers that session only; an unknown id is the typed not-found.
#[tokio::test]
async fn an_answer_runs_the_recorded_call_and_a_sessions_grant_stays_in_it() {
    let data = tempfile::tempdir().unwrap();
    let host = host(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let in_session = |session: &str| {
        let mut call = echo_from_automation();
        call.session = Some(session.to_owned());
        call
    };
    let InvokeOutcome::NeedsApproval(request) = location.invoke(in_session("s1")).await.unwrap()
    else {
        panic!("automation must ask")
    };
    let grant = Resolution::ApproveAndGrant(warden_registry::GrantTerms::default());
    let InvokeOutcome::Completed(done) = location.answer(&request.id, grant).await.unwrap() else {
        panic!("the approved call runs")
    };
    assert_eq!(done.output["text"], "approved");
    // The grant covers the session it was given in, and no other.
    let InvokeOutcome::Completed(_) = location.invoke(in_session("s1")).await.unwrap() else {
        panic!("the session's grant covers its next call")
    };
    let InvokeOutcome::NeedsApproval(_) = location.invoke(in_session("s2")).await.unwrap() else {
        panic!("another session still asks")
    };

    let unknown = location
        .answer(
            &ApprovalId("no-such-approval".into()),
            Resolution::ApproveOnce,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            unknown,
            warden_host::HostError::Approval(warden_registry::ApprovalError::NotFound(_))
        ),
        "{unknown}"
    );
}

/// The store forgets settled approvals past the retention and keeps the
/// pending ones, through the host.
#[tokio::test]
async fn the_store_forgets_what_was_settled_past_its_retention() {
    let data = tempfile::tempdir().unwrap();
    let host = Host::builder(HostConfig {
        data_dir: Some(data.path().to_path_buf()),
        store_retention: std::time::Duration::from_millis(1),
        ..HostConfig::default()
    })
    .build()
    .unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let settled = ask(&location).await;
    host.approvals()
        .resolve(&settled, Resolution::ApproveOnce, now_millis() - 10)
        .await
        .unwrap();
    let waiting = Invocation::new("echo.echo", json!({ "text": "later" }), Origin::Automation);
    let InvokeOutcome::NeedsApproval(pending) = location.invoke(waiting).await.unwrap() else {
        panic!("automation must ask")
    };
    std::thread::sleep(std::time::Duration::from_millis(5));
    // The approval and its lease.
    assert_eq!(host.prune_store().await.unwrap(), 2);
    let store = host.approvals().store();
    assert_eq!(store.approval(&settled).await.unwrap(), None);
    assert!(store.approval(&pending.id).await.unwrap().is_some());
    assert_eq!(host.prune_store().await.unwrap(), 0);
}
