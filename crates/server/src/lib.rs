//! Attune's reference server: the HTTP shell around `attune-core`, its
//! configuration, credential store and logging.
//!
//! `main.rs` only parses arguments; everything it runs lives here so tests can
//! drive the same code: [`server::run`] serves a bound listener until a
//! shutdown future resolves, [`commands`] holds what each subcommand does.
#![deny(missing_docs)]

pub mod auth;
pub mod commands;
pub mod config;
pub mod http_error;
pub mod ids;
pub mod keys;
pub mod logging;
pub mod redact;
pub mod routes;
pub mod server;
pub mod store;

pub use auth::{authenticate, Principal};
pub use config::{Config, ConfigError, ConfigLayer};
pub use http_error::{error_response, HttpError};
pub use ids::CorrelationId;
pub use keys::{ApiKey, KeyHash, Scope, UnknownScope};
pub use server::{run, spawn, ServerHandle};
pub use store::{
    Account, AccountLimits, CreatedKey, KeyRecord, KeyStatus, KeyStore, SqliteStore, StoreError,
};
