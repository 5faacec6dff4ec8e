//! The connection socket with a lingering close, so that a client still
//! sending a request body when it is refused reads the answer instead of a
//! connection reset.
//!
//! A request refused before its body is read (no key, a bad key, a missing
//! scope, a rate limit, a `Content-Length` over the limit) leaves the rest of
//! the body in flight. hyper answers, then closes the connection because it
//! cannot find where the next request starts. Closing a socket that has
//! unread bytes, or that receives more after the close, makes the kernel send
//! a TCP reset, and a reset makes the client's kernel throw away the answer
//! it has not yet read. Clients that send the whole body before reading
//! (Python `httpx`, which the official client uses, among them) then report a
//! "connection error" instead of the refusal.
//!
//! So when hyper shuts a connection down, [`LingeringStream`] first sends its
//! FIN (the answer is complete), then reads and discards what the client is
//! still sending until the client closes its side, goes quiet for
//! [`LINGER_IDLE`], or has sent [`LingerLimits::max_bytes`] or lingered
//! [`LINGER_TOTAL`]: the lingering close Apache and nginx do. Nothing read is
//! kept. Only connections whose last request carried a body linger; an idle
//! keep-alive connection closes at once.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{sleep, Instant, Sleep};

/// How long a quiet client is waited for before the connection closes.
pub const LINGER_IDLE: Duration = Duration::from_secs(2);

/// The longest a connection lingers, however steadily the client sends.
pub const LINGER_TOTAL: Duration = Duration::from_secs(30);

/// How much a lingering connection reads before giving up.
#[derive(Debug, Clone, Copy)]
pub struct LingerLimits {
    /// Most bytes read and discarded; past them the connection is closed
    /// (and the client, still sending, sees a reset).
    pub max_bytes: u64,
}

/// Marks, per connection, whether the request being served carried a body:
/// only then may a close find the client still sending.
#[derive(Debug, Clone, Default)]
pub struct BodyFlag(Arc<AtomicBool>);

impl BodyFlag {
    /// Records whether the current request has a body.
    pub fn set(&self, has_body: bool) {
        self.0.store(has_body, Ordering::Relaxed);
    }

    fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What the shutdown has done so far.
#[derive(Debug)]
struct Linger {
    /// The FIN is sent.
    write_closed: bool,
    discarded: u64,
    idle: Pin<Box<Sleep>>,
    total: Pin<Box<Sleep>>,
}

/// A TCP stream whose shutdown lingers (see the module docs).
#[derive(Debug)]
pub struct LingeringStream {
    stream: TcpStream,
    body: BodyFlag,
    limits: LingerLimits,
    linger: Option<Linger>,
}

impl LingeringStream {
    /// Wraps `stream`; `body` tells whether the request served last had a
    /// body.
    pub fn new(stream: TcpStream, body: BodyFlag, limits: LingerLimits) -> LingeringStream {
        LingeringStream {
            stream,
            body,
            limits,
            linger: None,
        }
    }

    /// Reads and discards until the client closes, goes quiet, or a bound
    /// is reached. Never fails: a broken connection has nothing to linger on.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(linger) = self.linger.as_mut() else {
            return Poll::Ready(());
        };
        let mut scratch = [0u8; 16 * 1024];
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                    tracing::debug!(discarded = linger.discarded, "client closed; linger over");
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(())) => {
                    linger.discarded += buf.filled().len() as u64;
                    if linger.discarded > self.limits.max_bytes {
                        tracing::debug!(discarded = linger.discarded, "linger byte limit reached");
                        return Poll::Ready(());
                    }
                    linger.idle.as_mut().reset(Instant::now() + LINGER_IDLE);
                }
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending => {
                    if linger.idle.as_mut().poll(cx).is_ready()
                        || linger.total.as_mut().poll(cx).is_ready()
                    {
                        tracing::debug!(discarded = linger.discarded, "linger timed out");
                        return Poll::Ready(());
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl AsyncRead for LingeringStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LingeringStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.body.get() {
            return Pin::new(&mut this.stream).poll_shutdown(cx);
        }
        if this.linger.is_none() {
            this.linger = Some(Linger {
                write_closed: false,
                discarded: 0,
                idle: Box::pin(sleep(LINGER_IDLE)),
                total: Box::pin(sleep(LINGER_TOTAL)),
            });
        }
        if let Some(linger) = this.linger.as_mut().filter(|l| !l.write_closed) {
            // A client already gone makes this fail; there is nothing left to
            // linger for then, and nothing worth reporting.
            if ready!(Pin::new(&mut this.stream).poll_shutdown(cx)).is_err() {
                return Poll::Ready(Ok(()));
            }
            linger.write_closed = true;
        }
        ready!(this.poll_drain(cx));
        Poll::Ready(Ok(()))
    }
}
