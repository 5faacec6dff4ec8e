//! Server configuration: defaults, then an optional TOML file, then `ATTUNE_*`
//! environment variables, then command-line flags, each layer overriding the
//! one before.
//!
//! | TOML key / variable suffix | default |
//! |---|---|
//! | `bind` / `ATTUNE_BIND` | `127.0.0.1:8080` |
//! | `base_url` / `ATTUNE_BASE_URL` | `http://{bind}` |
//! | `ws_base_url` / `ATTUNE_WS_BASE_URL` | `base_url` with `http` -> `ws`, `https` -> `wss` |
//! | `docs_url` / `ATTUNE_DOCS_URL` | `{base_url}/docs` |
//! | `store_path` / `ATTUNE_STORE_PATH` | `./attune-data/attune.sqlite3` |
//! | `store_url` / `ATTUNE_STORE_URL` | none: the SQLite file; `postgres://...` shares a PostgreSQL store between instances |
//! | `store_lease_seconds` / `ATTUNE_STORE_LEASE_SECONDS` | `30`: how long a killed instance's running jobs stay `running` on a shared store |
//! | `max_connections` / `ATTUNE_MAX_CONNECTIONS` | `1024`: connections served at once; more wait in the listen backlog |
//! | `max_connections_per_ip` / `ATTUNE_MAX_CONNECTIONS_PER_IP` | `0` (no limit): connections one client address may hold; more are answered `503` `ih1002` and closed |
//! | `header_read_timeout_seconds` / `ATTUNE_HEADER_READ_TIMEOUT_SECONDS` | `30`: a request head not complete by then closes the connection |
//! | `body_read_timeout_seconds` / `ATTUNE_BODY_READ_TIMEOUT_SECONDS` | `300`: a request body not complete by then is answered `408` |
//! | `analysis_threads` / `ATTUNE_ANALYSIS_THREADS` | the number of CPUs: the one analysis executor's threads, shared by uploads and streams (see `crate::executor`); the older names `workers`/`ATTUNE_WORKERS` and `stream_analysis_threads`/`ATTUNE_STREAM_ANALYSIS_THREADS` are read when it is unset |
//! | `max_jobs` / `ATTUNE_MAX_JOBS` | `64` (at least the uploads that may run at once) |
//! | `max_media_duration_seconds` / `ATTUNE_MAX_MEDIA_DURATION_SECONDS` | `1800` |
//! | `max_upload_bytes` / `ATTUNE_MAX_UPLOAD_BYTES` | `33554432` |
//! | `shutdown_grace_seconds` / `ATTUNE_SHUTDOWN_GRACE_SECONDS` | `30` |
//! | `stream_idle_timeout_seconds` / `ATTUNE_STREAM_IDLE_TIMEOUT_SECONDS` | `300` |
//! | `stream_max_duration_seconds` / `ATTUNE_STREAM_MAX_DURATION_SECONDS` | `3600` |
//! | `stream_drain_seconds` / `ATTUNE_STREAM_DRAIN_SECONDS` | `30` |
//! | `stream_shutdown_notice_seconds` / `ATTUNE_STREAM_SHUTDOWN_NOTICE_SECONDS` | `300` |
//! | `stream_time_scale` / `ATTUNE_STREAM_TIME_SCALE` | `1` |
//! | `stream_max_lag_ms` / `ATTUNE_STREAM_MAX_LAG_MS` | `2000` |
//! | `stream_max_queued_bytes` / `ATTUNE_STREAM_MAX_QUEUED_BYTES` | `50331648` (48 MiB) |
//! | `stream_max_backlog_bytes` / `ATTUNE_STREAM_MAX_BACKLOG_BYTES` | `100663296` (96 MiB) |
//! | `stream_max_message_bytes` / `ATTUNE_STREAM_MAX_MESSAGE_BYTES` | `67108864` (64 MiB) |
//! | `stream_write_timeout_seconds` / `ATTUNE_STREAM_WRITE_TIMEOUT_SECONDS` | `30`: a stream client that reads nothing for this long is disconnected |
//! | `stream_models` / `ATTUNE_STREAM_MODELS` | `inter-2,inter-2-audio` |
//! | `recommender.url` / `ATTUNE_RECOMMENDER_URL` | none: the embedded recommender alone |
//! | `recommender.model` / `ATTUNE_RECOMMENDER_MODEL` | none (required with `url`) |
//! | `recommender.api_key_env` / `ATTUNE_RECOMMENDER_API_KEY_ENV` | none |
//! | `recommender.api_key` / `ATTUNE_RECOMMENDER_API_KEY` | none |
//! | `recommender.timeout_ms` / `ATTUNE_RECOMMENDER_TIMEOUT_MS` | `3000` |
//! | `demo_api_key` / `ATTUNE_DEMO_API_KEY` | none: `/demo` explains how to enable it |
//!
//! Other `ATTUNE_*` variables (such as `ATTUNE_LOG`) are not configuration
//! keys and are ignored here; an unknown key in the file is an error, so a
//! typo does not silently leave a default in place.

use crate::recommend_backend::RecommenderConfig;
use serde::Deserialize;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// One layer of settings (defaults, file, environment or flags): every field
/// optional, later layers overriding earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    /// See [`Config::bind`].
    pub bind: Option<SocketAddr>,
    /// See [`Config::base_url`].
    pub base_url: Option<String>,
    /// See [`Config::ws_base_url`].
    pub ws_base_url: Option<String>,
    /// See [`Config::docs_url`].
    pub docs_url: Option<String>,
    /// See [`Config::store_path`].
    pub store_path: Option<PathBuf>,
    /// See [`Config::store_url`].
    pub store_url: Option<StoreUrl>,
    /// See [`Config::store_lease`], in seconds.
    pub store_lease_seconds: Option<u64>,
    /// See [`Config::max_connections`].
    pub max_connections: Option<usize>,
    /// See [`Config::max_connections_per_ip`].
    pub max_connections_per_ip: Option<usize>,
    /// See [`Config::header_read_timeout`], in seconds.
    pub header_read_timeout_seconds: Option<u64>,
    /// See [`Config::body_read_timeout`], in seconds.
    pub body_read_timeout_seconds: Option<u64>,
    /// See [`Config::analysis_threads`].
    pub analysis_threads: Option<usize>,
    /// The older name of `analysis_threads` (the upload workers), read when
    /// `analysis_threads` is unset.
    pub workers: Option<usize>,
    /// See [`Config::max_jobs`].
    pub max_jobs: Option<usize>,
    /// See [`Config::max_media_duration`], in seconds.
    pub max_media_duration_seconds: Option<u64>,
    /// See [`Config::max_upload_bytes`].
    pub max_upload_bytes: Option<u64>,
    /// See [`Config::shutdown_grace`], in seconds.
    pub shutdown_grace_seconds: Option<u64>,
    /// See [`Config::stream_idle_timeout_seconds`].
    pub stream_idle_timeout_seconds: Option<u64>,
    /// See [`Config::stream_max_duration_seconds`].
    pub stream_max_duration_seconds: Option<u64>,
    /// See [`Config::stream_drain_seconds`].
    pub stream_drain_seconds: Option<u64>,
    /// See [`Config::stream_shutdown_notice_seconds`].
    pub stream_shutdown_notice_seconds: Option<u64>,
    /// The older name of `analysis_threads` for the stream threads, read
    /// when neither `analysis_threads` nor `workers` is set.
    pub stream_analysis_threads: Option<usize>,
    /// See [`Config::stream_time_scale`].
    pub stream_time_scale: Option<u32>,
    /// See [`Config::stream_max_lag_ms`].
    pub stream_max_lag_ms: Option<u64>,
    /// See [`Config::stream_max_queued_bytes`].
    pub stream_max_queued_bytes: Option<u64>,
    /// See [`Config::stream_max_backlog_bytes`].
    pub stream_max_backlog_bytes: Option<u64>,
    /// See [`Config::stream_max_message_bytes`].
    pub stream_max_message_bytes: Option<u64>,
    /// See [`Config::stream_write_timeout`], in seconds.
    pub stream_write_timeout_seconds: Option<u64>,
    /// See [`Config::stream_models`].
    pub stream_models: Option<Vec<String>>,
    /// The `[recommender]` table: the optional realtime recommendation backend.
    #[serde(default)]
    pub recommender: RecommenderConfig,
    /// See [`Config::demo_api_key`].
    pub demo_api_key: Option<DemoApiKey>,
}

/// The demo's API key as configured (`demo_api_key`). It only ever leaves the
/// process as a hash lookup: `Debug` prints a placeholder, so a logged
/// configuration does not carry it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct DemoApiKey(String);

impl DemoApiKey {
    /// The key, for the one place that authenticates with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for DemoApiKey {
    fn from(key: String) -> DemoApiKey {
        DemoApiKey(key)
    }
}

impl std::fmt::Debug for DemoApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::redact::REDACTED)
    }
}

/// A PostgreSQL store URL as configured (`store_url`). It may carry a
/// password, so `Debug` prints a placeholder.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// The URL, for the one place that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for StoreUrl {
    fn from(url: String) -> StoreUrl {
        StoreUrl(url)
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::redact::REDACTED)
    }
}

fn store_url(url: Option<StoreUrl>) -> Result<Option<StoreUrl>, ConfigError> {
    match url {
        Some(url) if !crate::store::is_postgres_url(url.expose()) => Err(ConfigError::Invalid(
            "store_url must be a PostgreSQL URL (`postgres://user:password@host:port/db`)".into(),
        )),
        other => Ok(other),
    }
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

const ENV_PREFIX: &str = "ATTUNE_";

impl ConfigLayer {
    /// Parses the TOML text of a configuration file.
    pub fn from_toml(text: &str) -> Result<ConfigLayer, toml::de::Error> {
        toml::from_str(text)
    }

    /// Reads and parses a configuration file.
    pub fn from_file(path: &Path) -> Result<ConfigLayer, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        ConfigLayer::from_toml(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }

    /// The settings among `vars` (name, value pairs): `ATTUNE_` followed by a
    /// key in upper case. Taking the pairs as an argument keeps tests away
    /// from the process environment, which is shared between threads.
    pub fn from_env(
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<ConfigLayer, ConfigError> {
        let mut layer = ConfigLayer::default();
        for (name, value) in vars {
            let Some(key) = name.to_str().and_then(|n| n.strip_prefix(ENV_PREFIX)) else {
                continue;
            };
            let name = format!("{ENV_PREFIX}{key}");
            let Some(value) = value.to_str() else {
                return Err(ConfigError::Env {
                    name,
                    reason: "not valid UTF-8".into(),
                });
            };
            let value = value.trim();
            match key {
                "BIND" => layer.bind = Some(parse(&name, value)?),
                "BASE_URL" => layer.base_url = Some(value.to_owned()),
                "WS_BASE_URL" => layer.ws_base_url = Some(value.to_owned()),
                "DOCS_URL" => layer.docs_url = Some(value.to_owned()),
                "STORE_PATH" => layer.store_path = Some(PathBuf::from(value)),
                "STORE_URL" => layer.store_url = Some(StoreUrl(value.to_owned())),
                "MAX_CONNECTIONS" => layer.max_connections = Some(parse(&name, value)?),
                "MAX_CONNECTIONS_PER_IP" => {
                    layer.max_connections_per_ip = Some(parse(&name, value)?)
                }
                "HEADER_READ_TIMEOUT_SECONDS" => {
                    layer.header_read_timeout_seconds = Some(parse(&name, value)?)
                }
                "BODY_READ_TIMEOUT_SECONDS" => {
                    layer.body_read_timeout_seconds = Some(parse(&name, value)?)
                }
                "STREAM_WRITE_TIMEOUT_SECONDS" => {
                    layer.stream_write_timeout_seconds = Some(parse(&name, value)?)
                }
                "ANALYSIS_THREADS" => layer.analysis_threads = Some(parse(&name, value)?),
                "WORKERS" => layer.workers = Some(parse(&name, value)?),
                "MAX_JOBS" => layer.max_jobs = Some(parse(&name, value)?),
                "MAX_MEDIA_DURATION_SECONDS" => {
                    layer.max_media_duration_seconds = Some(parse(&name, value)?)
                }
                "MAX_UPLOAD_BYTES" => layer.max_upload_bytes = Some(parse(&name, value)?),
                "STORE_LEASE_SECONDS" => layer.store_lease_seconds = Some(parse(&name, value)?),
                "SHUTDOWN_GRACE_SECONDS" => {
                    layer.shutdown_grace_seconds = Some(parse(&name, value)?)
                }
                "STREAM_IDLE_TIMEOUT_SECONDS" => {
                    layer.stream_idle_timeout_seconds = Some(parse(&name, value)?)
                }
                "STREAM_MAX_DURATION_SECONDS" => {
                    layer.stream_max_duration_seconds = Some(parse(&name, value)?)
                }
                "STREAM_DRAIN_SECONDS" => layer.stream_drain_seconds = Some(parse(&name, value)?),
                "STREAM_SHUTDOWN_NOTICE_SECONDS" => {
                    layer.stream_shutdown_notice_seconds = Some(parse(&name, value)?)
                }
                "STREAM_ANALYSIS_THREADS" => {
                    layer.stream_analysis_threads = Some(parse(&name, value)?)
                }
                "STREAM_TIME_SCALE" => layer.stream_time_scale = Some(parse(&name, value)?),
                "STREAM_MAX_LAG_MS" => layer.stream_max_lag_ms = Some(parse(&name, value)?),
                "STREAM_MAX_QUEUED_BYTES" => {
                    layer.stream_max_queued_bytes = Some(parse(&name, value)?)
                }
                "STREAM_MAX_BACKLOG_BYTES" => {
                    layer.stream_max_backlog_bytes = Some(parse(&name, value)?)
                }
                "STREAM_MAX_MESSAGE_BYTES" => {
                    layer.stream_max_message_bytes = Some(parse(&name, value)?)
                }
                "DEMO_API_KEY" => layer.demo_api_key = Some(DemoApiKey(value.to_owned())),
                "STREAM_MODELS" => {
                    layer.stream_models = Some(
                        value
                            .split(',')
                            .map(|m| m.trim().to_owned())
                            .filter(|m| !m.is_empty())
                            .collect(),
                    )
                }
                other => {
                    layer
                        .recommender
                        .set_env(other, value)
                        .map_err(|reason| ConfigError::Env {
                            name: name.clone(),
                            reason,
                        })?;
                }
            }
        }
        Ok(layer)
    }

    /// This layer with every setting of `over` put on top.
    pub fn overlay(self, over: ConfigLayer) -> ConfigLayer {
        ConfigLayer {
            bind: over.bind.or(self.bind),
            base_url: over.base_url.or(self.base_url),
            ws_base_url: over.ws_base_url.or(self.ws_base_url),
            docs_url: over.docs_url.or(self.docs_url),
            store_path: over.store_path.or(self.store_path),
            store_url: over.store_url.or(self.store_url),
            max_connections: over.max_connections.or(self.max_connections),
            max_connections_per_ip: over.max_connections_per_ip.or(self.max_connections_per_ip),
            header_read_timeout_seconds: over
                .header_read_timeout_seconds
                .or(self.header_read_timeout_seconds),
            body_read_timeout_seconds: over
                .body_read_timeout_seconds
                .or(self.body_read_timeout_seconds),
            stream_write_timeout_seconds: over
                .stream_write_timeout_seconds
                .or(self.stream_write_timeout_seconds),
            analysis_threads: over.analysis_threads.or(self.analysis_threads),
            workers: over.workers.or(self.workers),
            max_jobs: over.max_jobs.or(self.max_jobs),
            max_media_duration_seconds: over
                .max_media_duration_seconds
                .or(self.max_media_duration_seconds),
            max_upload_bytes: over.max_upload_bytes.or(self.max_upload_bytes),
            shutdown_grace_seconds: over.shutdown_grace_seconds.or(self.shutdown_grace_seconds),
            store_lease_seconds: over.store_lease_seconds.or(self.store_lease_seconds),
            stream_idle_timeout_seconds: over
                .stream_idle_timeout_seconds
                .or(self.stream_idle_timeout_seconds),
            stream_max_duration_seconds: over
                .stream_max_duration_seconds
                .or(self.stream_max_duration_seconds),
            stream_drain_seconds: over.stream_drain_seconds.or(self.stream_drain_seconds),
            stream_shutdown_notice_seconds: over
                .stream_shutdown_notice_seconds
                .or(self.stream_shutdown_notice_seconds),
            stream_analysis_threads: over
                .stream_analysis_threads
                .or(self.stream_analysis_threads),
            stream_time_scale: over.stream_time_scale.or(self.stream_time_scale),
            stream_max_lag_ms: over.stream_max_lag_ms.or(self.stream_max_lag_ms),
            stream_max_queued_bytes: over
                .stream_max_queued_bytes
                .or(self.stream_max_queued_bytes),
            stream_max_backlog_bytes: over
                .stream_max_backlog_bytes
                .or(self.stream_max_backlog_bytes),
            stream_max_message_bytes: over
                .stream_max_message_bytes
                .or(self.stream_max_message_bytes),
            stream_models: over.stream_models.or(self.stream_models),
            recommender: self.recommender.overlay(over.recommender),
            demo_api_key: over.demo_api_key.or(self.demo_api_key),
        }
    }
}

fn parse<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e: T::Err| ConfigError::Env {
        name: name.to_owned(),
        reason: format!("`{value}`: {e}"),
    })
}

fn check_url(key: &str, url: &str, schemes: &[&str]) -> Result<String, ConfigError> {
    let url = url.trim().trim_end_matches('/');
    let has_host = schemes.iter().any(|scheme| {
        url.strip_prefix(scheme)
            .and_then(|rest| rest.strip_prefix("://"))
            .is_some_and(|rest| !rest.is_empty())
    });
    if has_host {
        Ok(url.to_owned())
    } else {
        Err(ConfigError::Invalid(format!(
            "{key} `{url}` must be an absolute {} URL",
            schemes.join(" or ")
        )))
    }
}

/// The stream models setting, checked: each a model this server can analyze.
fn stream_models(models: Option<Vec<String>>) -> Result<Vec<String>, ConfigError> {
    let Some(models) = models else {
        return Ok(attune_core::wire::Model::SERVED
            .iter()
            .map(ToString::to_string)
            .collect());
    };
    for model in &models {
        let served = attune_core::wire::Model::parse(model)
            .is_some_and(|m| attune_core::wire::Model::SERVED.contains(&m));
        if !served {
            return Err(ConfigError::Invalid(format!(
                "stream_models: `{model}` is not a model this server analyzes (inter-2, inter-2-audio)"
            )));
        }
    }
    Ok(models)
}

/// The demo key setting, checked: empty means unset (so an exported but empty
/// variable disables the demo), anything else must have an API key's shape,
/// which a client token (`att_`) or a pasted placeholder does not.
fn demo_api_key(key: Option<DemoApiKey>) -> Result<Option<DemoApiKey>, ConfigError> {
    let Some(DemoApiKey(key)) = key else {
        return Ok(None);
    };
    let key = key.trim();
    if key.is_empty() {
        return Ok(None);
    }
    if !crate::keys::ApiKey::is_well_formed(key) {
        return Err(ConfigError::Invalid(
            "demo_api_key must be an API key (`atk_` and 64 hex digits, as `attune keys create` \
             prints it)"
                .into(),
        ));
    }
    Ok(Some(DemoApiKey(key.to_owned())))
}

fn at_least_one<T: PartialOrd + From<u8>>(key: &str, value: T) -> Result<T, ConfigError> {
    if value >= T::from(1) {
        Ok(value)
    } else {
        Err(ConfigError::Invalid(format!("{key} must be at least 1")))
    }
}

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

    /// How stream sessions run on this configuration.
    pub fn stream_settings(&self) -> crate::streams::StreamSettings {
        let defaults = crate::streams::StreamSettings::default();
        let mut limits = defaults.limits.clone();
        limits.idle_timeout_seconds = self.stream_idle_timeout_seconds;
        limits.max_duration_seconds = self.stream_max_duration_seconds;
        limits.max_drain_seconds = self.stream_drain_seconds;
        crate::streams::StreamSettings {
            limits,
            docs_url: self.docs_url.clone(),
            time_scale: f64::from(self.stream_time_scale),
            shutdown_notice_seconds: self.stream_shutdown_notice_seconds as f64,
            max_lag: Duration::from_millis(self.stream_max_lag_ms),
            max_queued_bytes: self.stream_max_queued_bytes,
            max_backlog_bytes: self.stream_max_backlog_bytes,
            max_message_bytes: usize::try_from(self.stream_max_message_bytes)
                .unwrap_or(usize::MAX),
            write_timeout: self.stream_write_timeout,
            recommender: self.recommendation_service().unwrap_or_else(|error| {
                tracing::error!(%error, "recommender backend unusable: the embedded recommender writes realtime recommendations");
                crate::recommend_backend::RecommendationService::embedded()
            }),
            models: self
                .stream_models
                .iter()
                .filter_map(|m| attune_core::wire::Model::parse(m))
                .collect(),
            ..defaults
        }
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
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn urls_derived_from_port_0_name_the_port_given() {
        let any_port = |layer: ConfigLayer| {
            Config::from_layer(ConfigLayer {
                bind: Some("127.0.0.1:0".parse().unwrap()),
                ..layer
            })
            .unwrap()
        };
        let given: SocketAddr = "127.0.0.1:40123".parse().unwrap();
        let config = any_port(ConfigLayer::default()).bound_to(given);
        assert_eq!(config.bind, given);
        assert_eq!(config.base_url, "http://127.0.0.1:40123");
        assert_eq!(config.ws_base_url, "ws://127.0.0.1:40123");
        assert_eq!(config.docs_url, "http://127.0.0.1:40123/docs");
        // What an operator wrote stays as written.
        let config = any_port(ConfigLayer {
            base_url: Some("https://api.example.com".into()),
            docs_url: Some("https://docs.example.com".into()),
            ..ConfigLayer::default()
        })
        .bound_to(given);
        assert_eq!(config.base_url, "https://api.example.com");
        assert_eq!(config.ws_base_url, "wss://api.example.com");
        assert_eq!(config.docs_url, "https://docs.example.com");
        // A fixed port is what it says.
        let fixed = Config::default();
        assert_eq!(fixed.clone().bound_to(given).base_url, fixed.base_url);
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let config = Config::default();
        assert_eq!(config.bind, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(config.base_url, "http://127.0.0.1:8080");
        assert_eq!(config.ws_base_url, "ws://127.0.0.1:8080");
        assert_eq!(config.docs_url, "http://127.0.0.1:8080/docs");
        assert_eq!(
            config.store_path,
            PathBuf::from("./attune-data/attune.sqlite3")
        );
        assert_eq!(config.max_connections, 1024);
        assert!(config.analysis_threads >= 1);
        assert_eq!(config.max_jobs, 64.max(config.analysis_threads));
        assert_eq!(config.max_media_duration, Duration::from_secs(1800));
        assert_eq!(config.max_upload_bytes, 33_554_432);
        assert_eq!(config.shutdown_grace, Duration::from_secs(30));
        assert_eq!(config.max_connections_per_ip, 0);
        assert_eq!(config.header_read_timeout, Duration::from_secs(30));
        assert_eq!(config.body_read_timeout, Duration::from_secs(300));
        assert_eq!(config.stream_write_timeout, Duration::from_secs(30));
    }

    #[test]
    fn connection_limits_and_timeouts_come_from_the_environment_and_refuse_zero() {
        let config = Config::load(
            None,
            env(&[
                ("ATTUNE_MAX_CONNECTIONS_PER_IP", "16"),
                ("ATTUNE_HEADER_READ_TIMEOUT_SECONDS", "5"),
                ("ATTUNE_BODY_READ_TIMEOUT_SECONDS", "60"),
                ("ATTUNE_STREAM_WRITE_TIMEOUT_SECONDS", "10"),
            ]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(config.max_connections_per_ip, 16);
        assert_eq!(config.header_read_timeout, Duration::from_secs(5));
        assert_eq!(config.body_read_timeout, Duration::from_secs(60));
        assert_eq!(config.stream_write_timeout, Duration::from_secs(10));
        assert_eq!(
            config.stream_settings().write_timeout,
            Duration::from_secs(10)
        );
        // A zero timeout would cut every request: refused, not taken as "off".
        for name in [
            "ATTUNE_HEADER_READ_TIMEOUT_SECONDS",
            "ATTUNE_BODY_READ_TIMEOUT_SECONDS",
            "ATTUNE_STREAM_WRITE_TIMEOUT_SECONDS",
        ] {
            assert!(
                Config::load(None, env(&[(name, "0")]), ConfigLayer::default()).is_err(),
                "{name}=0"
            );
        }
    }

    #[test]
    fn env_overrides_file_and_flags_override_env() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("attune.toml");
        std::fs::write(
            &file,
            r#"
            bind = "0.0.0.0:9000"
            docs_url = "https://docs.example.com/"
            workers = 3
            max_upload_bytes = 1000
            store_path = "/var/lib/attune/file.sqlite3"
            "#,
        )
        .unwrap();
        let config = Config::load(
            Some(&file),
            env(&[
                ("ATTUNE_WORKERS", "5"),
                ("ATTUNE_STORE_PATH", "/tmp/env.sqlite3"),
                ("ATTUNE_LOG", "debug"),
                ("OTHER_WORKERS", "9"),
            ]),
            ConfigLayer {
                store_path: Some("/tmp/flag.sqlite3".into()),
                ..ConfigLayer::default()
            },
        )
        .unwrap();
        // File only.
        assert_eq!(config.bind, "0.0.0.0:9000".parse().unwrap());
        assert_eq!(config.docs_url, "https://docs.example.com");
        assert_eq!(config.max_upload_bytes, 1000);
        // Env over file.
        assert_eq!(config.analysis_threads, 5);
        // Flag over env over file.
        assert_eq!(config.store_path, PathBuf::from("/tmp/flag.sqlite3"));
        // Untouched defaults, and URLs derived from the bind address.
        assert_eq!(config.shutdown_grace, Duration::from_secs(30));
        assert_eq!(config.base_url, "http://0.0.0.0:9000");
    }

    #[test]
    fn websocket_url_follows_the_https_base_url() {
        let config = Config::load(
            None,
            env(&[("ATTUNE_BASE_URL", "https://api.example.com/")]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(config.base_url, "https://api.example.com");
        assert_eq!(config.ws_base_url, "wss://api.example.com");
        assert_eq!(config.docs_url, "https://api.example.com/docs");
    }

    #[test]
    fn bad_values_name_their_source() {
        let error = Config::load(
            None,
            env(&[("ATTUNE_MAX_CONNECTIONS", "lots")]),
            ConfigLayer::default(),
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("ATTUNE_MAX_CONNECTIONS"),
            "{error}"
        );

        let error = ConfigLayer::from_toml("max_conections = 3").unwrap_err();
        assert!(error.to_string().contains("max_conections"), "{error}");

        let error = Config::load(
            None,
            env(&[("ATTUNE_WORKERS", "0")]),
            ConfigLayer::default(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("workers"), "{error}");

        // One executor size: the new name wins over the older ones, which still work.
        let config = Config::load(
            None,
            env(&[
                ("ATTUNE_ANALYSIS_THREADS", "3"),
                ("ATTUNE_WORKERS", "5"),
                ("ATTUNE_STREAM_ANALYSIS_THREADS", "7"),
            ]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(config.analysis_threads, 3);
        let config = Config::load(
            None,
            env(&[("ATTUNE_STREAM_ANALYSIS_THREADS", "7")]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(config.analysis_threads, 7);

        let error = Config::load(
            None,
            env(&[("ATTUNE_DOCS_URL", "docs.example.com")]),
            ConfigLayer::default(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("docs_url"), "{error}");
    }

    #[test]
    fn the_demo_key_is_read_checked_and_never_printed() {
        let key = crate::keys::ApiKey::generate();
        let config = Config::load(
            None,
            env(&[("ATTUNE_DEMO_API_KEY", &format!(" {} ", key.expose()))]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(
            config.demo_api_key.as_ref().map(DemoApiKey::expose),
            Some(key.expose())
        );
        assert!(!format!("{config:?}").contains(key.expose()));
        assert_eq!(Config::default().demo_api_key, None);

        let file = ConfigLayer::from_toml(&format!("demo_api_key = \"{}\"", key.expose())).unwrap();
        let config = Config::from_layer(file).unwrap();
        assert!(config.demo_api_key.is_some());

        // An exported but empty variable leaves the demo off.
        let config = Config::load(
            None,
            env(&[("ATTUNE_DEMO_API_KEY", "")]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(config.demo_api_key, None);
        // A client token is not a key, and the error does not repeat what was given.
        let token = crate::tokens::ClientToken::generate();
        let error = Config::load(
            None,
            env(&[("ATTUNE_DEMO_API_KEY", token.expose())]),
            ConfigLayer::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("demo_api_key"), "{error}");
        assert!(!error.contains(token.expose()), "{error}");
    }

    #[test]
    fn a_store_url_must_be_postgres_and_is_never_printed() {
        let file = ConfigLayer::from_toml(
            "store_url = \"postgres://attune:hunter2@db.internal:5432/attune\"",
        )
        .unwrap();
        let config = Config::from_layer(file).unwrap();
        let url = config.store_url.as_ref().unwrap();
        assert_eq!(
            url.expose(),
            "postgres://attune:hunter2@db.internal:5432/attune"
        );
        assert!(!format!("{config:?}").contains("hunter2"));
        let file = ConfigLayer::from_toml("store_url = \"mysql://x@y/z\"").unwrap();
        let error = Config::from_layer(file).unwrap_err().to_string();
        assert!(error.contains("store_url"), "{error}");
        assert_eq!(Config::default().store_url, None);
    }

    #[test]
    fn the_store_lease_is_configurable_and_never_zero() {
        assert_eq!(Config::default().store_lease, Duration::from_secs(30));
        let config = Config::load(
            None,
            env(&[("ATTUNE_STORE_LEASE_SECONDS", "2")]),
            ConfigLayer::default(),
        )
        .unwrap();
        assert_eq!(config.store_lease, Duration::from_secs(2));
        let file = ConfigLayer::from_toml("store_lease_seconds = 0").unwrap();
        let error = Config::from_layer(file).unwrap_err().to_string();
        assert!(error.contains("store_lease_seconds"), "{error}");
    }
}
