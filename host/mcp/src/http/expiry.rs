//! An event stream lives no longer than the token that opened it.
//!
//! Every request is authenticated on its own, but a server-sent event
//! stream (a GET on a session, or a POST answered as a stream) is one
//! request that can stay open for hours: its token was checked once, at the
//! start. The stream's body is therefore ended when that token stops being
//! accepted: at a JWT's `exp` plus the leeway every request gets, or at the
//! first of its periodic checks ([`StreamWatch`]) that refuses it (its
//! signing key was withdrawn). The client reconnects, and the new request is
//! authenticated with whatever token it holds then.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::Response;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::oneshot;

use crate::auth::StreamWatch;

/// `answer` with its body ended at `expires_at` (Unix seconds), or when
/// `watch` finds the token refused, when it is an event stream; any other
/// answer is whole already and is left alone.
pub(super) fn end_stream_at(
    answer: Response<BoxBody<Bytes, Infallible>>,
    expires_at: Option<i64>,
    watch: Option<StreamWatch>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if expires_at.is_none() && watch.is_none() {
        return answer;
    }
    let streaming = answer
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if !streaming {
        return answer;
    }
    let expiry = expires_at.map(|at| {
        let left = u64::try_from(at.saturating_sub(unix_now())).unwrap_or(0);
        Box::pin(tokio::time::sleep(Duration::from_secs(left)))
    });
    let refused = watch.map(|watch| {
        let (refused, on_refusal) = oneshot::channel();
        tokio::spawn(recheck(watch, refused));
        on_refusal
    });
    answer.map(|body| {
        UntilExpiry {
            inner: body,
            expiry,
            refused,
        }
        .boxed()
    })
}

/// Check the stream's token every [`StreamWatch::every`] until it is
/// refused (then say so on `refused`) or the stream is gone.
async fn recheck(watch: StreamWatch, mut refused: oneshot::Sender<()>) {
    loop {
        tokio::select! {
            () = refused.closed() => return,
            () = tokio::time::sleep(watch.every()) => {}
        }
        if !watch.still_accepted(unix_now()).await {
            tracing::info!("an event stream's token is no longer accepted: ending the stream");
            let _ = refused.send(());
            return;
        }
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A body that ends (cleanly: the last chunk is sent) at `expiry` or when
/// `refused` says its token was refused.
struct UntilExpiry {
    inner: BoxBody<Bytes, Infallible>,
    expiry: Option<Pin<Box<tokio::time::Sleep>>>,
    refused: Option<oneshot::Receiver<()>>,
}

impl Body for UntilExpiry {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(expiry) = self.expiry.as_mut()
            && expiry.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        if let Some(refused) = self.refused.as_mut() {
            match Pin::new(refused).poll(cx) {
                Poll::Ready(Ok(())) => return Poll::Ready(None),
                // The check ended without a refusal: nothing more to wait for.
                Poll::Ready(Err(_)) => self.refused = None,
                Poll::Pending => {}
            }
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // It may end early: no exact length.
        let mut hint = SizeHint::new();
        hint.set_lower(0);
        if let Some(upper) = self.inner.size_hint().upper() {
            hint.set_upper(upper);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that never yields a frame: an event stream with no events.
    struct Silent;

    impl Body for Silent {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Pending
        }
    }

    fn endless_stream() -> Response<BoxBody<Bytes, Infallible>> {
        let mut answer = Response::new(Silent.boxed());
        answer.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            "text/event-stream".parse().unwrap(),
        );
        answer
    }

    /// A stream whose token is at its end is over (the bound is generous:
    /// what is checked is that it ends at all, where it would never).
    #[tokio::test]
    async fn an_event_stream_ends_when_its_token_does() {
        let answer = end_stream_at(endless_stream(), Some(unix_now() + 1), None);
        let mut body = answer.into_body();
        let ended = tokio::time::timeout(Duration::from_secs(30), body.frame()).await;
        assert!(matches!(ended, Ok(None)), "ended at the token's end");
    }

    #[tokio::test]
    async fn a_stream_without_expiry_or_a_whole_answer_is_left_alone() {
        let mut body = end_stream_at(endless_stream(), None, None).into_body();
        let open = tokio::time::timeout(Duration::from_millis(1500), body.frame()).await;
        assert!(open.is_err(), "a static token's stream stays open");
        let mut body = end_stream_at(endless_stream(), Some(unix_now() + 3600), None).into_body();
        let open = tokio::time::timeout(Duration::from_millis(1500), body.frame()).await;
        assert!(open.is_err(), "a stream stays open while its token is good");
        let whole = Response::new(http_body_util::Full::new(Bytes::from("{}")).boxed());
        let mut body = end_stream_at(whole, Some(unix_now() - 10), None).into_body();
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), Bytes::from("{}"));
    }
}
