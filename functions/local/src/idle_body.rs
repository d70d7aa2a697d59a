//! A request body that fails once its client sends nothing for a while. The embedded S3 holds
//! a key's lock while s3s-fs writes an upload (`key_locks`), so a client that stops sending
//! halfway would otherwise hold that key, and every reader of it, for as long as it likes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

/// How long an upload may send nothing before it is cut off (S3 closes an idle connection
/// after about 20 s; this is kinder to slow clients, and still bounded).
pub const BODY_IDLE: Duration = Duration::from_secs(60);

/// `Incoming`, failing with an error after `limit` without a frame.
pub struct IdleBody {
    inner: Incoming,
    limit: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl IdleBody {
    pub fn new(inner: Incoming, limit: Duration) -> Self {
        IdleBody { inner, limit, timer: Box::pin(tokio::time::sleep(limit)) }
    }
}

impl Body for IdleBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let next = tokio::time::Instant::now() + this.limit;
                this.timer.as_mut().reset(next);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
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
