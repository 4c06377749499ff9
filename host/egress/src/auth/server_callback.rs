//! OAuth callbacks a server takes on its own public origin (`warden serve
//! --public-url`): a person's browser, wherever it runs, returns there
//! rather than to a loopback listener on the serving machine.
//!
//! Each authorization waiting for its callback is registered under its
//! `state` (random, single use) until the callback comes, it times out, or
//! its connection is dropped. A callback whose state nobody waits for is
//! refused, and no waiting authorization learns of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::AuthError;
use super::loopback::Callback;

/// The path a server takes callbacks at.
pub const SERVER_CALLBACK_PATH: &str = "/oauth/callback";

/// At most this many authorizations wait at once; more are refused.
const MAX_WAITING: usize = 1024;

type Waiting = HashMap<String, oneshot::Sender<Result<Callback, AuthError>>>;

/// The authorizations waiting for a callback on a server's origin.
#[derive(Debug, Clone, Default)]
pub struct CallbackRouter {
    waiting: Arc<Mutex<Waiting>>,
}

/// One authorization waiting for its callback; dropping it stops waiting.
#[derive(Debug)]
pub struct CallbackWait {
    state: String,
    answer: oneshot::Receiver<Result<Callback, AuthError>>,
    router: CallbackRouter,
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
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for the callback carrying `state`.
    pub fn expect(&self, state: &str) -> Result<CallbackWait, AuthError> {
        let (sender, answer) = oneshot::channel();
        let mut waiting = self.lock();
        waiting.retain(|_, sender| !sender.is_closed());
        if waiting.len() >= MAX_WAITING {
            return Err(AuthError::Listener(format!(
                "{MAX_WAITING} authorizations are already waiting for their callback"
            )));
        }
        waiting.insert(state.to_owned(), sender);
        Ok(CallbackWait {
            state: state.to_owned(),
            answer,
            router: self.clone(),
        })
    }

    /// Hand the query string of a `GET` at [`SERVER_CALLBACK_PATH`] to the
    /// authorization waiting for its `state`.
    pub fn deliver(&self, query: &str) -> Delivered {
        let param = |name: &str| {
            url::form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let Some(state) = param("state") else {
            return Delivered::Unknown;
        };
        let Some(sender) = self.lock().remove(&state) else {
            tracing::warn!("an OAuth callback whose state nobody waits for was refused");
            return Delivered::Unknown;
        };
        let (result, delivered) = match (param("error"), param("code")) {
            (Some(error), _) => (
                Err(AuthError::Authorization(printable(&error))),
                Delivered::Refused,
            ),
            (None, Some(code)) if !code.is_empty() => {
                (Ok(Callback { code, state }), Delivered::Completed)
            }
            _ => (
                Err(AuthError::Authorization(
                    "the callback carried no code".into(),
                )),
                Delivered::Refused,
            ),
        };
        // The authorization may have stopped waiting meanwhile.
        let _ = sender.send(result);
        delivered
    }
}

impl CallbackWait {
    /// The callback, within `timeout`.
    pub async fn wait(mut self, timeout: Duration) -> Result<Callback, AuthError> {
        match tokio::time::timeout(timeout, &mut self.answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(AuthError::Listener("the server stopped waiting".into())),
            Err(_) => Err(AuthError::CallbackTimeout(timeout.as_secs())),
        }
    }
}

impl Drop for CallbackWait {
    fn drop(&mut self) {
        self.router.lock().remove(&self.state);
    }
}

/// `text` from an authorization server, bounded and printable.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_callback_reaches_only_the_authorization_with_its_state() {
        let router = CallbackRouter::default();
        let waiting = router.expect("s1").unwrap();
        assert_eq!(router.deliver("code=c&state=other"), Delivered::Unknown);
        assert_eq!(router.deliver("code=c"), Delivered::Unknown);
        assert_eq!(router.deliver("code=abc&state=s1"), Delivered::Completed);
        let callback = waiting.wait(Duration::from_secs(1)).await.unwrap();
        assert_eq!(
            (callback.code.as_str(), callback.state.as_str()),
            ("abc", "s1")
        );
        // Single use.
        assert_eq!(router.deliver("code=abc&state=s1"), Delivered::Unknown);
    }

    #[tokio::test]
    async fn a_refusal_ends_the_wait_and_a_dropped_wait_is_forgotten() {
        let router = CallbackRouter::default();
        let waiting = router.expect("s2").unwrap();
        assert_eq!(
            router.deliver("error=access_denied&state=s2"),
            Delivered::Refused
        );
        assert!(matches!(
            waiting.wait(Duration::from_secs(1)).await,
            Err(AuthError::Authorization(e)) if e == "access_denied"
        ));
        drop(router.expect("s3").unwrap());
        assert_eq!(router.deliver("code=c&state=s3"), Delivered::Unknown);
        let late = router.expect("s4").unwrap();
        assert!(matches!(
            late.wait(Duration::from_millis(10)).await,
            Err(AuthError::CallbackTimeout(_))
        ));
    }
}
