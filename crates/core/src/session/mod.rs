//! The sans-I/O engine of one stream or realtime session: every protocol rule
//! of the interface's "Stream and realtime session" table, decided without a
//! socket.
//!
//! The server feeds it what happens (a text frame, a binary frame, the media
//! pipeline's results, the passing of time) with the current session time in
//! seconds, and carries out the [`Action`]s it returns: send an event, hand
//! media to the session's pipeline, close the socket. The engine never
//! blocks and never reads a clock, so every rule is a unit test, time-driven
//! ones included ([`StreamSession::next_deadline`] says when to call
//! [`StreamSession::on_tick`]).
//!
//! Phases, each moved only by the table's rows:
//!
//! ```text
//! open --session.close--> closing --drained or max_drain_seconds--> closed
//!   \----------------- fatal error / limit / shutdown ---------------/
//! ```
//!
//! Choices where the interface is silent (also in docs/INTERFACE.md):
//! - Idle time counts from the last inbound frame of any kind; it does not
//!   apply while draining (the drain deadline is shorter).
//! - A zero-byte binary frame answers a non-fatal `ih6007` for its segment; an
//!   oversized one a non-fatal `ih6002`. Both are counted as segments, so
//!   `segment` always names the caller's n-th binary frame (zero-based).
//! - A realtime config frame changes only the fields it names: an omitted
//!   field keeps its current value, an explicit `null` resets it (no
//!   instructions, frequency `medium`, both analysis groups). The interface's
//!   "the most recent wins" holds per field.
//! - A message over the socket's read cap ends the session with `ih6002` and
//!   close 1009; a revoked credential ends it with `ih2014` (token) or
//!   `ih2001` (key) at the next chunk or window; media the server cannot even
//!   decode in time past its hard backlog bound ends it with `ih1002` (1013)
//!   rather than being discarded.
//! - A config frame is applied atomically: when any part is refused
//!   (a model the credential lacks, a model change after media, `audio_format`
//!   on another model), nothing of it applies and no `session.updated` follows.
//! - `audio_format` is accepted before the first binary frame only, and stays
//!   in force for the session once accepted.
//! - Realtime `transcript.generated` ([`StreamSession::on_utterances`]): one final
//!   segment per event, `{start, end, text, speaker}` in session seconds, the speaker
//!   numbered from 1 in the order the session's diarizer first heard the voices (0 when no
//!   speaker turn overlaps the segment). Until the client sends a `transcript.updated`,
//!   these segments are the transcript recommendations read and each counts as a
//!   transcript arriving; the client's transcript replaces them for the rest of the session.
//! - Fatal conditions send the `error` envelope and close with the catalog's
//!   close code; only a graceful close sends the final `signal.ended` events
//!   and `session.ended`. A server shutdown (`ih6005`) also ends open signals
//!   first, since the session ends on the server's initiative.

mod billing;
mod endings;
mod setup;
mod time;

pub use setup::{SessionLimits, SessionSetup};

use crate::error::{ErrorCode, ServiceError};
use crate::lifecycle::signals::UpdatePolicy;
use crate::lifecycle::{ClosedWindow, SessionLifecycle};
use crate::live::LiveOutput;
use crate::recommend::{DuePeriod, Period, RecommendationInput, RecommendationPacer};
use crate::transcript::Utterance;
use crate::wire::{
    AnalysisGroup, AudioFormat, ClientFrame, CoverageDegraded, CoverageDropped, CoverageReason,
    Endpoint, EventData, IncludeFlag, Model, RealtimeConfig, RealtimeRecommendationGenerated,
    RecommendationFrequency, Seconds, SessionReady, SessionUpdated, StreamConfig,
    SupportedConfigOptions, TimeRange, TranscriptGenerated, TranscriptSegment,
};

/// What the server must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this event (wrapped in an envelope with a timestamp and the
    /// connection's correlation id).
    Send(EventData),
    /// Hand this binary frame to the session's media pipeline.
    Media {
        /// Zero-based index of the caller's binary frame.
        segment: u64,
        /// The frame.
        bytes: Vec<u8>,
    },
    /// From now on binary frames are raw PCM in this format.
    SetAudioFormat(AudioFormat),
    /// The stream has ended: the pipeline analyzes what it holds and calls
    /// [`StreamSession::on_drained`] when done.
    FinishMedia,
    /// Realtime: a recommendation is due; ask the session's recommender and hand its answer
    /// to [`StreamSession::on_recommendation`].
    Recommend(RecommendationRequest),
    /// Close the socket with this code; nothing follows.
    Close {
        /// WebSocket close code.
        code: u16,
        /// Close reason (short, safe to show).
        reason: String,
    },
}

/// Which credential of a running session stopped authenticating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revoked {
    /// A client token revoked, or the key that minted it (`ih2014`).
    Token,
    /// The API key the session was opened with (`ih2001`).
    Key,
}

/// The phase of a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// Accepting media and config.
    Open,
    /// `session.close` accepted: draining until `deadline` (session seconds).
    Closing {
        /// When unfinished work is abandoned.
        deadline: Seconds,
    },
    /// Closed; no further action.
    Closed,
}

/// The realtime-only state: config, the latest transcript and the recommendation pacing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RealtimeState {
    /// The active realtime config.
    pub config: RealtimeConfig,
    /// The transcript recommendations read: the client's latest `transcript.updated` once
    /// one arrived, else the server's own (the latest [`SERVER_TRANSCRIPT_SEGMENTS`]
    /// segments sent as `transcript.generated`).
    pub transcript: Vec<TranscriptSegment>,
    /// Whether the client sent a transcript: from then on the client's is the one read.
    pub client_transcript: bool,
    /// When the next recommendation is due (the interface's three conditions and pacing).
    pub pacer: RecommendationPacer,
}

/// The server transcript's segments a realtime session keeps for its recommendations (the
/// recommenders read at most the latest 60).
pub const SERVER_TRANSCRIPT_SEGMENTS: usize = 120;

/// What a recommender is asked for one due period: owned, so it can travel to wherever the
/// recommender runs (an HTTP backend is awaited off the session's loop).
#[derive(Debug, Clone, PartialEq)]
pub struct RecommendationRequest {
    /// The period, with its signals and engagement.
    pub due: DuePeriod,
    /// The realtime config in force when it became due.
    pub config: RealtimeConfig,
    /// The session's latest transcript.
    pub transcript: Vec<TranscriptSegment>,
}

impl RecommendationRequest {
    /// The recommender's input; `None` when the config has no instructions.
    pub fn input(&self) -> Option<RecommendationInput<'_>> {
        self.due.input(&self.config, &self.transcript)
    }

    /// The period the recommendation covers.
    pub fn period(&self) -> Period {
        self.due.period
    }
}

/// One stream or realtime session.
#[derive(Debug, Clone)]
pub struct StreamSession {
    setup: SessionSetup,
    phase: Phase,
    model: Model,
    include: Vec<IncludeFlag>,
    audio_format: Option<AudioFormat>,
    realtime: RealtimeState,
    lifecycle: SessionLifecycle,
    /// Session seconds of the last inbound frame (idle timer).
    last_inbound: Seconds,
    /// Binary frames received so far (the next segment index).
    segments: u64,
    /// Cumulative binary bytes received (token `max_bytes`).
    bytes: u64,
    /// Whether a binary frame was accepted (locks the model).
    media_started: bool,
    /// When binary data began arriving without decodable media since
    /// (the `ih6010` hold timer); `None` while the stream advances.
    undecoded_since: Option<Seconds>,
    /// Whether `ih6009` was already sent.
    told_closing: bool,
    /// Scheduled shutdown: when, and which warnings are still due.
    shutdown: Option<Shutdown>,
}

#[derive(Debug, Clone, Copy)]
struct Shutdown {
    at: Seconds,
    final_warning_sent: bool,
}

/// Seconds before a shutdown at which the second `ih6006` warning goes out.
pub const FINAL_SHUTDOWN_WARNING_SECONDS: Seconds = 30.0;

impl StreamSession {
    /// Opens a session whose handshake was accepted at session time `now`
    /// (normally 0) and returns it with its first action, `session.ready`.
    pub fn open(setup: SessionSetup, now: Seconds) -> (StreamSession, Vec<Action>) {
        let policy = match setup.endpoint {
            Endpoint::StreamV1 => UpdatePolicy::V1Stream,
            Endpoint::StreamV2 => UpdatePolicy::V2Stream,
            Endpoint::Realtime => UpdatePolicy::Realtime,
        };
        let lifecycle = SessionLifecycle::new(policy, setup.limits.quality_period_seconds, &[]);
        let session = StreamSession {
            model: setup.model,
            phase: Phase::Open,
            include: Vec::new(),
            audio_format: None,
            realtime: RealtimeState::default(),
            lifecycle,
            last_inbound: now,
            segments: 0,
            bytes: 0,
            media_started: false,
            undecoded_since: None,
            told_closing: false,
            shutdown: None,
            setup,
        };
        let ready = Action::Send(EventData::SessionReady(session.ready_data()));
        (session, vec![ready])
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The current model.
    pub fn model(&self) -> Model {
        self.model
    }

    /// The active include flags.
    pub fn include(&self) -> &[IncludeFlag] {
        &self.include
    }

    /// The accepted raw-audio format, if any.
    pub fn audio_format(&self) -> Option<AudioFormat> {
        self.audio_format
    }

    /// Realtime config and transcript (meaningful on realtime only).
    pub fn realtime(&self) -> &RealtimeState {
        &self.realtime
    }

    /// The recommender answered for `period`: the `realtime_recommendation.generated` event
    /// when it had something to say; with `None` the period is closed and the transcript still
    /// counts as new for the next one.
    pub fn on_recommendation(&mut self, period: Period, text: Option<String>) -> Vec<Action> {
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        match text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
            Some(text) => vec![Action::Send(EventData::RealtimeRecommendationGenerated(
                RealtimeRecommendationGenerated {
                    text,
                    start: period.start,
                    end: period.end,
                },
            ))],
            None => {
                self.realtime.pacer.declined();
                Vec::new()
            }
        }
    }

    /// Cumulative binary bytes received.
    pub fn bytes_received(&self) -> u64 {
        self.bytes
    }

    fn ready_data(&self) -> SessionReady {
        let limits = &self.setup.limits;
        let realtime = self.setup.endpoint == Endpoint::Realtime;
        SessionReady {
            session_idle_timeout_seconds: limits.idle_timeout_seconds,
            session_max_duration_seconds: limits.max_duration_seconds,
            max_segment_duration_seconds: None,
            min_segment_size_bytes: limits.min_segment_size_bytes,
            max_segment_size_bytes: limits.max_segment_size_bytes,
            supported_session_config_options: SupportedConfigOptions {
                include: if realtime {
                    Vec::new()
                } else {
                    vec![
                        IncludeFlag::ConversationQualityOverall,
                        IncludeFlag::ConversationQualityTimeline,
                    ]
                },
                model: (self.setup.endpoint == Endpoint::StreamV2)
                    .then(|| self.setup.selectable_models.clone()),
                realtime_recommendation_instructions: realtime
                    .then(crate::wire::instructions_option_description),
                realtime_recommendation_frequency: realtime
                    .then(|| RecommendationFrequency::ALL.to_vec()),
                analysis_groups: realtime.then(|| AnalysisGroup::ALL.to_vec()),
            },
        }
    }

    // ------------------------------------------------------------ inbound

    /// A text frame arrived.
    pub fn on_text(&mut self, now: Seconds, text: &str) -> Vec<Action> {
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        self.last_inbound = now;
        let endpoint = self.setup.endpoint;
        let draining = matches!(self.phase, Phase::Closing { .. });
        match ClientFrame::parse(text, endpoint) {
            Err(problem) => {
                let error = ServiceError::with_message(problem.code(), problem.to_string());
                if problem.is_fatal(endpoint, draining) {
                    self.fail(error)
                } else {
                    vec![self.error_action(&error, None)]
                }
            }
            Ok(ClientFrame::SessionClose) => self.begin_close(now),
            Ok(ClientFrame::StreamConfig(config)) => self.apply_stream_config(config),
            Ok(ClientFrame::RealtimeConfig(update)) => {
                self.realtime.config.apply(&update);
                let c = &self.realtime.config;
                vec![Action::Send(EventData::SessionUpdated(
                    SessionUpdated::Realtime {
                        realtime_recommendation_instructions: c
                            .realtime_recommendation_instructions
                            .clone(),
                        realtime_recommendation_frequency: c.realtime_recommendation_frequency,
                        analysis_groups: c.analysis_groups.clone(),
                    },
                ))]
            }
            Ok(ClientFrame::TranscriptUpdated(update)) => {
                self.realtime.transcript = update.transcript;
                self.realtime.client_transcript = true;
                self.realtime.pacer.transcript_arrived();
                self.recommendation_due()
            }
        }
    }

    fn apply_stream_config(&mut self, config: StreamConfig) -> Vec<Action> {
        let mut model = self.model;
        if let Some(requested) = config.model {
            if requested != self.model {
                let refusal = if requested.is_reserved() {
                    Some(ServiceError::with_message(
                        ErrorCode::Ih4005,
                        format!("model {requested} is not available on this route"),
                    ))
                } else if self.media_started {
                    Some(ServiceError::with_message(
                        ErrorCode::Ih4005,
                        "the model can change only before the first media chunk",
                    ))
                } else if !self.setup.selectable_models.contains(&requested) {
                    Some(ServiceError::with_message(
                        ErrorCode::Ih2003,
                        format!(
                            "the credential lacks the scope for model {requested}; the session continues on {}",
                            self.model
                        ),
                    ))
                } else {
                    None
                };
                if let Some(error) = refusal {
                    return vec![self.error_action(&error, None)];
                }
                model = requested;
            }
        }
        let mut actions = Vec::new();
        if let Some(format) = config.audio_format {
            let refusal = if model != Model::Inter2Audio {
                Some("audio_format is accepted on the inter-2-audio model only")
            } else if self.media_started && self.audio_format != Some(format) {
                Some("audio_format can be declared only before the first binary frame")
            } else {
                None
            };
            if let Some(message) = refusal {
                let error = ServiceError::with_message(ErrorCode::Ih6001, message);
                // Refused config is fatal on v1 outside a drain, as any invalid
                // config frame; v1 cannot reach here (its parser rejects the field).
                return vec![self.error_action(&error, None)];
            }
            if self.audio_format != Some(format) {
                self.audio_format = Some(format);
                actions.push(Action::SetAudioFormat(format));
            }
        }
        self.model = model;
        self.include = config.include;
        self.lifecycle.set_include(&self.include);
        actions.push(Action::Send(EventData::SessionUpdated(
            SessionUpdated::Stream {
                include: self.include.clone(),
                model: (self.setup.endpoint == Endpoint::StreamV2).then_some(self.model),
            },
        )));
        actions
    }

    /// A binary frame arrived.
    pub fn on_binary(&mut self, now: Seconds, bytes: Vec<u8>) -> Vec<Action> {
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        self.last_inbound = now;
        let segment = self.segments;
        self.segments += 1;
        self.bytes = self.bytes.saturating_add(bytes.len() as u64);
        if let Some(cap) = self.setup.limits.max_bytes {
            if self.bytes > cap {
                return self.fail(ServiceError::with_message(
                    ErrorCode::Ih6008,
                    format!(
                        "the session sent {} bytes; the token allows {cap}",
                        self.bytes
                    ),
                ));
            }
        }
        if let Phase::Closing { .. } = self.phase {
            if self.told_closing {
                return Vec::new();
            }
            self.told_closing = true;
            let error = ServiceError::new(ErrorCode::Ih6009);
            return vec![self.error_action(&error, Some(segment))];
        }
        let size = bytes.len() as u64;
        if size == 0 || size < self.setup.limits.min_segment_size_bytes {
            let error = ServiceError::with_message(
                ErrorCode::Ih6007,
                format!("binary frame {segment} is empty"),
            );
            return vec![self.error_action(&error, Some(segment))];
        }
        if size > self.setup.limits.max_segment_size_bytes {
            let error = ServiceError::with_message(
                ErrorCode::Ih6002,
                format!(
                    "binary frame {segment} has {size} bytes; the limit is {}",
                    self.setup.limits.max_segment_size_bytes
                ),
            );
            return vec![self.error_action(&error, Some(segment))];
        }
        self.media_started = true;
        vec![Action::Media { segment, bytes }]
    }

    // ------------------------------------------------------- from the pipeline

    /// The pipeline decoded media up to `media_end` (session seconds): the
    /// stream advances, which resets the `ih6010` hold timer.
    pub fn on_media_progress(&mut self, _now: Seconds, _media_end: Seconds) {
        self.undecoded_since = None;
    }

    /// Everything one batch of the session's [`LiveAnalyzer`](crate::live::LiveAnalyzer)
    /// produced, in the order a client should hear it: segment problems, progress, window
    /// events, coverage, then a fatal media error.
    pub fn on_live_output(&mut self, now: Seconds, output: LiveOutput) -> Vec<Action> {
        let mut actions = Vec::new();
        for problem in output.problems {
            actions.extend(self.on_media_problem(Some(problem.segment), problem.error, false));
        }
        if let Some(media_end) = output.media_end {
            self.on_media_progress(now, media_end);
        } else if output.frames_examined > 0
            && self.undecoded_since.is_none()
            && self.phase == Phase::Open
        {
            // Frames were read and none advanced the stream: the `ih6010` hold timer starts
            // now, when the bytes were examined, not when they arrived (a session queued
            // behind others on a busy machine has not been looked at yet).
            self.undecoded_since = Some(now);
        }
        actions.extend(self.on_windows(&output.windows));
        actions.extend(self.on_coverage_degraded(output.degraded));
        actions.extend(self.on_coverage_dropped(output.dropped));
        if let Some(fatal) = output.fatal {
            actions.extend(self.on_media_problem(None, fatal, true));
        }
        actions
    }

    /// The session's own transcript advanced: utterances final in session time, in order,
    /// with the voices of the session's online diarizer (a [`LiveTranscript`](crate::live::LiveTranscript)'s
    /// output). On realtime each is one `transcript.generated` (times to the millisecond,
    /// speaker from 1, 0 when unknown), and until the client sends a `transcript.updated`
    /// they are the transcript recommendations read (each counts as a transcript arriving).
    /// Stream sessions send nothing: the interface has no such event there.
    pub fn on_utterances(&mut self, utterances: &[Utterance]) -> Vec<Action> {
        if self.setup.endpoint != Endpoint::Realtime || self.phase == Phase::Closed {
            return Vec::new();
        }
        let mut actions = Vec::new();
        for u in utterances.iter().filter(|u| !u.text.trim().is_empty()) {
            let ms = |t: Seconds| (t.max(0.0) * 1000.0).round() / 1000.0;
            let text = u.text.trim().to_owned();
            actions.push(Action::Send(EventData::TranscriptGenerated(
                TranscriptGenerated {
                    start: ms(u.start),
                    end: ms(u.end),
                    text: text.clone(),
                    speaker: u.speaker.map_or(0, |s| s as u32 + 1),
                },
            )));
            if !self.realtime.client_transcript {
                // The recommenders number voices from 0, as clients do; a segment no turn
                // overlaps is the previous segment's voice.
                let speaker = match u.speaker {
                    Some(s) => s as u32,
                    None => self.realtime.transcript.last().map_or(0, |l| l.speaker),
                };
                let transcript = &mut self.realtime.transcript;
                transcript.push(TranscriptSegment {
                    start: ms(u.start),
                    end: ms(u.end),
                    text,
                    speaker,
                });
                if transcript.len() > SERVER_TRANSCRIPT_SEGMENTS {
                    let excess = transcript.len() - SERVER_TRANSCRIPT_SEGMENTS;
                    transcript.drain(..excess);
                }
                self.realtime.pacer.transcript_arrived();
            }
        }
        if !actions.is_empty() {
            actions.extend(self.recommendation_due());
        }
        actions
    }

    /// The pipeline closed analysis windows.
    pub fn on_windows(&mut self, windows: &[ClosedWindow]) -> Vec<Action> {
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        let mut actions = Vec::new();
        for window in windows {
            let window = self.filter_groups(window);
            if self.setup.endpoint == Endpoint::Realtime {
                self.realtime.pacer.observe_window(&window);
            }
            actions.extend(
                self.lifecycle
                    .observe_window(&window)
                    .into_iter()
                    .map(Action::Send),
            );
        }
        actions.extend(self.recommendation_due());
        actions
    }

    /// On realtime, asks for a recommendation when one is due.
    fn recommendation_due(&mut self) -> Vec<Action> {
        if self.setup.endpoint != Endpoint::Realtime || self.phase == Phase::Closed {
            return Vec::new();
        }
        let config = &self.realtime.config;
        match self.realtime.pacer.take_due(config) {
            Some(due) => vec![Action::Recommend(RecommendationRequest {
                due,
                config: config.clone(),
                transcript: self.realtime.transcript.clone(),
            })],
            None => Vec::new(),
        }
    }

    /// On realtime, keeps only the evidence of the active analysis groups.
    fn filter_groups(&self, window: &ClosedWindow) -> ClosedWindow {
        if self.setup.endpoint != Endpoint::Realtime {
            return window.clone();
        }
        let groups = &self.realtime.config.analysis_groups;
        let allowed = |m: &crate::wire::Modality| match m {
            crate::wire::Modality::Audio => groups.contains(&AnalysisGroup::Audio),
            crate::wire::Modality::Video | crate::wire::Modality::Visual => {
                groups.contains(&AnalysisGroup::Visual)
            }
        };
        let mut filtered = window.clone();
        filtered.detections = window
            .detections
            .iter()
            .filter_map(|d| {
                let modality: Vec<_> = d.modality.iter().copied().filter(allowed).collect();
                (!modality.is_empty()).then(|| crate::lifecycle::signals::Detection {
                    modality,
                    ..d.clone()
                })
            })
            .collect();
        filtered
    }

    /// A problem with one segment or with the stream. Non-fatal problems
    /// answer an `error` naming the segment and the session stays open;
    /// `fatal` ones close it.
    pub fn on_media_problem(
        &mut self,
        segment: Option<u64>,
        error: ServiceError,
        fatal: bool,
    ) -> Vec<Action> {
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        if fatal {
            self.fail(error)
        } else {
            vec![self.error_action(&error, segment)]
        }
    }

    /// Windows that decoded materially less video than their span.
    pub fn on_coverage_degraded(&mut self, ranges: Vec<TimeRange>) -> Vec<Action> {
        if self.phase == Phase::Closed || ranges.is_empty() {
            return Vec::new();
        }
        vec![Action::Send(EventData::CoverageDegraded(
            CoverageDegraded {
                ranges,
                reason: CoverageReason::VideoGap,
            },
        ))]
    }

    /// Media skipped by saturation or a jump ahead (not billed).
    pub fn on_coverage_dropped(&mut self, ranges: Vec<TimeRange>) -> Vec<Action> {
        if self.phase == Phase::Closed || ranges.is_empty() {
            return Vec::new();
        }
        vec![Action::Send(EventData::CoverageDropped(CoverageDropped {
            ranges,
        }))]
    }

    /// The pipeline finished everything after [`Action::FinishMedia`]: a
    /// closing session ends gracefully now.
    pub fn on_drained(&mut self) -> Vec<Action> {
        match self.phase {
            Phase::Closing { .. } => self.end_gracefully(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
