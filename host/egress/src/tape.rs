//! Record and replay a call's host-mediated HTTP: the tool author's test loop.
//!
//! [`Recording`] wraps the call's network service and writes down every
//! request the guest made and what came back *to the guest* — responses are
//! already redacted by the session, and requests are redacted again on the
//! way in, so a tape holds no staged secret. The credential a request used is
//! written as its handle plus a placeholder of the injection
//! (`authorization: Bearer {{secret:github_runtime_token}}`), never a value.
//!
//! [`Replaying`] answers the guest from a tape without network, in order. A
//! request that differs from the next one on the tape is refused (the guest
//! sees a denied request) and the difference is kept for the caller, who
//! must fail the run: [`Replay::finish`] reports it as a diff, and so does a
//! tape with exchanges the guest never asked for. The same tape gives the
//! same answers every time, so a replayed call is deterministic.

mod format;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use warden_core::net::{
    BoxFuture, CallNetwork, CredentialError, CredentialMatch, GuestRequest, GuestResponse,
    HttpError,
};
use warden_core::spec::CredentialSpec;

use crate::session::{declared_for_url, matched};

pub use format::{Exchange, FORMAT, MAX_TAPE_BYTES, Tape, TapeError, TapeResponse, TapedRequest};

/// Collects the exchanges of one recorded call; share it with [`Recording`]
/// and read the [`Tape`] when the call is over.
#[derive(Debug, Default)]
pub struct Recorder {
    exchanges: Mutex<Vec<Exchange>>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The tape of what was recorded so far, for `capability`.
    pub fn tape(&self, capability: &str) -> Tape {
        Tape::new(capability, self.lock().clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Exchange>> {
        self.exchanges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call's network service that records into a [`Recorder`].
pub struct Recording {
    inner: Arc<dyn CallNetwork>,
    credentials: Vec<CredentialSpec>,
    recorder: Arc<Recorder>,
}

impl Recording {
    /// Record what `inner` (the call's real network service) is asked and
    /// answers; `credentials` are the capability's, for the placeholders.
    pub fn new(
        inner: Arc<dyn CallNetwork>,
        credentials: &[CredentialSpec],
        recorder: Arc<Recorder>,
    ) -> Self {
        Self {
            inner,
            credentials: credentials.to_vec(),
            recorder,
        }
    }
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

impl CallNetwork for Recording {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        self.inner.acquire(handle)
    }

    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        self.inner.credential_for_url(url)
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        Box::pin(async move {
            let spec = credential.and_then(|h| self.credentials.iter().find(|c| c.handle == h));
            let taped = TapedRequest::of(&request, credential, spec, &|t| self.inner.redact(t));
            let result = self.inner.send(request, credential, remaining).await;
            let response = TapeResponse::of(&result, &|t| self.inner.redact(t));
            self.recorder.lock().push(Exchange {
                request: taped,
                response,
            });
            result
        })
    }

    fn redact(&self, text: &str) -> String {
        self.inner.redact(text)
    }

    fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.inner.holds_secret(bytes)
    }
}

/// A tape being replayed, shared by the [`Replaying`] network of the call and
/// the caller, who checks [`Replay::finish`] afterwards.
#[derive(Debug)]
pub struct Replay {
    tape: Tape,
    state: Mutex<ReplayState>,
}

#[derive(Debug, Default)]
struct ReplayState {
    next: usize,
    differences: Vec<String>,
}

impl Replay {
    /// Replay `tape`.
    pub fn new(tape: Tape) -> Arc<Self> {
        Arc::new(Self {
            tape,
            state: Mutex::default(),
        })
    }

    /// The tape.
    pub fn tape(&self) -> &Tape {
        &self.tape
    }

    /// `Ok` when the guest asked exactly the taped requests, in order; else
    /// every difference, as a readable diff.
    pub fn finish(&self) -> Result<(), ReplayMismatch> {
        let state = self.lock();
        let mut differences = state.differences.clone();
        let left = self.tape.exchanges.len().saturating_sub(state.next);
        if differences.is_empty() && left > 0 {
            differences.push(format!(
                "the guest made {} request(s); the tape holds {left} more, starting with:\n{}",
                state.next,
                self.tape.exchanges[state.next].request.describe()
            ));
        }
        if differences.is_empty() {
            Ok(())
        } else {
            Err(ReplayMismatch { differences })
        }
    }

    fn answer(&self, request: &TapedRequest) -> Result<GuestResponse, HttpError> {
        let mut state = self.lock();
        if !state.differences.is_empty() {
            return Err(HttpError::Denied(
                "replay: an earlier request did not match the tape".into(),
            ));
        }
        let index = state.next;
        let Some(exchange) = self.tape.exchanges.get(index) else {
            state.differences.push(format!(
                "request #{} is not on the tape (it holds {index}):\n{}",
                index + 1,
                request.describe()
            ));
            return Err(HttpError::Denied("replay: request not on the tape".into()));
        };
        if let Some(diff) = exchange.request.diff(request) {
            state.differences.push(format!(
                "request #{} differs from the tape:\n{diff}",
                index + 1
            ));
            return Err(HttpError::Denied(
                "replay: request differs from the tape".into(),
            ));
        }
        state.next += 1;
        exchange.response.to_result()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReplayState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The guest did not ask what the tape holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("replay does not match the tape:\n{}", differences.join("\n"))]
pub struct ReplayMismatch {
    /// Each difference, readable.
    pub differences: Vec<String>,
}

/// A call's network service answered from a [`Replay`]; no network, no
/// secret: a declared credential is acquirable without a connected account.
#[derive(Debug)]
pub struct Replaying {
    replay: Arc<Replay>,
    credentials: Vec<CredentialSpec>,
}

impl Replaying {
    /// Answer from `replay`; `credentials` are the capability's declared ones.
    pub fn new(replay: Arc<Replay>, credentials: &[CredentialSpec]) -> Self {
        Self {
            replay,
            credentials: credentials.to_vec(),
        }
    }
}

impl CallNetwork for Replaying {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        if self.credentials.iter().any(|c| c.handle == handle) {
            Ok(())
        } else {
            Err(CredentialError::NotDeclared(handle.to_owned()))
        }
    }

    /// The declared credential whose audience the URL is, as a live call
    /// selects it, connected or not (a replay needs no secret).
    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        Ok(declared_for_url(self.credentials.iter(), url)?.map(matched))
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        let taped = TapedRequest::of(&request, credential, None, &str::to_owned);
        let answer = self.replay.answer(&taped);
        Box::pin(async move { answer })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests;
