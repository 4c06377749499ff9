//! The loopback redirect of a native app (RFC 8252 §7.3): a listener on
//! 127.0.0.1 with an ephemeral port receives the browser's one redirect to
//! `http://127.0.0.1:<port>/callback?code=…&state=…`, answers with a short
//! page, and closes. Any other path is answered 404 and the wait goes on; a
//! callback carrying `error=` (and the state) ends it with that error code.
//!
//! Only a callback carrying the `state` of the authorization under way
//! counts, an error as much as a code: any web page the user has open can
//! make the browser request `http://127.0.0.1:<port>/callback?error=…` (or a
//! code of its own), and such a request is answered 400 while the wait goes
//! on, so a page can neither end a connect nor slip its code into it. (A
//! provider that leaves `state` out of an error redirect, against RFC 6749
//! §4.1.2.1, is waited for until the timeout.)

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::AuthError;
use super::oauth2::constant_time_eq;

/// Path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";
/// Bound on a request head the listener reads.
const MAX_HEAD: usize = 8 * 1024;
/// How long one connection may take to send its request.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections answered at once (past it the oldest is closed).
const MAX_CONNECTIONS: usize = 16;

/// A bound listener waiting for one authorization callback.
#[derive(Debug)]
pub struct Loopback {
    listener: TcpListener,
    redirect_uri: String,
}

/// What the callback carried. The code is single-use and short-lived.
#[derive(Debug)]
pub struct Callback {
    /// The authorization code.
    pub code: String,
    /// The state the provider returned.
    pub state: String,
}

impl Loopback {
    /// Listen on 127.0.0.1 with a port the system picks.
    pub async fn bind() -> Result<Self, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| AuthError::Listener(e.to_string()))?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Listener(e.to_string()))?
            .port();
        Ok(Self {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        })
    }

    /// The redirect URI to register and send (`http://127.0.0.1:<port>/callback`).
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Wait up to `timeout` for the callback returning `state` (the
    /// authorization's); the listener closes after it.
    ///
    /// Connections are answered side by side, each within
    /// [`CONNECTION_TIMEOUT`]: one a browser opened ahead and left idle (or
    /// any local process's) does not hold back the callback on another.
    pub async fn wait(self, state: String, timeout: Duration) -> Result<Callback, AuthError> {
        let state: std::sync::Arc<str> = state.into();
        // A timeout past what the clock holds is a wait without end.
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600));
        let mut connections = tokio::task::JoinSet::new();
        // The connections being answered, oldest first.
        let mut open = std::collections::VecDeque::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Err(e) => return Err(AuthError::Listener(e.to_string())),
                    Ok((stream, _)) => {
                        open.retain(|task: &tokio::task::AbortHandle| !task.is_finished());
                        // Past the bound the oldest goes: a browser sends its
                        // callback as it connects, so connections held open
                        // (by any local process) cannot crowd it out.
                        if open.len() >= MAX_CONNECTIONS
                            && let Some(oldest) = open.pop_front()
                        {
                            oldest.abort();
                        }
                        let answer = handle(stream, state.clone());
                        open.push_back(
                            connections.spawn(tokio::time::timeout(CONNECTION_TIMEOUT, answer)),
                        );
                    }
                },
                Some(answered) = connections.join_next() => {
                    if let Ok(Ok(Some(result))) = answered {
                        return result;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(AuthError::CallbackTimeout(timeout.as_secs()));
                }
            }
        }
    }
}

/// Answer one connection; `None` when it was not the callback of the
/// authorization with `expected` state.
async fn handle(
    mut stream: TcpStream,
    expected: std::sync::Arc<str>,
) -> Option<Result<Callback, AuthError>> {
    let Some(target) = read_target(&mut stream).await else {
        respond(&mut stream, 400, "Bad request.").await;
        return None;
    };
    let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != CALLBACK_PATH {
        respond(&mut stream, 404, "Not found.").await;
        return None;
    }
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let ours =
        param("state").is_some_and(|state| constant_time_eq(state.as_bytes(), expected.as_bytes()));
    if !ours {
        tracing::warn!("a callback without this authorization's state was ignored");
        let text = "This is not the authorization Warden is waiting for.";
        respond(&mut stream, 400, text).await;
        return None;
    }
    let result = match (param("error"), param("code"), param("state")) {
        (Some(error), _, _) => Err(AuthError::Authorization(plain(&error))),
        (None, Some(code), Some(state)) if !code.is_empty() => Ok(Callback { code, state }),
        _ => Err(AuthError::Authorization(
            "the callback carried no code and state".into(),
        )),
    };
    let page = match &result {
        Ok(_) => (
            200,
            "Warden received the authorization. You can close this window.",
        ),
        Err(_) => (
            400,
            "The authorization did not complete. Return to Warden for details.",
        ),
    };
    respond(&mut stream, page.0, page.1).await;
    Some(result)
}

/// The request target of a `GET` request head, read with a bound.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = std::str::from_utf8(&head).ok()?.lines().next()?;
    let mut parts = line.split(' ');
    let (Some("GET"), Some(target)) = (parts.next(), parts.next()) else {
        return None;
    };
    target.starts_with('/').then(|| target.to_owned())
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!("<!doctype html><title>Warden</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\n\
         content-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    // The browser may already be gone; the result is what matters.
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// An OAuth error code as shown to a user: a plain token, bounded.
fn plain(error: &str) -> String {
    let plain: String = error
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    if plain.is_empty() {
        "error".into()
    } else {
        plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `host:port` of a redirect URI.
    fn addr_of(uri: &str) -> String {
        let rest = uri.strip_prefix("http://").unwrap();
        rest.split('/').next().unwrap().to_owned()
    }

    /// Send the callback `code=abc&state=xyz` to `uri`: it is answered 200
    /// and ends `wait` with its code.
    async fn callback_ends(uri: &str, wait: tokio::task::JoinHandle<Result<Callback, AuthError>>) {
        let answer = get(uri, "/callback?code=abc&state=xyz").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert_eq!(wait.await.unwrap().unwrap().code, "abc");
    }

    async fn get(uri: &str, path: &str) -> String {
        let addr = addr_of(uri);
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// A connection opened and left idle (a browser's preconnect) held the
    /// listener until the deadline, so the callback on a second connection
    /// was never read.
    #[tokio::test]
    async fn an_idle_connection_does_not_hold_back_the_callback() {
        let loopback = Loopback::bind().await.unwrap();
        let uri = loopback.redirect_uri().to_owned();
        let addr = addr_of(&uri);
        let wait = tokio::spawn(loopback.wait("xyz".into(), Duration::from_secs(5)));
        let _idle = TcpStream::connect(&addr).await.unwrap();
        callback_ends(&uri, wait).await;
    }

    /// Connections held open up to the bound made the listener close the
    /// browser's callback connection unanswered.
    #[tokio::test]
    async fn connections_held_open_do_not_crowd_out_the_callback() {
        let loopback = Loopback::bind().await.unwrap();
        let uri = loopback.redirect_uri().to_owned();
        let addr = addr_of(&uri);
        let wait = tokio::spawn(loopback.wait("xyz".into(), Duration::from_secs(5)));
        let mut held = Vec::new();
        for _ in 0..MAX_CONNECTIONS + 4 {
            held.push(TcpStream::connect(&addr).await.unwrap());
        }
        // Past the bound the oldest went (before the callback came).
        let mut byte = [0u8; 1];
        let oldest = tokio::time::timeout(Duration::from_secs(3), held[0].read(&mut byte));
        assert!(
            matches!(oldest.await, Ok(Ok(0) | Err(_))),
            "the oldest is closed"
        );
        callback_ends(&uri, wait).await;
    }

    #[tokio::test]
    async fn receives_the_callback_after_ignoring_other_paths() {
        let loopback = Loopback::bind().await.unwrap();
        let uri = loopback.redirect_uri().to_owned();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let wait = tokio::spawn(loopback.wait("xyz".into(), Duration::from_secs(5)));
        assert!(get(&uri, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        assert!(
            get(&uri, "/callback?code=abc&state=xyz")
                .await
                .starts_with("HTTP/1.1 200")
        );
        let callback = wait.await.unwrap().unwrap();
        assert_eq!(
            (callback.code.as_str(), callback.state.as_str()),
            ("abc", "xyz")
        );
        // The listener is closed once the callback came.
        assert!(TcpStream::connect(addr_of(&uri)).await.is_err());
    }

    /// Any page the user has open could end the connect with
    /// `/callback?error=…`, or hand it a code of its own, before the
    /// provider redirected: the first callback ended the wait whatever its
    /// state.
    #[tokio::test]
    async fn only_the_callback_with_the_authorizations_state_counts() {
        let loopback = Loopback::bind().await.unwrap();
        let uri = loopback.redirect_uri().to_owned();
        let wait = tokio::spawn(loopback.wait("xyz".into(), Duration::from_secs(5)));
        for forged in [
            "/callback?error=access_denied",
            "/callback?error=access_denied&state=other",
            "/callback?code=planted&state=xy",
            "/callback?code=planted",
        ] {
            assert!(
                get(&uri, forged).await.starts_with("HTTP/1.1 400"),
                "{forged}"
            );
        }
        assert!(!wait.is_finished(), "still waiting");
        callback_ends(&uri, wait).await;
    }

    #[tokio::test]
    async fn a_provider_error_and_a_timeout_are_typed() {
        let loopback = Loopback::bind().await.unwrap();
        let uri = loopback.redirect_uri().to_owned();
        let wait = tokio::spawn(loopback.wait("xyz".into(), Duration::from_secs(5)));
        get(
            &uri,
            "/callback?error=access_denied&error_description=%3Cscript%3E&state=xyz",
        )
        .await;
        let error = wait.await.unwrap().unwrap_err();
        assert!(
            matches!(&error, AuthError::Authorization(e) if e == "access_denied"),
            "{error:?}"
        );

        let loopback = Loopback::bind().await.unwrap();
        let error = loopback
            .wait("xyz".into(), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(error, AuthError::CallbackTimeout(_)), "{error:?}");
    }
}
