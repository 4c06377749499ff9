//! The PostgreSQL store: the store conformance suites (approvals; accounts
//! and secrets) on a real cluster, and two `warden serve --http` hosts with
//! data directories of their own that share nothing but the database and
//! its key: an account connected on one is used by the other, an approval
//! opened on one is answered on the other, survives the host that opened
//! it being killed, and runs exactly once; a grant made through one host is
//! honoured by the other.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::CallToolResult;
use secrecy::{ExposeSecret, SecretString};
use warden_egress::secrets::{
    AccountBinding, AccountKey, KeySource, PgSecretStore, SecretError, SecretStore,
};
use warden_registry::{PgStore, StoreError};
use warden_tests::{FakeGitHub, TestPostgres, Warden};

use crate::serve_auth::serve_on;
use crate::stateless::{approval_id, client, get_repo};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_store_conformance_suite_passes_on_postgres() {
    let pg = tokio::task::spawn_blocking(TestPostgres::start)
        .await
        .unwrap();
    let url = pg.create_database("conformance");
    let store = PgStore::connect(&url).await.expect("connect and migrate");
    // A statement the database does not answer fails in half a minute.
    let client = store.pool().get().await.unwrap();
    let timeout: String = client
        .query_one("SHOW statement_timeout", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(timeout, "30s");
    drop(client);
    warden_registry::testing::run(&store).await;
    warden_registry::testing::claims_race(Arc::new(store)).await;
    let pruned = PgStore::connect(&pg.create_database("prune"))
        .await
        .unwrap();
    warden_registry::testing::prunes(&pruned).await;
    let once = PgStore::connect(&pg.create_database("once")).await.unwrap();
    warden_registry::testing::one_pending_per_fingerprint(Arc::new(once)).await;

    // Hosts starting together migrate a fresh database once.
    let url = pg.create_database("together");
    let connects: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url).await })
        })
        .collect();
    for connect in connects {
        connect.await.unwrap().expect("concurrent migrations");
    }

    // A database written by a newer build is refused, not rewritten.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .execute("UPDATE warden_schema SET version = 99", &[])
        .await
        .unwrap();
    match PgStore::connect(&url).await {
        Err(StoreError::UnsupportedSchema { found: 99, .. }) => {}
        other => panic!("expected the newer schema to be refused, got {other:?}"),
    }

    // A URL that is not one is named as such, without echoing it.
    let error = PgStore::connect("postgres://user:hunter2@[::1:5432/db")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Config(_)), "{error:?}");
    assert!(!format!("{error:#?}").contains("hunter2"), "{error:?}");
}

/// A secret store on `url` (a host's pool) keyed by the key file `key`.
async fn secrets(url: &str, key: &Path) -> Result<PgSecretStore, SecretError> {
    let host = PgStore::connect(url).await.expect("connect");
    PgSecretStore::open(host.pool().clone(), KeySource::File(key.to_owned())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_postgres_conform_and_are_sealed_to_their_account() {
    let pg = tokio::task::spawn_blocking(TestPostgres::start)
        .await
        .unwrap();
    let url = pg.create_database("secrets");
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("secret.key");
    let store = secrets(&url, &key).await.expect("connect");
    warden_egress::secrets::conformance::run(&store).await;
    warden_egress::secrets::conformance::accounts_per_caller(&store).await;

    // Another host with the same key sees what this one wrote.
    let (one, two) = (
        secrets(&url, &key).await.unwrap(),
        secrets(&url, &key).await.unwrap(),
    );
    let alice = AccountKey::new("notion", "token", ["read"]);
    let bob = AccountKey::new("notion", "token", ["write"]);
    one.put(&alice, SecretString::from("secret_alice"))
        .await
        .unwrap();
    one.put(&bob, SecretString::from("secret_bob"))
        .await
        .unwrap();
    let read = two
        .get(&alice)
        .await
        .unwrap()
        .expect("written by the other host");
    assert_eq!(read.expose_secret(), "secret_alice");

    // Two hosts changing one account at once lose neither change.
    let binding = |extension: &str| AccountBinding::new(extension, Vec::new());
    let first = binding("first");
    let (a, b) = tokio::join!(
        one.set_binding(&alice, &first),
        two.put(&alice, SecretString::from("secret_alice_2")),
    );
    a.unwrap();
    b.unwrap();
    let value = one.get(&alice).await.unwrap().unwrap();
    assert_eq!(value.expose_secret(), "secret_alice_2");
    assert_eq!(two.binding(&alice).await.unwrap(), Some(first));

    // Two hosts refreshing one account take turns.
    warden_egress::secrets::conformance::refresh_lock(&one, &two).await;

    // No value is in the database in the clear.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let dump: Vec<Vec<u8>> = client
        .query("SELECT ciphertext FROM warden_secrets", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!dump.is_empty());
    assert!(
        dump.iter()
            .all(|c| !String::from_utf8_lossy(c).contains("secret_")),
        "a value is stored in the clear"
    );

    // A row copied onto another account does not decrypt there.
    client
        .execute(
            "UPDATE warden_secrets SET (nonce, ciphertext) = \
             (SELECT nonce, ciphertext FROM warden_secrets WHERE account LIKE '%read%') \
             WHERE account LIKE '%write%'",
            &[],
        )
        .await
        .unwrap();
    assert!(matches!(one.get(&bob).await, Err(SecretError::Corrupt(_))));
    // A host with another key (here: a key file not there yet, so made
    // anew) is refused at once, by name; it opened, and wrote accounts no
    // other host could read.
    let other = secrets(&url, &keys.path().join("other.key")).await;
    assert!(
        matches!(&other, Err(SecretError::Key(why)) if why.contains("same key")),
        "{other:?}"
    );
    // So is one on a database written before the check (its rows tell).
    client
        .execute("DELETE FROM warden_secret_key_check", &[])
        .await
        .unwrap();
    let other = secrets(&url, &keys.path().join("other.key")).await;
    assert!(matches!(&other, Err(SecretError::Key(_))), "{other:?}");
    secrets(&url, &key).await.expect("the database's own key");
}

fn ran(result: &CallToolResult) -> bool {
    result.is_error != Some(true)
        && result
            .structured_content
            .as_ref()
            .is_some_and(|s| s["full_name"] == "octo/hello")
}

/// `warden --store <url> <args>` on `warden`'s data directory.
fn cli(warden: &Warden, url: &str, args: &[&str]) -> warden_tests::Run {
    let mut all = vec!["--store", url];
    all.extend_from_slice(args);
    let run = warden.run(&all);
    assert_eq!(run.code, 0, "warden {args:?}: {run:?}");
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_on_one_postgres_share_approvals_and_grants() {
    let pg = tokio::task::spawn_blocking(TestPostgres::start)
        .await
        .unwrap();
    let url = pg.create_database("hosts");
    let fake = FakeGitHub::start().await;
    // Two hosts with nothing in common but the database and its key: the
    // first names the store in warden.toml, the second with --store.
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("secret.key");
    let (first, second) = (crate::warden(), crate::warden());
    fake.configure(&first);
    fake.configure(&second);
    first.configure_more(&format!(
        "\n[store]\nurl = {url:?}\nsecret_key_file = {key:?}\n"
    ));
    second.configure_more(&format!("\n[store]\nsecret_key_file = {key:?}\n"));
    // The account is connected through the first host only.
    FakeGitHub::store_token(&first);
    assert!(
        !std::fs::read_dir(first.data_dir())
            .unwrap()
            .any(|e| e.unwrap().file_name() == "secrets.enc"),
        "the secret went to the database, not the data directory"
    );
    let serve = |warden: &Warden| {
        let store: &[&str] = if std::ptr::eq(warden, &first) {
            &[]
        } else {
            &["--store", &url]
        };
        let args: Vec<&str> = ["--sessions", "none"]
            .iter()
            .chain(store)
            .copied()
            .collect();
        serve_on(warden, "127.0.0.1:0", &args)
    };
    let (serving_a, port_a) = serve(&first);
    let (_serving_b, port_b) = serve(&second);
    let (a, b) = (client(port_a).await, client(port_b).await);

    // Host A opens the approval; host B waits on the same request.
    let opened = approval_id(&get_repo(&a).await).expect("an approval id");
    assert_eq!(
        approval_id(&get_repo(&b).await).as_deref(),
        Some(opened.as_str())
    );

    // Host A dies (SIGKILL, mid-session): the approval is in the database.
    let _ = a.cancel().await;
    drop(serving_a);
    let listed = cli(&second, &url, &["--json", "approvals", "list"]).json();
    assert_eq!(listed[0]["id"], opened.as_str(), "{listed}");
    cli(&second, &url, &["approvals", "approve", &opened]);

    // A restarted host A and host B get the identical call at once.
    let (_serving_a, port_a) = serve(&first);
    let a = client(port_a).await;
    let (from_a, from_b) = tokio::join!(get_repo(&a), get_repo(&b));
    assert_eq!(
        usize::from(ran(&from_a)) + usize::from(ran(&from_b)),
        1,
        "{from_a:?}\n{from_b:?}"
    );
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);

    // The next identical call asks again; approving it with a grant through
    // host B's CLI covers later calls on host A.
    let asked = approval_id(&get_repo(&b).await).expect("a new approval");
    assert_ne!(asked, opened);
    cli(&first, &url, &["approvals", "approve", &asked, "--grant"]);
    let grants = cli(&second, &url, &["--json", "grants", "list"]).json();
    assert_eq!(grants.as_array().map(Vec::len), Some(1), "{grants}");
    for host in [&a, &b, &a] {
        let result = get_repo(host).await;
        assert!(ran(&result), "{result:?}");
    }
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 4);
    let _ = tokio::join!(a.cancel(), b.cancel());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_resuming_one_approval_at_once_dispatch_it_once() {
    let pg = tokio::task::spawn_blocking(TestPostgres::start)
        .await
        .unwrap();
    let url = pg.create_database("resume");
    let fake = FakeGitHub::start().await;
    let keys = tempfile::tempdir().unwrap();
    let store = format!(
        "\n[store]\nurl = {url:?}\nsecret_key_file = {:?}\n",
        keys.path().join("secret.key")
    );
    let (first, second) = (crate::warden(), crate::warden());
    for warden in [&first, &second] {
        fake.configure(warden);
        warden.configure_more(&store);
    }
    FakeGitHub::store_token(&first);
    let call = [
        "--json",
        "call",
        "github.get_repo",
        "--origin",
        "loop-run",
        "--input",
        r#"{"owner": "octo", "repo": "hello"}"#,
    ];
    // Asked on the first host, approved on the second.
    let asked = first.run(&call);
    assert_eq!(asked.code, 2, "{asked:?}");
    let id = asked.json()["approval_id"].as_str().unwrap().to_owned();
    let approved = second.run(&["approvals", "approve", &id]);
    assert_eq!(approved.code, 0, "{approved:?}");

    // Both hosts resume it at the same moment: one runs it.
    let resume = |warden: &Warden| {
        let mut args = call.to_vec();
        args.extend(["--resume", id.as_str()]);
        warden.run(&args)
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| resume(&first));
        let b = s.spawn(|| resume(&second));
        (a.join().unwrap(), b.join().unwrap())
    });
    let ran: Vec<_> = [&a, &b].into_iter().filter(|r| r.code == 0).collect();
    assert_eq!(ran.len(), 1, "{a:?}\n{b:?}");
    assert!(ran[0].stdout.contains("octo/hello"), "{:?}", ran[0]);
    let refused = if a.code == 0 { &b } else { &a };
    assert!(refused.all().contains("already"), "{refused:?}");
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);
}
