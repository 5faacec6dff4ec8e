//! Server configuration: defaults, then an optional TOML file, then `ATTUNE_*`
//! environment variables, then command-line flags, each layer overriding the
//! one before.
//!
//! Every key, its environment variable (`ATTUNE_` and the key in upper case)
//! and its default are in the manual, `docs/SERVER.md` ("Settings"), and in
//! the example file `docs/attune.example.toml`; the tests in `documented.rs`
//! fail when either misses a key or states a default the code does not have.
//!
//! Other `ATTUNE_*` variables (such as `ATTUNE_LOG`) are not configuration
//! keys and are ignored here; an unknown key in the file is an error, so a
//! typo does not silently leave a default in place.

use crate::recommend_backend::RecommenderConfig;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod layer;
mod values;

pub use layer::ConfigLayer;
use values::{at_least_one, check_url, demo_api_key, store_url, stream_models};
pub use values::{DemoApiKey, StoreUrl};

/// The resolved configuration of one server process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Address `attune serve` listens on.
    pub bind: SocketAddr,
    /// Public HTTP base address, `{base_url}` in the interface, without a
    /// trailing slash.
    pub base_url: String,
    /// Public WebSocket base address, `{ws_base_url}` in the interface.
    pub ws_base_url: String,
    /// Error documentation address: error links are
    /// `{docs_url}/api-reference/error-handling#<anchor>`.
    pub docs_url: String,
    /// The SQLite store file.
    pub store_path: PathBuf,
    /// A PostgreSQL store (`postgres://...`), shared by every instance given
    /// the same URL; when set, `store_path` is not used.
    pub store_url: Option<StoreUrl>,
    /// On a shared store, how long an instance's claim on its running jobs
    /// lasts without renewal (renewed every third of it): after an instance
    /// dies, its running jobs fail with `ih1004` within about this long.
    pub store_lease: Duration,
    /// Connections served at once; further clients wait to be accepted.
    pub max_connections: usize,
    /// Connections one client address may hold at once (0: no limit); a further one is
    /// answered `503` `ih1002` and closed. Off by default because behind a reverse proxy
    /// every client shares the proxy's address.
    pub max_connections_per_ip: usize,
    /// How long a client may take to send a request's head; past it the connection is
    /// closed, so a slow-header client cannot hold a connection permit.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body, from the handler's first read;
    /// past it the request is answered `408` (`ih4005` for uploads, `ih4006` for JSON).
    pub body_read_timeout: Duration,
    /// Threads of the instance's one analysis executor, shared by uploads and
    /// stream sessions (uploads run on every thread but one, see
    /// [`crate::executor`]).
    pub analysis_threads: usize,
    /// Jobs (v2 jobs and v1 analyses, queued or running) the instance holds
    /// at most; a submission beyond answers `ih1002`.
    pub max_jobs: usize,
    /// Longest media accepted for analysis (`ih4004` beyond).
    pub max_media_duration: Duration,
    /// Largest upload accepted (`ih4003` beyond).
    pub max_upload_bytes: u64,
    /// How long shutdown waits for in-flight requests before dropping them.
    pub shutdown_grace: Duration,
    /// Idle limit of a stream session (`ih6003`), seconds; 0 disables.
    pub stream_idle_timeout_seconds: u64,
    /// Longest stream session (`ih6004`), seconds; 0 disables.
    pub stream_max_duration_seconds: u64,
    /// Longest drain after `session.close`, seconds.
    pub stream_drain_seconds: u64,
    /// Notice open stream sessions get at shutdown (`ih6006` warnings, then `ih6005`), seconds.
    pub stream_shutdown_notice_seconds: u64,
    /// Session seconds per real second (1; tests raise it to run time-driven rules fast).
    pub stream_time_scale: u32,
    /// A stream frame that waited longer than this for analysis is decoded but not analyzed
    /// (`coverage.dropped`), milliseconds.
    pub stream_max_lag_ms: u64,
    /// Unread bytes a stream session may hold for analysis; frames beyond are decoded but
    /// not analyzed (`coverage.dropped`).
    pub stream_max_queued_bytes: u64,
    /// Unread bytes a stream session may hold at all; beyond, it ends with `ih1002` (1013).
    pub stream_max_backlog_bytes: u64,
    /// Largest WebSocket message read; a larger one ends the session with `ih6002` (1009).
    pub stream_max_message_bytes: u64,
    /// Longest a write to a stream client may wait for the client to read; past it the
    /// session ends and the connection is dropped (the client sees 1006), so a client that
    /// never reads holds no more than the socket buffers.
    pub stream_write_timeout: Duration,
    /// Realtime sessions transcribe their audio and send `transcript.generated` (when the
    /// process has the speech recognizer: `models/`, and `ATTUNE_TRANSCRIBE` is not `0`).
    pub realtime_transcribe: bool,
    /// v1/v2 stream sessions transcribe their audio too (their analysis reads the words; no
    /// event is sent). Off by default: it costs about as much CPU as a realtime session's
    /// transcription (see `docs/SERVER.md`).
    pub stream_transcribe: bool,
    /// `attune serve` loads the voice and face networks as it starts (`attune_core::warm_up`:
    /// about 2.7 s of one core, some 100 MiB held from the start) rather than in the first
    /// sessions' windows. On by default.
    pub warm_up: bool,
    /// Models stream sessions may use (`ih1003` for the others), comma-separated in the
    /// environment.
    pub stream_models: Vec<String>,
    /// The realtime recommendation backend (embedded only when no `url` is set).
    pub recommender: RecommenderConfig,
    /// The API key `POST /demo/token` mints the browser demo's client tokens with; `None`
    /// disables the demo.
    pub demo_api_key: Option<DemoApiKey>,
}

/// A configuration error, naming the file or variable at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("invalid configuration file {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<toml::de::Error>,
    },
    /// An environment variable has an unusable value.
    #[error("invalid value for {name}: {reason}")]
    Env {
        /// The variable.
        name: String,
        /// Why.
        reason: String,
    },
    /// The combined settings are unusable.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Default listening address.
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";
/// Default store file.
pub const DEFAULT_STORE_PATH: &str = "./attune-data/attune.sqlite3";
/// Default connection limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default number of jobs an instance holds.
pub const DEFAULT_MAX_JOBS: usize = 64;
/// Default maximum media duration: the interface's 30 minutes.
pub const DEFAULT_MAX_MEDIA_DURATION_SECONDS: u64 = 1800;
/// Default maximum upload size: the interface's 32 MB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 33_554_432;
/// Default shutdown grace period.
pub const DEFAULT_SHUTDOWN_GRACE_SECONDS: u64 = 30;
/// Default lease of an instance on a shared store.
pub const DEFAULT_STORE_LEASE_SECONDS: u64 = 30;

impl Config {
    /// Resolves the layers: defaults for what no layer sets, then derived
    /// URLs, then checks.
    pub fn from_layer(layer: ConfigLayer) -> Result<Config, ConfigError> {
        layer
            .recommender
            .validate()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let bind = match layer.bind {
            Some(bind) => bind,
            None => DEFAULT_BIND.parse().expect("the default address parses"),
        };
        let base_url = check_url(
            "base_url",
            &layer.base_url.unwrap_or_else(|| format!("http://{bind}")),
            &["http", "https"],
        )?;
        let derived_ws = match base_url.strip_prefix("https") {
            Some(rest) => format!("wss{rest}"),
            None => format!("ws{}", base_url.trim_start_matches("http")),
        };
        let ws_base_url = check_url(
            "ws_base_url",
            &layer.ws_base_url.unwrap_or(derived_ws),
            &["ws", "wss"],
        )?;
        let docs_url = check_url(
            "docs_url",
            &layer.docs_url.unwrap_or_else(|| format!("{base_url}/docs")),
            &["http", "https"],
        )?;
        let threads = match (
            layer.analysis_threads,
            layer.workers,
            layer.stream_analysis_threads,
        ) {
            (Some(threads), _, _) => ("analysis_threads", threads),
            (None, Some(threads), _) => ("workers", threads),
            (None, None, Some(threads)) => ("stream_analysis_threads", threads),
            (None, None, None) => (
                "analysis_threads",
                std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
            ),
        };
        let analysis_threads = at_least_one(threads.0, threads.1)?;
        let max_jobs = at_least_one("max_jobs", layer.max_jobs.unwrap_or(DEFAULT_MAX_JOBS))?;
        Ok(Config {
            bind,
            base_url,
            ws_base_url,
            docs_url,
            store_path: layer
                .store_path
                .unwrap_or_else(|| PathBuf::from(DEFAULT_STORE_PATH)),
            store_url: store_url(layer.store_url)?,
            store_lease: Duration::from_secs(at_least_one(
                "store_lease_seconds",
                layer
                    .store_lease_seconds
                    .unwrap_or(DEFAULT_STORE_LEASE_SECONDS),
            )?),
            max_connections: at_least_one(
                "max_connections",
                layer.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            )?,
            max_connections_per_ip: layer.max_connections_per_ip.unwrap_or(0),
            header_read_timeout: Duration::from_secs(at_least_one(
                "header_read_timeout_seconds",
                layer.header_read_timeout_seconds.unwrap_or(30),
            )?),
            body_read_timeout: Duration::from_secs(at_least_one(
                "body_read_timeout_seconds",
                layer.body_read_timeout_seconds.unwrap_or(300),
            )?),
            analysis_threads,
            max_jobs: max_jobs.max(analysis_threads),
            max_media_duration: Duration::from_secs(at_least_one(
                "max_media_duration_seconds",
                layer
                    .max_media_duration_seconds
                    .unwrap_or(DEFAULT_MAX_MEDIA_DURATION_SECONDS),
            )?),
            max_upload_bytes: at_least_one(
                "max_upload_bytes",
                layer.max_upload_bytes.unwrap_or(DEFAULT_MAX_UPLOAD_BYTES),
            )?,
            shutdown_grace: Duration::from_secs(
                layer
                    .shutdown_grace_seconds
                    .unwrap_or(DEFAULT_SHUTDOWN_GRACE_SECONDS),
            ),
            stream_idle_timeout_seconds: layer.stream_idle_timeout_seconds.unwrap_or(300),
            stream_max_duration_seconds: layer.stream_max_duration_seconds.unwrap_or(3600),
            stream_drain_seconds: layer.stream_drain_seconds.unwrap_or(30),
            stream_shutdown_notice_seconds: layer.stream_shutdown_notice_seconds.unwrap_or(300),
            stream_time_scale: at_least_one(
                "stream_time_scale",
                layer.stream_time_scale.unwrap_or(1),
            )?,
            stream_max_lag_ms: layer.stream_max_lag_ms.unwrap_or(2000),
            stream_max_queued_bytes: layer.stream_max_queued_bytes.unwrap_or(48 << 20),
            stream_max_backlog_bytes: layer.stream_max_backlog_bytes.unwrap_or(96 << 20),
            stream_max_message_bytes: at_least_one(
                "stream_max_message_bytes",
                layer.stream_max_message_bytes.unwrap_or(64 << 20),
            )?,
            stream_write_timeout: Duration::from_secs(at_least_one(
                "stream_write_timeout_seconds",
                layer.stream_write_timeout_seconds.unwrap_or(30),
            )?),
            stream_models: stream_models(layer.stream_models)?,
            realtime_transcribe: layer.realtime_transcribe.unwrap_or(true),
            stream_transcribe: layer.stream_transcribe.unwrap_or(false),
            warm_up: layer.warm_up.unwrap_or(true),
            recommender: layer.recommender,
            demo_api_key: demo_api_key(layer.demo_api_key)?,
        })
    }

    /// The realtime recommender this configuration asks for, reading the backend's API key
    /// from the process environment when `recommender.api_key_env` names a variable.
    pub fn recommendation_service(
        &self,
    ) -> Result<
        crate::recommend_backend::RecommendationService,
        crate::recommend_backend::RecommenderConfigError,
    > {
        crate::recommend_backend::RecommendationService::from_config(&self.recommender, |name| {
            std::env::var(name).ok()
        })
    }

    /// The configuration of a server listening on `addr`. With `bind` on port 0
    /// (any free port, as test scripts bind), the URLs derived from `bind`
    /// would name port 0, so every error `link` would point nowhere; they name
    /// the port the system gave instead. URLs set explicitly are kept.
    pub fn bound_to(mut self, addr: SocketAddr) -> Config {
        if self.bind.port() != 0 || addr == self.bind {
            return self;
        }
        let (configured, actual) = (format!("http://{}", self.bind), format!("http://{addr}"));
        if self.docs_url == format!("{configured}/docs") {
            self.docs_url = format!("{actual}/docs");
        }
        if self.ws_base_url == format!("ws://{}", self.bind) {
            self.ws_base_url = format!("ws://{addr}");
        }
        if self.base_url == configured {
            self.base_url = actual;
        }
        self.bind = addr;
        self
    }

    /// Loads the configuration: defaults, then `file` if given, then the
    /// `ATTUNE_*` variables among `env`, then `overrides` (command-line flags).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (OsString, OsString)>,
        overrides: ConfigLayer,
    ) -> Result<Config, ConfigError> {
        let from_file = match file {
            Some(path) => ConfigLayer::from_file(path)?,
            None => ConfigLayer::default(),
        };
        let layer = from_file
            .overlay(ConfigLayer::from_env(env)?)
            .overlay(overrides);
        Config::from_layer(layer)
    }
}

impl Default for Config {
    /// Every documented default.
    fn default() -> Self {
        Config::from_layer(ConfigLayer::default()).expect("the defaults are valid")
    }
}

#[cfg(test)]
mod documented;
#[cfg(test)]
mod tests;
