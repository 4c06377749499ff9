//! Package identity: grants, approvals and the reviewed ungated allowlist
//! bind to the package (id + content digest + bundled provenance), so a
//! package that takes over an id inherits none of them.

use std::path::Path;

use serde_json::json;
use warden_host::{
    AllowlistEntry, AuthorizedBy, CallFailure, Host, HostConfig, HostError, Invocation,
    InvokeOutcome, Origin, PackageSource, Replace, Resolution,
};
use warden_registry::{GrantTerms, Rule, ToolFailure, now_millis};

use warden_tests::package::{changed_echo, hostile_echo};

use crate::root;

fn host_at(dir: &Path) -> Host {
    Host::builder(HostConfig {
        data_dir: Some(dir.to_path_buf()),
        ..HostConfig::default()
    })
    .build()
    .unwrap()
}

fn echo(origin: Origin, text: &str) -> Invocation {
    Invocation::new("echo.echo", json!({ "text": text }), origin)
}

#[tokio::test]
async fn an_impostor_echo_with_effects_never_runs_ungated_from_loop_run() {
    let data = tempfile::tempdir().unwrap();
    let host = host_at(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    // The genuine bundled echo runs ungated from the model.
    let InvokeOutcome::Completed(done) = location.invoke(echo(Origin::LoopRun, "a")).await.unwrap()
    else {
        panic!("the bundled echo runs ungated")
    };
    assert_eq!(
        done.authorized_by,
        AuthorizedBy::Rule(Rule::UngatedAllowlisted)
    );

    let packages = tempfile::tempdir().unwrap();
    location
        .install_with(
            &PackageSource::Dir(hostile_echo(packages.path())),
            Replace::Yes,
        )
        .expect("a package without the allowlist's identity installs");
    match location.invoke(echo(Origin::LoopRun, "b")).await.unwrap() {
        InvokeOutcome::NeedsApproval(request) => {
            assert_eq!(request.rule, Rule::UngatedNotAllowlisted);
            assert_eq!(request.package.as_ref().map(|p| p.bundled), Some(false));
        }
        other => panic!("the impostor must not run ungated: {other:?}"),
    }
}

#[tokio::test]
async fn an_identical_copy_installed_from_a_directory_is_not_the_bundled_package() {
    let location = Host::builder(HostConfig::default())
        .build()
        .unwrap()
        .open_location("p");
    location
        .install(&PackageSource::Dir(root().join("packages/echo")))
        .unwrap();
    let InvokeOutcome::NeedsApproval(request) =
        location.invoke(echo(Origin::LoopRun, "a")).await.unwrap()
    else {
        panic!("an installed echo is third-party: the bundled review does not cover it")
    };
    assert_eq!(request.rule, Rule::UngatedNotAllowlisted);
}

#[tokio::test]
async fn an_allowlist_entry_for_a_tool_with_effects_is_refused_at_install() {
    let host = Host::builder(HostConfig {
        ungated_allowlist: vec![
            AllowlistEntry::bundled("echo.echo"),
            AllowlistEntry::bundled("github.get_repo"),
        ],
        ..HostConfig::default()
    })
    .build()
    .unwrap();
    let err = host.open_location("p").install_embedded().unwrap_err();
    let HostError::Allowlist { package, source } = &err else {
        panic!("expected an allowlist refusal, got {err:?}")
    };
    assert_eq!(package, "github");
    let message = err.to_string();
    assert!(message.contains("`github.get_repo`"), "{message}");
    assert!(message.contains("network, use_secret"), "{message}");
    assert!(matches!(
        source,
        warden_registry::AllowlistError::DeclaresEffects { .. }
    ));

    // The same holds for an entry reviewed by digest.
    let packages = tempfile::tempdir().unwrap();
    let hostile = hostile_echo(packages.path());
    let digest = warden_host::load_package(&PackageSource::Dir(hostile.clone()), host.validation())
        .unwrap()
        .digest;
    let host = Host::builder(HostConfig {
        ungated_allowlist: vec![
            AllowlistEntry::bundled("echo.echo"),
            AllowlistEntry::reviewed("echo.echo", digest),
        ],
        ..HostConfig::default()
    })
    .build()
    .unwrap();
    let err = host
        .open_location("p")
        .install(&PackageSource::Dir(hostile))
        .unwrap_err();
    assert!(matches!(err, HostError::Allowlist { .. }), "{err:?}");
}

/// Approve with a grant from automation, then call again.
async fn grant_echo(host: &Host, location: &warden_host::Location) {
    let InvokeOutcome::NeedsApproval(request) = location
        .invoke(echo(Origin::Automation, "first"))
        .await
        .unwrap()
    else {
        panic!("automation asks without a grant")
    };
    host.approvals()
        .resolve(
            &request.id,
            Resolution::ApproveAndGrant(GrantTerms::default()),
            now_millis(),
        )
        .await
        .unwrap();
    let InvokeOutcome::Completed(_) = location
        .resume(&request.id, echo(Origin::Automation, "first"))
        .await
        .unwrap()
    else {
        panic!("the approved call runs")
    };
}

#[tokio::test]
async fn a_grant_survives_a_restart_but_does_not_cover_a_replacement() {
    let data = tempfile::tempdir().unwrap();
    {
        let host = host_at(data.path());
        let location = host.open_location("p");
        location.install_embedded().unwrap();
        grant_echo(&host, &location).await;
    }
    // A new host process on the same data dir: the grant still covers the
    // bundled package.
    let host = host_at(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let InvokeOutcome::Completed(done) = location
        .invoke(echo(Origin::Automation, "again"))
        .await
        .unwrap()
    else {
        panic!("the grant covers the bundled echo after a restart")
    };
    assert!(matches!(
        done.authorized_by,
        AuthorizedBy::Rule(Rule::GrantCovers { .. })
    ));

    // A replacement under the same id needs a fresh grant.
    let packages = tempfile::tempdir().unwrap();
    location
        .install_with(
            &PackageSource::Dir(changed_echo(packages.path())),
            Replace::Yes,
        )
        .unwrap();
    let InvokeOutcome::NeedsApproval(request) = location
        .invoke(echo(Origin::Automation, "again"))
        .await
        .unwrap()
    else {
        panic!("a replaced package inherits no grant")
    };
    assert_eq!(request.rule, Rule::GatedNoGrant);
}

#[tokio::test]
async fn a_resume_after_the_package_changed_is_refused_with_that_reason() {
    let data = tempfile::tempdir().unwrap();
    let host = host_at(data.path());
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let InvokeOutcome::NeedsApproval(request) = location
        .invoke(echo(Origin::Automation, "x"))
        .await
        .unwrap()
    else {
        panic!("automation asks")
    };
    // v2 is installed while the question waits; then the person approves.
    let packages = tempfile::tempdir().unwrap();
    location
        .install_with(
            &PackageSource::Dir(changed_echo(packages.path())),
            Replace::Yes,
        )
        .unwrap();
    host.approvals()
        .resolve(&request.id, Resolution::ApproveOnce, now_millis())
        .await
        .unwrap();
    let outcome = location
        .resume(&request.id, echo(Origin::Automation, "x"))
        .await
        .unwrap();
    let InvokeOutcome::Failed(CallFailure::Refused(failure)) = outcome else {
        panic!("a resume after the package changed must be refused: {outcome:?}")
    };
    assert!(
        matches!(failure, ToolFailure::PackageChanged { ref extension_id, .. } if extension_id == "echo"),
        "{failure:?}"
    );
    assert!(
        failure
            .to_string()
            .contains("changed since this call was approved"),
        "{failure}"
    );
}
