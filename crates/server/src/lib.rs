//! Attune's reference server: the HTTP shell around `attune-core`, its
//! configuration, credential store and logging.
//!
//! `main.rs` only parses arguments; everything it runs lives here so tests can
//! drive the same code: [`server::run`] serves a bound listener until a
//! shutdown future resolves, [`commands`] holds what each subcommand does.
//! Running the `attune` binary and every setting: `docs/SERVER.md`.
//!
//! The server embedded in a program, on any free port, with its own store and
//! the in-process analyzer:
//!
//! ```
//! use attune_server::config::{Config, ConfigLayer};
//! use attune_server::{AnalyzerRunner, Services, SqliteStore};
//! use std::io::{Read, Write};
//! use std::sync::Arc;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("attune.sqlite3")).await?;
//! let config = Config::from_layer(ConfigLayer::from_toml("bind = \"127.0.0.1:0\"")?)?;
//! let analyzer = AnalyzerRunner::new(config.max_media_duration);
//! let server = attune_server::spawn(config, Services::new(store, Arc::new(analyzer))).await?;
//!
//! let address = server.local_addr();
//! let answer = tokio::task::spawn_blocking(move || -> std::io::Result<String> {
//!     let mut socket = std::net::TcpStream::connect(address)?;
//!     socket.write_all(b"GET /healthz HTTP/1.1\r\nHost: attune\r\nConnection: close\r\n\r\n")?;
//!     let mut answer = String::new();
//!     socket.read_to_string(&mut answer)?;
//!     Ok(answer)
//! })
//! .await??;
//! assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
//! assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");
//! server.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod analyze_batch;
pub mod analyze_cmd;
mod analyzer_runner;
mod app;
pub mod auth;
pub mod body;
mod client_tokens;
pub mod clock;
pub mod commands;
pub mod config;
mod demo;
pub mod executor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod http_error;
pub mod ids;
pub mod jobs;
pub mod keys;
pub mod limits;
pub mod linger;
pub mod logging;
pub mod metrics;
pub mod recommend_backend;
pub mod redact;
pub mod report;
pub mod routes;
pub mod server;
pub mod services;
pub mod store;
pub mod streams;
pub mod tokens;
pub mod upload_form;
mod uploads;

pub use analyzer_runner::AnalyzerRunner;
pub use auth::{authenticate, authenticate_credential, Credential, Principal, TokenGrant};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{Config, ConfigError, ConfigLayer};
pub use http_error::{error_response, HttpError};
pub use ids::CorrelationId;
pub use jobs::{
    JobInput, JobOutput, JobRunner, NoBackendRunner, UploadFile, UploadRequest, UploadRoute,
    ValidatedMedia, WorkerPool,
};
pub use keys::{ApiKey, KeyHash, Scope, UnknownScope};
pub use server::{run, spawn, ServerHandle};
pub use services::Services;
pub use store::{
    Account, AccountLimits, BudgetOutcome, ClaimedJob, CreatedKey, JobRecord, JobStore, KeyRecord,
    KeyStatus, KeyStore, NewJob, NewToken, QueuedMedia, QuotaOutcome, SpeakerTurn, SqliteStore,
    StoreError, TokenCaps, TokenRecord, TokenStore, Usage, UsageStore,
};
pub use tokens::ClientToken;
