//! State shared by every stream session of the server ([`Streams`]), its
//! settings and the session clock: below the handshake (`super`) and the
//! [`crate::app::App`] that holds it.

use crate::config::Config;
use crate::executor::Executor;
use crate::recommend_backend::RecommendationService;
use crate::store::TokenStore;
use attune_core::session::SessionLimits;
use attune_core::wire::{Model, Seconds};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

/// The request header of the WebSocket subprotocol list.
pub(crate) const SEC_WEBSOCKET_PROTOCOL: &str = "sec-websocket-protocol";
/// The subprotocol that announces a credential in the next list item.
pub const ACCESS_TOKEN_PROTOCOL: &str = "access_token";
/// Largest WebSocket message read by default: above the interface's 32 MiB frame limit, so
/// an oversized frame is answered with a non-fatal `ih6002` rather than a dropped
/// connection; beyond this the session ends with `ih6002` and close 1009.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How stream sessions are run.
#[derive(Debug, Clone)]
pub struct StreamSettings {
    /// Session limits announced in `session.ready` and enforced.
    pub limits: SessionLimits,
    /// Models with an analysis backend on this instance (`ih1003` for others).
    pub models: Vec<Model>,
    /// Base of error documentation links.
    pub docs_url: String,
    /// Session seconds per real second: 1 in production. Tests speed time-driven rules
    /// (idle, maximum duration, drain, shutdown warnings) up with it.
    pub time_scale: f64,
    /// A frame that waited longer than this for analysis is decoded but not analyzed
    /// (`coverage.dropped`).
    pub max_lag: Duration,
    /// Unread bytes a session may hold for analysis; a frame arriving beyond is still
    /// demuxed and decoded (a continuous container needs every byte) but not analyzed
    /// (`coverage.dropped`).
    pub max_queued_bytes: u64,
    /// Unread bytes a session may hold at all (memory bound; at least `max_queued_bytes`):
    /// beyond, the session ends with `ih1002` and close 1013 rather than lose bytes.
    pub max_backlog_bytes: u64,
    /// Largest WebSocket message read ([`MAX_MESSAGE_BYTES`] by default).
    pub max_message_bytes: usize,
    /// Longest one write to the client may wait for it to read; past it the session ends and
    /// the connection is dropped without a close frame (the client sees 1006): a frame cut
    /// mid-write leaves nothing a close frame could follow, and a client that reads nothing
    /// would not read one either. This is what bounds a never-reading client to the socket
    /// buffers.
    pub write_timeout: Duration,
    /// How long a running session trusts its credential without reading the store again
    /// (revocations made through this server are seen at once; see `credential`).
    pub credential_recheck: Duration,
    /// Notice given to open sessions at shutdown (`ih6006` warnings, then `ih6005`), session
    /// seconds. About 5 minutes by default.
    pub shutdown_notice_seconds: Seconds,
    /// Writes realtime recommendations (the embedded recommender unless a backend is
    /// configured).
    pub recommender: RecommendationService,
    /// Realtime sessions transcribe their audio (`transcript.generated`) when the process
    /// has a transcriber ([`attune_core::transcript::shared`]).
    pub transcribe_realtime: bool,
    /// v1/v2 stream sessions transcribe their audio too (for their analysis: no event is
    /// sent); off by default, for what it costs.
    pub transcribe_streams: bool,
}

impl StreamSettings {
    /// Whether sessions on `endpoint` transcribe (when the process has a transcriber).
    pub fn transcribes(&self, endpoint: attune_core::wire::Endpoint) -> bool {
        match endpoint {
            attune_core::wire::Endpoint::Realtime => self.transcribe_realtime,
            _ => self.transcribe_streams,
        }
    }
}

/// How stream sessions run on a configuration.
impl From<&Config> for StreamSettings {
    fn from(config: &Config) -> StreamSettings {
        let defaults = StreamSettings::default();
        let mut limits = defaults.limits.clone();
        limits.idle_timeout_seconds = config.stream_idle_timeout_seconds;
        limits.max_duration_seconds = config.stream_max_duration_seconds;
        limits.max_drain_seconds = config.stream_drain_seconds;
        StreamSettings {
            limits,
            docs_url: config.docs_url.clone(),
            time_scale: f64::from(config.stream_time_scale),
            shutdown_notice_seconds: config.stream_shutdown_notice_seconds as f64,
            max_lag: Duration::from_millis(config.stream_max_lag_ms),
            max_queued_bytes: config.stream_max_queued_bytes,
            max_backlog_bytes: config.stream_max_backlog_bytes,
            max_message_bytes: usize::try_from(config.stream_max_message_bytes)
                .unwrap_or(usize::MAX),
            write_timeout: config.stream_write_timeout,
            transcribe_realtime: config.realtime_transcribe,
            transcribe_streams: config.stream_transcribe,
            recommender: config.recommendation_service().unwrap_or_else(|error| {
                tracing::error!(%error, "recommender backend unusable: the embedded recommender writes realtime recommendations");
                crate::recommend_backend::RecommendationService::embedded()
            }),
            models: config
                .stream_models
                .iter()
                .filter_map(|m| attune_core::wire::Model::parse(m))
                .collect(),
            ..defaults
        }
    }
}

impl Default for StreamSettings {
    fn default() -> Self {
        StreamSettings {
            limits: SessionLimits::default(),
            models: Model::SERVED.to_vec(),
            docs_url: "http://127.0.0.1:8080/docs".to_owned(),
            time_scale: 1.0,
            max_lag: Duration::from_secs(2),
            max_queued_bytes: 48 * 1024 * 1024,
            max_backlog_bytes: 96 * 1024 * 1024,
            max_message_bytes: MAX_MESSAGE_BYTES,
            write_timeout: Duration::from_secs(30),
            credential_recheck: Duration::from_secs(5),
            shutdown_notice_seconds: 300.0,
            recommender: RecommendationService::embedded(),
            transcribe_realtime: true,
            transcribe_streams: false,
        }
    }
}

/// Session time: seconds since the handshake, times the configured scale.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionClock {
    pub(crate) start: Instant,
    scale: f64,
}

impl SessionClock {
    pub(crate) fn new(scale: f64) -> SessionClock {
        SessionClock {
            start: Instant::now(),
            scale: if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                1.0
            },
        }
    }

    /// The session time now.
    pub(crate) fn now(&self) -> Seconds {
        self.start.elapsed().as_secs_f64() * self.scale
    }

    /// The instant at session time `at`.
    pub(crate) fn instant(&self, at: Seconds) -> Instant {
        let real = (at / self.scale).clamp(0.0, 1e9);
        self.start + Duration::from_secs_f64(real)
    }

    /// The session time of `instant`.
    pub(crate) fn session_time(&self, instant: Instant) -> Seconds {
        instant.saturating_duration_since(self.start).as_secs_f64() * self.scale
    }
}

/// State shared by every stream session of the server.
pub(crate) struct Streams {
    pub(crate) settings: StreamSettings,
    /// The instance's analysis executor, shared with uploads.
    pub(crate) pool: Executor,
    pub(crate) tokens: Arc<dyn TokenStore>,
    shutdown: watch::Sender<Option<Instant>>,
    pub(crate) tracker: TaskTracker,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("settings", &self.settings)
            .field("sessions", &self.tracker.len())
            .finish_non_exhaustive()
    }
}

impl Streams {
    pub(crate) fn new(
        settings: StreamSettings,
        tokens: Arc<dyn TokenStore>,
        pool: Executor,
    ) -> Streams {
        Streams {
            settings,
            pool,
            tokens,
            shutdown: watch::channel(None).0,
            tracker: TaskTracker::new(),
        }
    }

    pub(crate) fn shutdown_schedule(&self) -> watch::Receiver<Option<Instant>> {
        self.shutdown.subscribe()
    }

    /// Tells every open session the server shuts down after the notice period, and waits
    /// until they have all ended (they close themselves at the deadline).
    pub(crate) async fn shut_down(&self) {
        let notice = self.settings.shutdown_notice_seconds / self.settings.time_scale.max(1e-9);
        let at = Instant::now() + Duration::from_secs_f64(notice.clamp(0.0, 86_400.0));
        self.shutdown.send_replace(Some(at));
        self.tracker.close();
        if !self.tracker.is_empty() {
            tracing::info!(
                sessions = self.tracker.len(),
                notice_seconds = notice,
                "stream sessions told of the shutdown"
            );
        }
        // Sessions close at the deadline; a little slack for their last writes.
        let _ = tokio::time::timeout_at(at + Duration::from_secs(5), self.tracker.wait()).await;
    }
}
