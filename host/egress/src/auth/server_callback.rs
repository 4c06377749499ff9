//! OAuth callbacks a server takes on its own public origin (`warden serve
//! --public-url`): a person's browser, wherever it runs, returns there
//! rather than to a loopback listener on the serving machine.
//!
//! Each authorization waiting for its callback is registered under its
//! `state` (random, single use) until the callback comes, it times out, or
//! its connection is dropped. A callback whose state nobody waits for is
//! refused, and no waiting authorization learns of it.
//!
//! Hosts behind one public URL share a store ([`CallbackRouter::relayed`]):
//! the browser may come back to any of them. The waiting host records that
//! it waits (under the state, in the secret store: sealed, as a host
//! record no account can be named like); a host that receives a callback
//! it does not wait for itself passes it on through the store only when
//! such a record exists, and the waiting host picks it up. A state nobody
//! waits for writes nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use tokio::sync::oneshot;

use super::AuthError;
use super::loopback::Callback;
use crate::secrets::{AccountKey, SecretStore};

/// The path a server takes callbacks at.
pub const SERVER_CALLBACK_PATH: &str = "/oauth/callback";

/// At most this many authorizations wait at once; more are refused.
const MAX_WAITING: usize = 1024;

type Waiting = HashMap<String, (oneshot::Sender<Result<Callback, AuthError>>, StartPage)>;

/// Where [`START_PATH`] sends a person's browser: what the connection is,
/// for whom, and the authorization server's URL to continue to. Shown
/// first so that a person handed someone else's link sees whose account
/// Warden would make theirs before anything is authorized.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StartPage {
    /// The authorization server's authorize URL.
    pub authorize_url: String,
    /// The account's vendor.
    pub vendor: String,
    /// The caller the account becomes (`None`: the deployment's).
    pub owner: Option<String>,
    /// The packages the account is connected for (each gets the person's
    /// consent to use it).
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Unix seconds after which the connection no longer waits.
    pub expires: u64,
}

/// The path of the page a connection's link opens (`?state=`).
pub const START_PATH: &str = "/oauth/start";

/// How long a waiting connection's records are honoured.
const WAIT_LIFETIME: Duration = Duration::from_secs(600);

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How often a waiting host looks for a callback another host relayed.
const RELAY_POLL: Duration = Duration::from_millis(250);

/// The authorizations waiting for a callback on a server's origin.
#[derive(Debug, Clone, Default)]
pub struct CallbackRouter {
    waiting: Arc<Mutex<Waiting>>,
    /// The store hosts behind one public URL share, when they do.
    relay: Option<Arc<dyn SecretStore>>,
}

/// One authorization waiting for its callback; dropping it stops waiting.
#[derive(Debug)]
pub struct CallbackWait {
    state: String,
    answer: oneshot::Receiver<Result<Callback, AuthError>>,
    router: CallbackRouter,
}

/// The record saying a host waits for `state`, and the one a relayed
/// callback is left in: host records (`#` in the handle), never accounts.
fn relay_keys(state: &str) -> (AccountKey, AccountKey) {
    let key = |kind: &str| AccountKey::new("warden", format!("#{kind}/{state}"), [""; 0]);
    (key("callback-wait"), key("callback"))
}

/// What a callback request comes to, for the page the browser is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// It completed a waiting authorization (which may still fail, e.g. at
    /// the code exchange: the person's client says so).
    Completed,
    /// The authorization server said no (`error=`); the waiting
    /// authorization ends with it.
    Refused,
    /// No authorization waits for this `state`, or the request was not a
    /// callback.
    Unknown,
}

impl CallbackRouter {
    /// A router whose callbacks may come to any host sharing `store`.
    pub fn relayed(store: Arc<dyn SecretStore>) -> Self {
        CallbackRouter {
            waiting: Arc::default(),
            relay: Some(store),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for the callback carrying `state`, whose link shows `start`
    /// (recorded in the shared store, when there is one, so another host
    /// may show the page and pass the callback on).
    pub async fn expect(
        &self,
        state: &str,
        mut start: StartPage,
    ) -> Result<CallbackWait, AuthError> {
        start.expires = unix_now() + WAIT_LIFETIME.as_secs();
        let waiting = self.expect_here(state, start.clone())?;
        if let Some(store) = &self.relay {
            let (marker, _) = relay_keys(state);
            let record = serde_json::to_string(&start).unwrap_or_default();
            store.put(&marker, SecretString::from(record)).await?;
        }
        Ok(waiting)
    }

    /// The page of the connection waiting for `state`, here or on another
    /// host of the store; `None` when none waits (or it expired).
    pub async fn start_page(&self, query: &str) -> Option<StartPage> {
        let state = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())?;
        if let Some((_, page)) = self.lock().get(&state) {
            return Some(page.clone());
        }
        self.waiting_elsewhere(&state).await
    }

    /// The record of another host waiting for `state`, unexpired.
    async fn waiting_elsewhere(&self, state: &str) -> Option<StartPage> {
        let store = self.relay.as_ref()?;
        let (marker, _) = relay_keys(state);
        let record = store.get(&marker).await.ok()??;
        let page: StartPage = serde_json::from_str(record.expose_secret()).ok()?;
        (page.expires > unix_now()).then_some(page)
    }

    fn expect_here(&self, state: &str, start: StartPage) -> Result<CallbackWait, AuthError> {
        let (sender, answer) = oneshot::channel();
        let mut waiting = self.lock();
        waiting.retain(|_, (sender, _)| !sender.is_closed());
        if waiting.len() >= MAX_WAITING {
            return Err(AuthError::Listener(format!(
                "{MAX_WAITING} authorizations are already waiting for their callback"
            )));
        }
        waiting.insert(state.to_owned(), (sender, start));
        Ok(CallbackWait {
            state: state.to_owned(),
            answer,
            router: self.clone(),
        })
    }

    /// Hand the query string of a `GET` at [`SERVER_CALLBACK_PATH`] to the
    /// authorization waiting for its `state`: here, or through the shared
    /// store to the host that waits for it.
    pub async fn deliver(&self, query: &str) -> Delivered {
        let param = |name: &str| {
            url::form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let Some(state) = param("state") else {
            return Delivered::Unknown;
        };
        let (result, delivered) = outcome(param("error"), param("code"), &state);
        let Some((sender, _)) = self.lock().remove(&state) else {
            return self.relay_to_other_host(&state, &result, delivered).await;
        };
        // The authorization may have stopped waiting meanwhile.
        let _ = sender.send(result);
        delivered
    }

    /// Leave a callback for the host that waits for `state`, if one does.
    async fn relay_to_other_host(
        &self,
        state: &str,
        result: &Result<Callback, AuthError>,
        delivered: Delivered,
    ) -> Delivered {
        let refused = || {
            tracing::warn!("an OAuth callback whose state nobody waits for was refused");
            Delivered::Unknown
        };
        let Some(store) = &self.relay else {
            return refused();
        };
        let (_, relayed) = relay_keys(state);
        if self.waiting_elsewhere(state).await.is_none() {
            return refused();
        }
        let record = match result {
            Ok(callback) => serde_json::json!({ "code": callback.code }),
            Err(error) => serde_json::json!({ "error": error.to_string() }),
        };
        match store
            .put(&relayed, SecretString::from(record.to_string()))
            .await
        {
            Ok(()) => delivered,
            Err(error) => {
                tracing::warn!(%error, "could not pass an OAuth callback on to its host");
                refused()
            }
        }
    }
}

/// What the callback's parameters say: the code, or why there is none.
fn outcome(
    error: Option<String>,
    code: Option<String>,
    state: &str,
) -> (Result<Callback, AuthError>, Delivered) {
    match (error, code) {
        (Some(error), _) => (
            Err(AuthError::Authorization(printable(&error))),
            Delivered::Refused,
        ),
        (None, Some(code)) if !code.is_empty() => (
            Ok(Callback {
                code,
                state: state.to_owned(),
            }),
            Delivered::Completed,
        ),
        _ => (
            Err(AuthError::Authorization(
                "the callback carried no code".into(),
            )),
            Delivered::Refused,
        ),
    }
}

impl CallbackWait {
    /// The callback, within `timeout`: to this host, or passed on by
    /// another through the shared store.
    pub async fn wait(mut self, timeout: Duration) -> Result<Callback, AuthError> {
        let relayed = relayed(self.router.relay.clone(), self.state.clone());
        let result = tokio::select! {
            answer = &mut self.answer => match answer {
                Ok(result) => result,
                Err(_) => Err(AuthError::Listener("the server stopped waiting".into())),
            },
            relayed = relayed => relayed,
            () = tokio::time::sleep(timeout) => Err(AuthError::CallbackTimeout(timeout.as_secs())),
        };
        self.forget().await;
        result
    }

    /// Remove this wait's records from the shared store.
    async fn forget(&self) {
        if let Some(store) = &self.router.relay {
            let (marker, relayed) = relay_keys(&self.state);
            for key in [marker, relayed] {
                if let Err(error) = store.delete(&key).await {
                    tracing::warn!(%error, "could not remove an OAuth callback record");
                }
            }
        }
    }
}

/// The callback another host left in `store` for `state`; pending for
/// ever without a store.
async fn relayed(
    store: Option<Arc<dyn SecretStore>>,
    state: String,
) -> Result<Callback, AuthError> {
    let Some(store) = store else {
        return std::future::pending().await;
    };
    let (_, relayed) = relay_keys(&state);
    loop {
        tokio::time::sleep(RELAY_POLL).await;
        let Some(record) = store.get(&relayed).await? else {
            continue;
        };
        let record: serde_json::Value = serde_json::from_str(record.expose_secret())
            .map_err(|_| AuthError::Authorization("a relayed callback is unreadable".into()))?;
        return match (record["code"].as_str(), record["error"].as_str()) {
            (Some(code), _) => Ok(Callback {
                code: code.to_owned(),
                state,
            }),
            (None, error) => Err(AuthError::Authorization(
                error
                    .unwrap_or("the authorization did not complete")
                    .to_owned(),
            )),
        };
    }
}

impl Drop for CallbackWait {
    fn drop(&mut self) {
        self.router.lock().remove(&self.state);
        // Abandoned (declined, the process going): its records go too.
        if let (Some(store), Ok(runtime)) = (
            self.router.relay.clone(),
            tokio::runtime::Handle::try_current(),
        ) {
            let (marker, relayed) = relay_keys(&self.state);
            runtime.spawn(async move {
                for key in [marker, relayed] {
                    let _ = store.delete(&key).await;
                }
            });
        }
    }
}

/// `text` from an authorization server, bounded and printable.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> StartPage {
        StartPage {
            authorize_url: "https://auth.example/authorize?state=s".into(),
            vendor: "example".into(),
            owner: Some("alice".into()),
            extensions: vec!["github".into()],
            expires: 0,
        }
    }

    #[tokio::test]
    async fn a_callback_reaches_only_the_authorization_with_its_state() {
        let router = CallbackRouter::default();
        let waiting = router.expect("s1", page()).await.unwrap();
        assert_eq!(
            router.deliver("code=c&state=other").await,
            Delivered::Unknown
        );
        assert_eq!(router.deliver("code=c").await, Delivered::Unknown);
        assert_eq!(
            router.deliver("code=abc&state=s1").await,
            Delivered::Completed
        );
        let callback = waiting.wait(Duration::from_secs(1)).await.unwrap();
        assert_eq!(
            (callback.code.as_str(), callback.state.as_str()),
            ("abc", "s1")
        );
        // Single use.
        assert_eq!(
            router.deliver("code=abc&state=s1").await,
            Delivered::Unknown
        );
    }

    #[tokio::test]
    async fn a_refusal_ends_the_wait_and_a_dropped_wait_is_forgotten() {
        let router = CallbackRouter::default();
        let waiting = router.expect("s2", page()).await.unwrap();
        assert_eq!(
            router.deliver("error=access_denied&state=s2").await,
            Delivered::Refused
        );
        assert!(matches!(
            waiting.wait(Duration::from_secs(1)).await,
            Err(AuthError::Authorization(e)) if e == "access_denied"
        ));
        drop(router.expect("s3", page()).await.unwrap());
        assert_eq!(router.deliver("code=c&state=s3").await, Delivered::Unknown);
        let late = router.expect("s4", page()).await.unwrap();
        assert!(matches!(
            late.wait(Duration::from_millis(10)).await,
            Err(AuthError::CallbackTimeout(_))
        ));
    }

    #[tokio::test]
    async fn a_callback_to_another_host_reaches_the_waiting_one_through_the_store() {
        let store: Arc<dyn SecretStore> = Arc::new(crate::secrets::MemoryStore::new());
        let waiting_host = CallbackRouter::relayed(store.clone());
        let other_host = CallbackRouter::relayed(store.clone());
        let waiting = waiting_host.expect("s5", page()).await.unwrap();
        // Either host shows the connection's page.
        let shown = other_host.start_page("state=s5").await.expect("a page");
        assert_eq!(shown.owner.as_deref(), Some("alice"));
        assert!(other_host.start_page("state=nobody").await.is_none());
        // A state nobody waits for writes nothing.
        assert_eq!(
            other_host.deliver("code=c&state=nobody").await,
            Delivered::Unknown
        );
        assert_eq!(store.list().await.unwrap().len(), 1);
        assert_eq!(
            other_host.deliver("code=abc&state=s5").await,
            Delivered::Completed
        );
        let callback = waiting.wait(Duration::from_secs(5)).await.unwrap();
        assert_eq!(callback.code, "abc");
        assert!(
            store.list().await.unwrap().is_empty(),
            "nothing is left behind"
        );
    }
}
