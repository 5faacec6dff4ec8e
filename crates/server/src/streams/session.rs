//! One WebSocket session: carries frames between the socket, the sans-I/O session engine
//! ([`StreamSession`]) and the session's analysis task, and nothing else. Every protocol
//! decision is the engine's; this loop only performs its [`Action`]s.
//!
//! Tasks per session: a reader (reads frames off the socket and forwards them, so a slow
//! analysis never stops the socket from being read), this loop (owns the engine and the
//! write half), the analysis task and, when the session transcribes, its transcription
//! ([`super::analysis`]).
//!
//! The reader assembles fragmented messages itself so that the socket's read cap bounds a
//! whole message, not just one frame of it. A message over the cap cannot be skipped (its
//! bytes stay unread, so the next frame cannot be found): the engine ends the session
//! (`ih6002`, 1009) and the reader drains the connection for a moment, so the client, still
//! sending, reads the `error` envelope and the close frame instead of a connection reset.

use super::analysis::{AnalysisEvent, AnalysisHandle, Enqueued};
use super::credential::CredentialWatch;
use super::{SessionClock, Streams};
use crate::auth::Principal;
use crate::tokens::charge_video_budget;
use attune_core::billing::{self, Billed};
use attune_core::live::LiveOutput;
use attune_core::session::{Action, StreamSession};
use attune_core::wire::{Endpoint, Event, EventData, Timestamp};
use fastwebsockets::{
    Frame, OpCode, Payload, WebSocket, WebSocketError, WebSocketRead, WebSocketWrite,
};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

type Io = TokioIo<Upgraded>;

/// How long the reader keeps reading (and discarding) after a message over the cap, so the
/// client can finish its write and read the answer.
const DRAIN_AFTER_OVERSIZE: Duration = Duration::from_secs(3);

/// What the reader task saw.
enum Inbound {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    /// A message over the read cap: its size when known.
    TooLarge(Option<u64>),
    /// The client closed or the connection ended.
    Gone,
}

/// The writing end of a session.
pub(crate) struct Writer {
    ws: WebSocketWrite<WriteHalf<Io>>,
    correlation_id: String,
    open: bool,
    /// See [`super::StreamSettings::write_timeout`].
    write_timeout: Duration,
}

impl Writer {
    /// Sends one event envelope; a failed write marks the socket gone.
    pub(crate) async fn event(&mut self, data: EventData) {
        if !self.open {
            return;
        }
        let event = Event {
            timestamp: Timestamp::now(),
            correlation_id: self.correlation_id.clone(),
            data,
        };
        let json = event.to_json();
        tracing::debug!(correlation_id = %self.correlation_id, event = event.type_name(), "event");
        self.write(Frame::text(Payload::Owned(json.into_bytes())))
            .await;
    }

    /// Writes one frame within the write timeout; a failed or timed-out write marks the
    /// socket gone, which ends the session.
    async fn write(&mut self, frame: Frame<'_>) {
        match tokio::time::timeout(self.write_timeout, self.ws.write_frame(frame)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, "session socket write failed");
                self.open = false;
            }
            Err(_) => {
                tracing::info!(
                    correlation_id = %self.correlation_id,
                    timeout_seconds = self.write_timeout.as_secs_f64(),
                    "stream client reads nothing: session ended, connection dropped"
                );
                self.open = false;
            }
        }
    }

    /// Sends a close frame; nothing is written after it.
    pub(crate) async fn close(&mut self, code: u16, reason: &str) {
        if !self.open {
            return;
        }
        // A close reason is limited to 123 bytes.
        let reason: String = reason.chars().take(100).collect();
        self.write(Frame::close(code, reason.as_bytes())).await;
        self.open = false;
    }

    async fn pong(&mut self, payload: Vec<u8>) {
        if self.open {
            self.write(Frame::pong(Payload::Owned(payload))).await;
        }
    }
}

/// The socket's read half, shared between the WebSocket parser and the reader task, which
/// still needs to read (and discard) bytes after the parser gave up on an oversized message.
#[derive(Clone)]
struct SharedRead(Arc<Mutex<ReadHalf<Io>>>);

impl AsyncRead for SharedRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        // Only one of the two users reads at any time, so the lock is never contended.
        let mut inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Pin::new(&mut *inner).poll_read(cx, buf)
    }
}

/// Splits an upgraded socket into the reader task's channel and the writer; messages over
/// `max_message_bytes` end the session (see the module docs).
pub(crate) fn split(
    mut ws: WebSocket<Io>,
    correlation_id: String,
    max_message_bytes: usize,
    write_timeout: Duration,
) -> (mpsc::Receiver<InboundFrame>, Writer) {
    ws.set_auto_close(false);
    ws.set_auto_pong(false);
    // The parser refuses a single frame over the cap from its header, before reading it;
    // the reader checks whole messages.
    ws.set_max_message_size(max_message_bytes.saturating_add(1));
    let shared = std::cell::Cell::new(None);
    let (read, write) = ws.split(|io| {
        let (read, write) = tokio::io::split(io);
        let read = SharedRead(Arc::new(Mutex::new(read)));
        shared.set(Some(read.clone()));
        (read, write)
    });
    let (tx, rx) = mpsc::channel(16);
    if let Some(raw) = shared.into_inner() {
        tokio::spawn(read_frames(read, raw, tx, max_message_bytes));
    }
    let writer = Writer {
        ws: write,
        correlation_id,
        open: true,
        write_timeout,
    };
    (rx, writer)
}

/// A frame forwarded by the reader task.
pub(crate) struct InboundFrame(Inbound);

/// Joins the frames of fragmented messages, refusing a message over the cap as soon as its
/// frames add up to more.
#[derive(Debug, Default)]
struct Assembler {
    /// The opcode and bytes of a message whose final frame has not arrived.
    partial: Option<(OpCode, Vec<u8>)>,
}

/// What one frame completes.
#[derive(Debug, PartialEq)]
enum Assembled {
    /// A whole message (text or binary) or a control frame.
    Message(OpCode, Vec<u8>),
    /// Part of a message; more frames follow.
    Partial,
    /// The message is over the cap: this many bytes so far.
    TooLarge(u64),
    /// A continuation without a message, or a new message inside one.
    Invalid,
}

impl Assembler {
    fn push(&mut self, fin: bool, opcode: OpCode, payload: &[u8], cap: usize) -> Assembled {
        match opcode {
            OpCode::Text | OpCode::Binary => {
                if self.partial.is_some() {
                    return Assembled::Invalid;
                }
                if payload.len() > cap {
                    return Assembled::TooLarge(payload.len() as u64);
                }
                if fin {
                    Assembled::Message(opcode, payload.to_vec())
                } else {
                    self.partial = Some((opcode, payload.to_vec()));
                    Assembled::Partial
                }
            }
            OpCode::Continuation => {
                let Some((kind, mut bytes)) = self.partial.take() else {
                    return Assembled::Invalid;
                };
                let total = bytes.len().saturating_add(payload.len());
                if total > cap {
                    return Assembled::TooLarge(total as u64);
                }
                bytes.extend_from_slice(payload);
                if fin {
                    Assembled::Message(kind, bytes)
                } else {
                    self.partial = Some((kind, bytes));
                    Assembled::Partial
                }
            }
            // Control frames may come between the frames of a message.
            OpCode::Close | OpCode::Ping | OpCode::Pong => {
                Assembled::Message(opcode, payload.to_vec())
            }
        }
    }
}

async fn read_frames(
    mut read: WebSocketRead<SharedRead>,
    mut raw: SharedRead,
    tx: mpsc::Sender<InboundFrame>,
    cap: usize,
) {
    let mut assembler = Assembler::default();
    loop {
        // Control frames are answered by the session loop (auto pong/close are off), so
        // nothing is ever sent from here.
        let frame = read
            .read_frame::<_, std::io::Error>(&mut |_| async { Ok(()) })
            .await;
        let assembled = match frame {
            Ok(frame) => assembler.push(frame.fin, frame.opcode, &frame.payload, cap),
            Err(WebSocketError::FrameTooLarge) => Assembled::TooLarge(0),
            Err(error) => {
                tracing::debug!(%error, "session socket read ended");
                Assembled::Invalid
            }
        };
        let inbound = match assembled {
            Assembled::Partial => continue,
            Assembled::Message(OpCode::Text, bytes) => match String::from_utf8(bytes) {
                Ok(text) => Inbound::Text(text),
                Err(_) => Inbound::Gone,
            },
            Assembled::Message(OpCode::Binary, bytes) => Inbound::Binary(bytes),
            Assembled::Message(OpCode::Ping, bytes) => Inbound::Ping(bytes),
            Assembled::Message(OpCode::Pong | OpCode::Continuation, _) => continue,
            Assembled::Message(OpCode::Close, _) | Assembled::Invalid => Inbound::Gone,
            Assembled::TooLarge(size) => Inbound::TooLarge((size > 0).then_some(size)),
        };
        let too_large = matches!(inbound, Inbound::TooLarge(_));
        let gone = too_large || matches!(inbound, Inbound::Gone);
        if tx.send(InboundFrame(inbound)).await.is_err() || gone {
            if too_large {
                drop(read);
                drain(&mut raw, cap).await;
            }
            return;
        }
    }
}

/// Reads and discards what the client still sends, for [`DRAIN_AFTER_OVERSIZE`] and at
/// most a few caps' worth, or until it closes.
async fn drain(raw: &mut SharedRead, cap: usize) {
    let limit = (cap as u64).saturating_mul(4).max(1 << 20);
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    let _ = tokio::time::timeout(DRAIN_AFTER_OVERSIZE, async {
        while read < limit {
            match raw.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n as u64,
            }
        }
    })
    .await;
}

/// Everything a session runs with.
pub(crate) struct SessionRun {
    pub(crate) streams: Arc<Streams>,
    pub(crate) endpoint: Endpoint,
    pub(crate) principal: Principal,
    pub(crate) engine: StreamSession,
    pub(crate) first_actions: Vec<Action>,
    pub(crate) clock: SessionClock,
    pub(crate) credential: CredentialWatch,
    /// The instance's metrics (dropped media seconds).
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
}

/// Runs a session to its end.
pub(crate) async fn run(
    run: SessionRun,
    mut inbound: mpsc::Receiver<InboundFrame>,
    mut writer: Writer,
) {
    let SessionRun {
        streams,
        endpoint,
        principal,
        mut engine,
        first_actions,
        clock,
        mut credential,
        metrics,
    } = run;
    let mut shutdown = streams.shutdown_schedule();
    let mut analysis: Option<AnalysisHandle> = None;
    let mut events: Option<mpsc::UnboundedReceiver<AnalysisEvent>> = None;
    let mut pending = first_actions;
    // Recommendations are written off the loop (a backend may take seconds) and come back here.
    let (recommended_tx, mut recommended) = mpsc::unbounded_channel();
    // Recommendations being written: accepted work the drain waits for (each is bounded by the
    // recommender's timeout), and whether the analysis already drained meanwhile.
    let mut recommending = 0usize;
    let mut drained = false;
    // A schedule already set when the session opened is acted on at once.
    let mut shutdown_seen = false;
    loop {
        if !shutdown_seen {
            if let Some(at) = *shutdown.borrow_and_update() {
                shutdown_seen = true;
                let now = clock.now();
                pending.extend(engine.on_shutdown_scheduled(now, clock.session_time(at)));
            }
        }
        for action in std::mem::take(&mut pending) {
            match action {
                Action::Send(data) => {
                    if let EventData::CoverageDropped(dropped) = &data {
                        let seconds = dropped.ranges.iter().map(|r| r.end - r.start).sum();
                        metrics.dropped_seconds(endpoint, seconds);
                    }
                    writer.event(data).await;
                }
                Action::Media { segment, bytes } => {
                    let handle = analysis.get_or_insert_with(|| {
                        start_analysis(&streams, engine.model(), endpoint, &mut events)
                    });
                    let size = bytes.len() as u64;
                    match handle.media(segment, bytes) {
                        Enqueued::Queued => {}
                        Enqueued::DecodeOnly => tracing::debug!(
                            segment,
                            queued_bytes = handle.queued_bytes(),
                            "analysis saturated: frame decoded only"
                        ),
                        Enqueued::Overflow => {
                            let queued = handle.queued_bytes().saturating_add(size);
                            let limit = handle.max_backlog_bytes();
                            pending.extend(engine.on_media_backlog_overflow(queued, limit));
                        }
                    }
                }
                Action::SetAudioFormat(format) => {
                    let handle = analysis.get_or_insert_with(|| {
                        start_analysis(&streams, engine.model(), endpoint, &mut events)
                    });
                    handle.audio_format(format);
                }
                Action::FinishMedia => match &analysis {
                    Some(handle) => handle.finish(),
                    // Nothing was ever sent: nothing to drain.
                    None => pending.extend(engine.on_drained()),
                },
                Action::Recommend(request) => {
                    recommending += 1;
                    let service = streams.settings.recommender.clone();
                    let tx = recommended_tx.clone();
                    tokio::spawn(async move {
                        let text = match request.input() {
                            Some(input) => service.recommend(input).await,
                            None => None,
                        };
                        let _ = tx.send((request.period(), text));
                    });
                }
                Action::Close { code, reason } => {
                    writer.close(code, &reason).await;
                    return;
                }
            }
        }
        if !pending.is_empty() {
            continue;
        }
        if !writer.open {
            return;
        }
        let deadline = engine.next_deadline().map(|at| clock.instant(at));
        tokio::select! {
            frame = inbound.recv() => {
                let now = clock.now();
                match frame.map(|f| f.0) {
                    Some(Inbound::Text(text)) => pending = engine.on_text(now, &text),
                    Some(Inbound::Binary(bytes)) => {
                        pending = match credential.check().await {
                            Ok(()) => engine.on_binary(now, bytes),
                            Err(revoked) => engine.on_credential_revoked(revoked),
                        };
                    }
                    Some(Inbound::TooLarge(size)) => {
                        let cap = streams.settings.max_message_bytes as u64;
                        pending = engine.on_message_too_large(size, cap);
                    }
                    Some(Inbound::Ping(payload)) => writer.pong(payload).await,
                    Some(Inbound::Gone) | None => {
                        tracing::debug!("client left the session");
                        writer.close(1000, "").await;
                        return;
                    }
                }
            }
            event = recv_analysis(&mut events) => match event {
                Some(AnalysisEvent::Output(output)) => {
                    let elapsed = clock.now();
                    for window in &output.windows {
                        metrics.analysis_lag(endpoint, elapsed, window.end);
                    }
                    pending = match credential.check().await {
                        Ok(()) => absorb_output(&mut engine, &clock, &streams, &principal, output).await,
                        Err(revoked) => engine.on_credential_revoked(revoked),
                    };
                }
                Some(AnalysisEvent::Words(words)) => pending = engine.on_utterances(&words),
                Some(AnalysisEvent::Drained) => {
                    events = None;
                    drained = true;
                    if recommending == 0 {
                        pending = engine.on_drained();
                    }
                }
                Some(AnalysisEvent::Failed(error)) => {
                    events = None;
                    pending = engine.fail(error);
                }
                None => events = None,
            },
            Some((period, text)) = recommended.recv() => {
                recommending = recommending.saturating_sub(1);
                pending = engine.on_recommendation(period, text);
                if drained && recommending == 0 {
                    pending.extend(engine.on_drained());
                }
            }
            () = sleep_until(deadline) => pending = engine.on_tick(clock.now()),
            () = tokio::time::sleep_until(credential.due()) => {
                if let Err(revoked) = credential.check().await {
                    pending = engine.on_credential_revoked(revoked);
                }
            }
            changed = shutdown.changed(), if !shutdown_seen => {
                if changed.is_err() {
                    shutdown_seen = true;
                }
            }
        }
    }
}

/// Starts the session's analysis task for `model` (on the first media or `audio_format`, when
/// the model can no longer change) and keeps its event receiver in `events`.
fn start_analysis(
    streams: &Streams,
    model: attune_core::wire::Model,
    endpoint: Endpoint,
    events: &mut Option<mpsc::UnboundedReceiver<AnalysisEvent>>,
) -> AnalysisHandle {
    let (handle, rx) =
        AnalysisHandle::start(streams.pool.clone(), &streams.settings, model, endpoint);
    *events = Some(rx);
    handle
}

/// The next analysis event, or never when there is no analysis task.
async fn recv_analysis(
    events: &mut Option<mpsc::UnboundedReceiver<AnalysisEvent>>,
) -> Option<AnalysisEvent> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Feeds one batch's output to the engine, charging each analyzed window to a client token's
/// video budget first (shared with uploads and realtime; dropped windows are not billed). The
/// windows the budget covered are reported; the first it cannot cover ends the session with
/// `ih3006`.
async fn absorb_output(
    engine: &mut StreamSession,
    clock: &SessionClock,
    streams: &Streams,
    principal: &Principal,
    output: LiveOutput,
) -> Vec<Action> {
    let mut billed = Billed::All;
    if let Some(token) = principal.token() {
        for (covered, seconds) in billing::window_charges(&output).into_iter().enumerate() {
            if let Err(refusal) =
                charge_video_budget(streams.tokens.as_ref(), &token.id, seconds).await
            {
                billed = Billed::Partly { covered, refusal };
                break;
            }
        }
    }
    engine.on_billed_output(clock.now(), output, billed)
}
