//! A request body that fails once its client sends nothing for a while. The embedded S3 holds
//! a key's lock while s3s-fs writes an upload (`key_locks`), so a client that stops sending
//! halfway would otherwise hold that key, and every reader of it, for as long as it likes.
//!
//! It also tells the server whether it was read to its end ([`BodyEnd`]): a connection whose
//! request body was left unread cannot carry another request (`embedded_s3`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

/// How long an upload may send nothing before it is cut off (S3 closes an idle connection
/// after about 20 s; this is kinder to slow clients, and still bounded).
pub const BODY_IDLE: Duration = Duration::from_secs(60);

/// Whether a body was read to its end: shared by the body, which s3s reads, and the server,
/// which asks once its answer is ready.
#[derive(Clone, Default)]
pub struct BodyEnd(Arc<AtomicBool>);

impl BodyEnd {
    pub fn reached(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn reach(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// `Incoming`, failing with an error after `limit` without a frame.
pub struct IdleBody {
    inner: Incoming,
    limit: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    end: BodyEnd,
}

impl IdleBody {
    pub fn new(inner: Incoming, limit: Duration) -> Self {
        let end = BodyEnd::default();
        // No body at all (a GET): nothing is left to read.
        if inner.is_end_stream() {
            end.reach();
        }
        IdleBody { inner, limit, timer: Box::pin(tokio::time::sleep(limit)), end }
    }

    /// Whether this body gets read to its end, to ask once it has been handed on.
    pub fn end(&self) -> BodyEnd {
        self.end.clone()
    }

    /// `frame`, noting the end of the body: its last byte by `Content-Length` (a reader may
    /// stop there) or the end of the stream.
    fn noting_end(&self, frame: Option<Result<Frame<Bytes>, hyper::Error>>) -> Option<Result<Frame<Bytes>, BoxError>> {
        match frame {
            // The body now outlives its connection (the answer runs on a task of its own), so
            // one that ends short of its length is refused here too, not only by hyper.
            None if self.inner.size_hint().exact().is_some_and(|left| left > 0) => {
                Some(Err("the request body ended before its Content-Length".into()))
            }
            None => {
                self.end.reach();
                None
            }
            Some(Ok(frame)) => {
                if self.inner.is_end_stream() {
                    self.end.reach();
                }
                Some(Ok(frame))
            }
            Some(Err(e)) => Some(Err(e.into())),
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Body for IdleBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let next = tokio::time::Instant::now() + this.limit;
                this.timer.as_mut().reset(next);
                Poll::Ready(this.noting_end(frame))
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let why = format!("no body bytes for {} s: upload abandoned", this.limit.as_secs());
                    Poll::Ready(Some(Err(why.into())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
