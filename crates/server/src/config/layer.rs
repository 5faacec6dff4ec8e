//! One layer of configuration (a TOML file, the environment or flags) and
//! how layers are read and stacked.

use super::values::{DemoApiKey, StoreUrl};
use super::ConfigError;
use crate::recommend_backend::RecommenderConfig;
use serde::Deserialize;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// One layer of settings (defaults, file, environment or flags): every field
/// optional, later layers overriding earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    /// See [`Config::bind`](super::Config::bind).
    pub bind: Option<SocketAddr>,
    /// See [`Config::base_url`](super::Config::base_url).
    pub base_url: Option<String>,
    /// See [`Config::ws_base_url`](super::Config::ws_base_url).
    pub ws_base_url: Option<String>,
    /// See [`Config::docs_url`](super::Config::docs_url).
    pub docs_url: Option<String>,
    /// See [`Config::store_path`](super::Config::store_path).
    pub store_path: Option<PathBuf>,
    /// See [`Config::store_url`](super::Config::store_url).
    pub store_url: Option<StoreUrl>,
    /// See [`Config::store_lease`](super::Config::store_lease), in seconds.
    pub store_lease_seconds: Option<u64>,
    /// See [`Config::max_connections`](super::Config::max_connections).
    pub max_connections: Option<usize>,
    /// See [`Config::max_connections_per_ip`](super::Config::max_connections_per_ip).
    pub max_connections_per_ip: Option<usize>,
    /// See [`Config::header_read_timeout`](super::Config::header_read_timeout), in seconds.
    pub header_read_timeout_seconds: Option<u64>,
    /// See [`Config::body_read_timeout`](super::Config::body_read_timeout), in seconds.
    pub body_read_timeout_seconds: Option<u64>,
    /// See [`Config::analysis_threads`](super::Config::analysis_threads).
    pub analysis_threads: Option<usize>,
    /// The older name of `analysis_threads` (the upload workers), read when
    /// `analysis_threads` is unset.
    pub workers: Option<usize>,
    /// See [`Config::max_jobs`](super::Config::max_jobs).
    pub max_jobs: Option<usize>,
    /// See [`Config::max_media_duration`](super::Config::max_media_duration), in seconds.
    pub max_media_duration_seconds: Option<u64>,
    /// See [`Config::max_upload_bytes`](super::Config::max_upload_bytes).
    pub max_upload_bytes: Option<u64>,
    /// See [`Config::shutdown_grace`](super::Config::shutdown_grace), in seconds.
    pub shutdown_grace_seconds: Option<u64>,
    /// See [`Config::stream_idle_timeout_seconds`](super::Config::stream_idle_timeout_seconds).
    pub stream_idle_timeout_seconds: Option<u64>,
    /// See [`Config::stream_max_duration_seconds`](super::Config::stream_max_duration_seconds).
    pub stream_max_duration_seconds: Option<u64>,
    /// See [`Config::stream_drain_seconds`](super::Config::stream_drain_seconds).
    pub stream_drain_seconds: Option<u64>,
    /// See [`Config::stream_shutdown_notice_seconds`](super::Config::stream_shutdown_notice_seconds).
    pub stream_shutdown_notice_seconds: Option<u64>,
    /// The older name of `analysis_threads` for the stream threads, read
    /// when neither `analysis_threads` nor `workers` is set.
    pub stream_analysis_threads: Option<usize>,
    /// See [`Config::stream_time_scale`](super::Config::stream_time_scale).
    pub stream_time_scale: Option<u32>,
    /// See [`Config::stream_max_lag_ms`](super::Config::stream_max_lag_ms).
    pub stream_max_lag_ms: Option<u64>,
    /// See [`Config::stream_max_queued_bytes`](super::Config::stream_max_queued_bytes).
    pub stream_max_queued_bytes: Option<u64>,
    /// See [`Config::stream_max_backlog_bytes`](super::Config::stream_max_backlog_bytes).
    pub stream_max_backlog_bytes: Option<u64>,
    /// See [`Config::stream_max_message_bytes`](super::Config::stream_max_message_bytes).
    pub stream_max_message_bytes: Option<u64>,
    /// See [`Config::stream_write_timeout`](super::Config::stream_write_timeout), in seconds.
    pub stream_write_timeout_seconds: Option<u64>,
    /// See [`Config::stream_models`](super::Config::stream_models).
    pub stream_models: Option<Vec<String>>,
    /// See [`Config::realtime_transcribe`](super::Config::realtime_transcribe).
    pub realtime_transcribe: Option<bool>,
    /// See [`Config::stream_transcribe`](super::Config::stream_transcribe).
    pub stream_transcribe: Option<bool>,
    /// See [`Config::warm_up`](super::Config::warm_up).
    pub warm_up: Option<bool>,
    /// The `[recommender]` table: the optional realtime recommendation backend.
    #[serde(default)]
    pub recommender: RecommenderConfig,
    /// See [`Config::demo_api_key`](super::Config::demo_api_key).
    pub demo_api_key: Option<DemoApiKey>,
}

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
                "REALTIME_TRANSCRIBE" => layer.realtime_transcribe = Some(parse(&name, value)?),
                "STREAM_TRANSCRIBE" => layer.stream_transcribe = Some(parse(&name, value)?),
                "WARM_UP" => layer.warm_up = Some(parse(&name, value)?),
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
            realtime_transcribe: over.realtime_transcribe.or(self.realtime_transcribe),
            stream_transcribe: over.stream_transcribe.or(self.stream_transcribe),
            warm_up: over.warm_up.or(self.warm_up),
            recommender: self.recommender.overlay(over.recommender),
            demo_api_key: over.demo_api_key.or(self.demo_api_key),
        }
    }
}

pub(super) fn parse<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e: T::Err| ConfigError::Env {
        name: name.to_owned(),
        reason: format!("`{value}`: {e}"),
    })
}
