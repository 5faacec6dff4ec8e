//! One WebSocket session: carries frames between the socket, the sans-I/O session engine
//! ([`StreamSession`]) and the session's analysis task, and nothing else. Every protocol
//! decision is the engine's; this loop only performs its [`Action`]s.
//!
//! Tasks per session: a reader (reads frames off the socket and forwards them, so a slow
//! analysis never stops the socket from being read), this loop (owns the engine and the
//! write half) and the analysis task ([`super::analysis`]).

use super::analysis::{AnalysisEvent, AnalysisHandle, Enqueued};
use super::{SessionClock, Streams};
use crate::auth::Principal;
use crate::tokens::charge_video_budget;
use attune_core::live::LiveOutput;
use attune_core::session::{Action, StreamSession};
use attune_core::wire::{Endpoint, ErrorEvent, Event, EventData, Timestamp};
use attune_core::{ErrorCode, ServiceError};
use fastwebsockets::{FragmentCollectorRead, Frame, OpCode, Payload, WebSocket, WebSocketWrite};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::io::{ReadHalf, WriteHalf};
use tokio::sync::mpsc;

type Io = TokioIo<Upgraded>;

/// What the reader task saw.
enum Inbound {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    /// The client closed or the connection ended.
    Gone,
}

/// The writing end of a session.
pub(crate) struct Writer {
    ws: WebSocketWrite<WriteHalf<Io>>,
    correlation_id: String,
    open: bool,
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
        if let Err(error) = self
            .ws
            .write_frame(Frame::text(Payload::Owned(json.into_bytes())))
            .await
        {
            tracing::debug!(%error, "session socket write failed");
            self.open = false;
        }
    }

    /// Sends a close frame; nothing is written after it.
    pub(crate) async fn close(&mut self, code: u16, reason: &str) {
        if !self.open {
            return;
        }
        self.open = false;
        // A close reason is limited to 123 bytes.
        let reason: String = reason.chars().take(100).collect();
        let _ = self
            .ws
            .write_frame(Frame::close(code, reason.as_bytes()))
            .await;
    }

    async fn pong(&mut self, payload: Vec<u8>) {
        if self.open {
            let frame = Frame::pong(Payload::Owned(payload));
            if self.ws.write_frame(frame).await.is_err() {
                self.open = false;
            }
        }
    }
}

/// Splits an upgraded socket into the reader task's channel and the writer.
pub(crate) fn split(
    mut ws: WebSocket<Io>,
    correlation_id: String,
    max_message_bytes: usize,
) -> (mpsc::Receiver<InboundFrame>, Writer) {
    ws.set_auto_close(false);
    ws.set_auto_pong(false);
    ws.set_max_message_size(max_message_bytes);
    let (read, write) = ws.split(tokio::io::split);
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(read_frames(FragmentCollectorRead::new(read), tx));
    let writer = Writer {
        ws: write,
        correlation_id,
        open: true,
    };
    (rx, writer)
}

/// A frame forwarded by the reader task.
pub(crate) struct InboundFrame(Inbound);

async fn read_frames(
    mut read: FragmentCollectorRead<ReadHalf<Io>>,
    tx: mpsc::Sender<InboundFrame>,
) {
    loop {
        // Control frames are answered by the session loop (auto pong/close are off), so
        // nothing is ever sent from here.
        let frame = read
            .read_frame::<_, std::io::Error>(&mut |_| async { Ok(()) })
            .await;
        let inbound = match frame {
            Ok(frame) => match frame.opcode {
                OpCode::Text => match String::from_utf8(frame.payload.to_vec()) {
                    Ok(text) => Inbound::Text(text),
                    Err(_) => Inbound::Gone,
                },
                OpCode::Binary => Inbound::Binary(frame.payload.to_vec()),
                OpCode::Ping => Inbound::Ping(frame.payload.to_vec()),
                OpCode::Close => Inbound::Gone,
                OpCode::Pong | OpCode::Continuation => continue,
            },
            Err(error) => {
                tracing::debug!(%error, "session socket read ended");
                Inbound::Gone
            }
        };
        let gone = matches!(inbound, Inbound::Gone);
        if tx.send(InboundFrame(inbound)).await.is_err() || gone {
            return;
        }
    }
}

/// Everything a session runs with.
pub(crate) struct SessionRun {
    pub(crate) streams: Arc<Streams>,
    pub(crate) endpoint: Endpoint,
    pub(crate) principal: Principal,
    pub(crate) engine: StreamSession,
    pub(crate) first_actions: Vec<Action>,
    pub(crate) clock: SessionClock,
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
                Action::Send(data) => writer.event(data).await,
                Action::Media { segment, bytes } => {
                    let handle = analysis.get_or_insert_with(|| {
                        start_analysis(&streams, engine.model(), endpoint, &mut events)
                    });
                    if handle.media(segment, bytes) == Enqueued::Refused {
                        let error = ServiceError::with_message(
                            ErrorCode::Ih1002,
                            format!(
                                "analysis is behind with {} bytes queued; binary frame \
                                 {segment} was not analyzed",
                                handle.queued_bytes()
                            ),
                        );
                        writer
                            .event(error_event(&streams, &error, Some(segment)))
                            .await;
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
                    Some(Inbound::Binary(bytes)) => pending = engine.on_binary(now, bytes),
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
                    pending = absorb_output(&mut engine, &clock, &streams, &principal, output).await;
                }
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
    mut output: LiveOutput,
) -> Vec<Action> {
    let mut refusal = None;
    if let Some(token) = principal.token() {
        for (i, window) in output.windows.iter().enumerate() {
            let seconds = window.end - window.start;
            if let Err(error) =
                charge_video_budget(streams.tokens.as_ref(), &token.id, seconds).await
            {
                refusal = Some((i, error));
                break;
            }
        }
    }
    match refusal {
        None => engine.on_live_output(clock.now(), output),
        Some((covered, error)) => {
            output.windows.truncate(covered);
            let mut actions = engine.on_live_output(clock.now(), output);
            actions.extend(engine.fail(error));
            actions
        }
    }
}

/// An `error` event outside the engine (the analysis queue refusing a frame).
fn error_event(streams: &Streams, error: &ServiceError, segment: Option<u64>) -> EventData {
    EventData::Error(ErrorEvent {
        code: error.code,
        message: error.message().to_owned(),
        link: Some(error.code.link(&streams.settings.docs_url)),
        segment,
        seconds_remaining: None,
    })
}
