//! Attune's reference server: the HTTP shell around `attune-core`, its
//! configuration, credential store and logging.
//!
//! `main.rs` only parses arguments; everything it runs lives here so tests can
//! drive the same code: [`server::run`] serves a bound listener until a
//! shutdown future resolves, [`commands`] holds what each subcommand does.
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
