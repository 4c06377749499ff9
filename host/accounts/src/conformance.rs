//! Behaviour every [`SecretStore`] that persists bindings must have, run
//! against each backend ([`MemoryStore`](super::MemoryStore),
//! [`EncryptedFileStore`](super::EncryptedFileStore), and
//! [`PgSecretStore`](super::PgSecretStore) in the end-to-end tests).
//! Exported with the `testing` feature.

use secrecy::{ExposeSecret, SecretString};

use super::{
    AccountAudience, AccountBinding, AccountKey, AuthReason, CredentialRequest, Lookup, Requester,
    SecretError, SecretStore,
};

fn audience(host: &str) -> AccountAudience {
    AccountAudience {
        scheme: "https".into(),
        host: host.into(),
        port: 443,
    }
}

async fn value(store: &dyn SecretStore, key: &AccountKey) -> Option<String> {
    store
        .get(key)
        .await
        .unwrap()
        .map(|v| v.expose_secret().to_owned())
}

/// Values, bindings, listing, deletion and the lookup a call makes, on an
/// empty `store`.
pub async fn run(store: &dyn SecretStore) {
    let repo = AccountKey::new("github", "github_token", ["repo"]);
    let admin = AccountKey::new("github", "github_token", ["admin", "repo"]);
    let api = audience("api.github.com");
    assert_eq!(store.list().await.unwrap(), []);
    assert_eq!(value(store, &repo).await, None);

    // A bound account round-trips; `put` replaces the value, keeps the binding.
    let binding = AccountBinding::new("github", [api.clone()]);
    store
        .put_bound(&repo, &binding, SecretString::from("ghp_one"))
        .await
        .unwrap();
    assert_eq!(value(store, &repo).await.as_deref(), Some("ghp_one"));
    assert_eq!(store.binding(&repo).await.unwrap(), Some(binding.clone()));
    store
        .put(&repo, SecretString::from("ghp_two"))
        .await
        .unwrap();
    assert_eq!(value(store, &repo).await.as_deref(), Some("ghp_two"));
    assert_eq!(store.binding(&repo).await.unwrap(), Some(binding.clone()));

    // An account stored with `put` alone is unbound until bound.
    store
        .put(&admin, SecretString::from("ghp_admin"))
        .await
        .unwrap();
    assert_eq!(store.binding(&admin).await.unwrap(), None);
    let mut keys = store.list().await.unwrap();
    keys.sort();
    assert_eq!(keys, [admin.clone(), repo.clone()]);
    let accounts = store.accounts().await.unwrap();
    assert_eq!(accounts.len(), 2);
    assert!(
        accounts
            .iter()
            .any(|a| a.key == repo && a.binding == binding)
    );

    // The lookup a call makes applies the binding.
    let scopes = vec!["repo".to_owned()];
    let request = |extension: Requester<'static>, host| CredentialRequest {
        vendor: "github",
        handle: "github_token",
        scopes: &scopes,
        requester: extension,
        audience: audience(host),
    };
    match store
        .lookup(&request("github".into(), "api.github.com"))
        .await
        .unwrap()
    {
        Lookup::Found(found) => assert_eq!(found.expose_secret(), "ghp_two"),
        Lookup::Refused(reason) => panic!("the bound account is refused: {reason}"),
    }
    assert!(matches!(
        store
            .lookup(&request("thief".into(), "api.github.com"))
            .await
            .unwrap(),
        Lookup::Refused(_)
    ));
    assert!(matches!(
        store
            .lookup(&request("github".into(), "evil.example"))
            .await
            .unwrap(),
        Lookup::Refused(_)
    ));

    // Binding changes persist; a binding for no account is refused.
    let shared = AccountBinding {
        extensions: vec!["github".into(), "helper".into()],
        ..binding.clone()
    };
    store.set_binding(&repo, &shared).await.unwrap();
    assert_eq!(store.binding(&repo).await.unwrap(), Some(shared.clone()));

    // A pinned consent persists, and other content under the same id is
    // refused until allowed again.
    let pinned = shared.pinned(Requester::new("github", "digest-one"));
    store.set_binding(&repo, &pinned).await.unwrap();
    assert_eq!(store.binding(&repo).await.unwrap(), Some(pinned));
    assert!(matches!(
        store
            .lookup(&request(
                Requester::new("github", "digest-two"),
                "api.github.com"
            ))
            .await
            .unwrap(),
        Lookup::Refused(AuthReason::Changed)
    ));
    let missing = AccountKey::new("gitlab", "token", ["api"]);
    assert!(matches!(
        store.set_binding(&missing, &binding).await,
        Err(SecretError::NoSuchAccount(_))
    ));
    assert_eq!(value(store, &missing).await, None);

    // Deletion removes the value and the binding, once.
    assert!(store.delete(&admin).await.unwrap());
    assert!(!store.delete(&admin).await.unwrap());
    assert_eq!(value(store, &admin).await, None);
    assert_eq!(store.binding(&admin).await.unwrap(), None);
    assert_eq!(store.list().await.unwrap(), [repo]);
}

/// Two hosts' stores `a` and `b` on one database, for a store that locks
/// refreshes across hosts: each takes the lock, reads a counter, waits,
/// and writes it plus one; taking turns, neither increment is lost (without
/// the lock both read 0). The lock of another account is not held up. The
/// store is left as it was.
pub async fn refresh_lock(a: &dyn SecretStore, b: &dyn SecretStore) {
    let key = AccountKey::new("example", "oauth_token", ["read"]);
    let other = AccountKey::new("example", "oauth_token", ["write"]);
    a.put(&key, SecretString::from("0")).await.unwrap();
    async fn increment(store: &dyn SecretStore, key: &AccountKey) {
        let guard = store.lock_refresh(key).await.unwrap();
        assert!(guard.is_some(), "the store offers no refresh lock");
        let n: u32 = value(store, key).await.unwrap().parse().unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        store
            .put(key, SecretString::from((n + 1).to_string()))
            .await
            .unwrap();
        drop(guard);
    }
    let held = a.lock_refresh(&key).await.unwrap();
    // Another account's lock is free while this one is held.
    drop(b.lock_refresh(&other).await.unwrap());
    drop(held);
    tokio::join!(increment(a, &key), increment(b, &key));
    assert_eq!(value(a, &key).await.as_deref(), Some("2"));
    assert!(a.delete(&key).await.unwrap());
}

/// Accounts per caller, on an empty `store`: a caller's calls use that
/// caller's own account (and its grant), never another caller's; the
/// deployment's account serves a caller only for a shared vendor, and a
/// call made for nobody never uses a caller's account.
pub async fn accounts_per_caller(store: &dyn SecretStore) {
    let api = audience("api.github.com");
    let binding = AccountBinding::new("github", [api.clone()]);
    let deployment = AccountKey::new("github", "github_token", ["repo"]);
    let alice = deployment.clone().owned_by("alice");
    for (key, value) in [(&deployment, "ghp_deploy"), (&alice, "ghp_alice")] {
        store
            .put_bound(key, &binding, SecretString::from(value))
            .await
            .unwrap();
    }
    let alice_grant = alice.sibling("github_token#oauth2");
    store
        .put(
            &alice_grant,
            SecretString::from(r#"{"refresh_token":"alice"}"#),
        )
        .await
        .unwrap();
    let scopes = vec!["repo".to_owned()];
    let shared = vec!["github".to_owned()];
    let lookup = async |owner: Option<&str>, shared: &[String]| {
        let request = CredentialRequest {
            vendor: "github",
            handle: "github_token",
            scopes: &scopes,
            requester: Requester::from("github").acting_for(owner, shared),
            audience: api.clone(),
        };
        let found = store.resolve(&request).await.unwrap();
        let value = match found.lookup {
            Lookup::Found(v) => Ok(v.expose_secret().to_owned()),
            Lookup::Refused(reason) => Err(reason),
        };
        (
            value,
            found.account,
            found.grant.map(|g| g.expose_secret().to_owned()),
        )
    };
    // Nobody's call: the deployment's account.
    assert_eq!(lookup(None, &[]).await.0.as_deref(), Ok("ghp_deploy"));
    // Alice's call: her own account, with her grant, even where shared.
    for with in [&[][..], &shared[..]] {
        let (value, account, grant) = lookup(Some("alice"), with).await;
        assert_eq!(value.as_deref(), Ok("ghp_alice"));
        assert_eq!(account.as_ref(), Some(&alice));
        assert_eq!(grant.as_deref(), Some(r#"{"refresh_token":"alice"}"#));
    }
    // Another extension naming the vendor, acting for Alice, gets nothing
    // of hers: her account is bound to the extension she connected it for.
    let thief = CredentialRequest {
        vendor: "github",
        handle: "github_token",
        scopes: &scopes,
        requester: Requester::from("thief").acting_for(Some("alice"), &shared),
        audience: api.clone(),
    };
    let stolen = store.resolve(&thief).await.unwrap();
    assert!(matches!(
        stolen.lookup,
        Lookup::Refused(AuthReason::Consent)
    ));
    // Bob has none: never Alice's; the deployment's only where shared.
    assert_eq!(lookup(Some("bob"), &[]).await.0, Err(AuthReason::Missing));
    let (value, account, _) = lookup(Some("bob"), &shared).await;
    assert_eq!(value.as_deref(), Ok("ghp_deploy"));
    assert_eq!(account, Some(deployment.clone()));
    // Alice's own account, refused to this extension, is refused: her call
    // does not act as the deployment's shared account instead.
    let elsewhere = AccountBinding::new("other", [api.clone()]);
    store.set_binding(&alice, &elsewhere).await.unwrap();
    assert_eq!(
        lookup(Some("alice"), &shared).await.0,
        Err(AuthReason::Consent)
    );
    store.set_binding(&alice, &binding).await.unwrap();
    // Without the deployment's account, nobody's call finds none.
    assert!(store.delete(&deployment).await.unwrap());
    assert_eq!(lookup(None, &shared).await.0, Err(AuthReason::Missing));
    let mut keys = store.list().await.unwrap();
    keys.sort();
    assert_eq!(keys, [alice.clone(), alice_grant.clone()]);
    for key in [&alice, &alice_grant] {
        store.delete(key).await.unwrap();
    }
}
