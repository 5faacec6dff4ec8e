//! What the `attune` subcommands do. `main.rs` parses arguments and calls
//! these, so tests drive the same code.

use crate::analyzer_runner::AnalyzerRunner;
use crate::config::Config;
use crate::jobs::JobRunner;
use crate::keys::Scope;
use crate::server;
use crate::services::Services;
use crate::store::{
    Account, AccountLimits, CreatedKey, KeyRecord, KeyStore, PgStore, PgStoreOptions, SqliteStore,
    StoreError,
};
use std::io::{self, Write};
use std::sync::Arc;
use time::format_description::well_known::Rfc3339;
use tokio::net::TcpListener;

/// The account created for the development key of a new store.
pub const DEV_ACCOUNT: &str = "dev";

/// A subcommand's failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The configuration cannot be used.
    #[error("configuration: {0}")]
    Config(String),
    /// Writing the command's output failed.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

/// The analysis this build serves uploads with: attune-core's rule analyzer,
/// in-process.
pub fn production_runner(config: &Config) -> Arc<dyn JobRunner> {
    Arc::new(AnalyzerRunner::new(config.max_media_duration))
}

/// `attune serve`: opens the store (creating a development key if it holds
/// none, printed once to `out`), binds `config.bind` and serves until ctrl-c
/// or SIGTERM.
pub async fn serve(config: Config, out: &mut (dyn Write + Send)) -> Result<(), CommandError> {
    // A configured recommendation backend that cannot be used is a startup error, not a
    // silent fallback.
    config
        .recommendation_service()
        .map_err(|e| CommandError::Config(e.to_string()))?;
    // Uploads and realtime sessions would carry no words: say so now, not never.
    if let Some(why) = attune_core::transcript::model_missing() {
        tracing::warn!("no speech recognition: {why}");
    }
    // The networks load beside the store's opening rather than in the first sessions' windows
    // (`attune_core::warm`); a session that needs one before it is ready waits for it.
    if config.warm_up {
        std::thread::Builder::new()
            .name("attune-warm-up".into())
            .spawn(|| {
                let warmed = attune_core::warm_up();
                tracing::info!(
                    voices = warmed.voices,
                    faces = warmed.faces,
                    seconds = warmed.elapsed.as_secs_f64(),
                    "networks loaded"
                );
            })
            .map_err(CommandError::Output)?;
    }
    let runner = production_runner(&config);
    let (services, shared) = match &config.store_url {
        None => {
            let store = SqliteStore::open(&config.store_path).await?;
            tracing::info!(path = %store.path().display(), "store opened");
            (Services::new(store, runner), None)
        }
        Some(url) => {
            let options = PgStoreOptions {
                lease: config.store_lease,
                ..PgStoreOptions::default()
            };
            let store = PgStore::open(url.expose(), options).await?;
            tracing::info!(instance_id = store.instance_id(), "PostgreSQL store opened");
            (Services::with_store(store.clone(), runner), Some(store))
        }
    };
    if let Some(created) = bootstrap_dev_key(services.keys.as_ref()).await? {
        write_dev_key_notice(out, &created, &config.base_url)?;
    }
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|source| CommandError::Bind {
            addr: config.bind,
            source,
        })?;
    server::run(listener, config, services, server::shutdown_signal()).await;
    if let Some(store) = shared {
        // The peers fail whatever this instance leaves unfinished at their
        // next sweep instead of waiting for the lease to lapse.
        if let Err(error) = store.deregister().await {
            tracing::warn!(%error, "instance not deregistered; its lease will lapse");
        }
    }
    Ok(())
}

/// The store `attune keys`, `attune accounts` and `attune migrate` work on:
/// the PostgreSQL store when `store_url` is set, else the SQLite file.
pub enum AdminStore {
    /// The embedded file.
    Sqlite(SqliteStore),
    /// The shared store.
    Postgres(PgStore),
}

impl AdminStore {
    /// Opens (and migrates) the configured store.
    pub async fn open(config: &Config) -> Result<AdminStore, CommandError> {
        Ok(match &config.store_url {
            None => AdminStore::Sqlite(SqliteStore::open(&config.store_path).await?),
            Some(url) => {
                AdminStore::Postgres(PgStore::open(url.expose(), PgStoreOptions::default()).await?)
            }
        })
    }

    /// The store as a key store.
    pub fn keys(&self) -> &dyn KeyStore {
        match self {
            AdminStore::Sqlite(store) => store,
            AdminStore::Postgres(store) => store,
        }
    }

    /// Ends this process's registration on a shared store.
    pub async fn close(self) {
        if let AdminStore::Postgres(store) = self {
            if let Err(error) = store.deregister().await {
                tracing::warn!(%error, "instance not deregistered; its lease will lapse");
            }
        }
    }
}

/// `attune migrate`: brings the configured store's schema up to date and
/// says where it is, without serving.
pub async fn migrate(config: &Config, out: &mut dyn Write) -> Result<(), CommandError> {
    match &config.store_url {
        None => {
            let store = SqliteStore::open(&config.store_path).await?;
            writeln!(out, "store {} is up to date", store.path().display())?;
        }
        Some(url) => {
            let version = PgStore::migrate_only(url.expose()).await?;
            writeln!(out, "PostgreSQL store is at schema version {version}")?;
        }
    }
    Ok(())
}

/// Creates the `dev` account and a key with every scope when the store has
/// never held a key; answers the new key, or `None` when keys exist (revoking
/// them all does not bring a development key back).
pub async fn bootstrap_dev_key(store: &dyn KeyStore) -> Result<Option<CreatedKey>, StoreError> {
    if store.key_count().await? > 0 {
        return Ok(None);
    }
    let account = store
        .ensure_account(DEV_ACCOUNT, AccountLimits::default())
        .await?;
    let created = store.create_key(account.id, &Scope::ALL).await?;
    tracing::info!(key_id = %created.record.id, account = DEV_ACCOUNT, "development key created");
    Ok(Some(created))
}

/// Prints a new development key once, with how to use it.
pub fn write_dev_key_notice(
    out: &mut dyn Write,
    created: &CreatedKey,
    base_url: &str,
) -> io::Result<()> {
    let key = created.key.expose();
    writeln!(
        out,
        "Created a development API key for the account `{DEV_ACCOUNT}` with every scope.\n\
         It is shown only this once; only its hash is stored.\n\n    {key}\n\n\
         Send it on every request as a bearer token, for example:\n\n    \
         curl -H \"Authorization: Bearer {key}\" \\\n         \
         -F model=inter-2 -F file=@conversation.mp4 {base_url}/v2/upload/analyze\n\n\
         Manage keys with `attune keys create|list|revoke` (id {}).",
        created.record.id
    )
}

/// `attune keys create`: creates the account if needed and a key with
/// `scopes`; prints the key alone on `out` (so scripts can capture it) and
/// what it is on `notes`.
pub async fn keys_create(
    store: &dyn KeyStore,
    account: &str,
    scopes: &[Scope],
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<CreatedKey, CommandError> {
    let account = store
        .ensure_account(account, AccountLimits::default())
        .await?;
    let created = store.create_key(account.id, scopes).await?;
    writeln!(out, "{}", created.key.expose())?;
    writeln!(
        notes,
        "Created key {} for the account `{}` with scopes {}. The key above is shown only \
         this once; send it as `Authorization: Bearer <API key>`.",
        created.record.id,
        account.name,
        scope_list(&created.record.scopes)
    )?;
    Ok(created)
}

/// `attune keys list`: one line per key with its id, prefix, account, status,
/// creation time and scopes. Keys themselves are never stored, so never shown.
pub async fn keys_list(store: &dyn KeyStore, out: &mut dyn Write) -> Result<(), CommandError> {
    let keys = store.list_keys().await?;
    if keys.is_empty() {
        writeln!(out, "No API keys.")?;
        return Ok(());
    }
    write_key_table(out, &keys)?;
    Ok(())
}

/// `attune keys revoke`: revokes the key with id `key_id`.
pub async fn keys_revoke(
    store: &dyn KeyStore,
    key_id: &str,
    out: &mut dyn Write,
) -> Result<KeyRecord, CommandError> {
    let record = store.revoke_key(key_id).await?;
    writeln!(
        out,
        "Revoked key {} ({}…) of the account `{}`.",
        record.id, record.display_prefix, record.account_name
    )?;
    Ok(record)
}

/// Changes `attune accounts set` makes to an account; `None` keeps what is
/// stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccountChanges {
    /// The subscription flag (`ih3005` while inactive).
    pub subscription_active: Option<bool>,
    /// See [`AccountLimits::requests_per_minute`].
    pub requests_per_minute: Option<u32>,
    /// See [`AccountLimits::concurrent_requests`].
    pub concurrent_requests: Option<u32>,
    /// See [`AccountLimits::analysis_quota_seconds`].
    pub analysis_quota_seconds: Option<u64>,
    /// See [`AccountLimits::daily_quota_seconds`].
    pub daily_quota_seconds: Option<u64>,
}

/// `attune accounts set`: creates the account if needed (with the default
/// limits), applies `changes`, and prints the account's resulting limits.
/// Running servers read an account's limits on every request, so the change
/// applies to them at once.
pub async fn accounts_set(
    store: &dyn KeyStore,
    account: &str,
    changes: AccountChanges,
    out: &mut dyn Write,
) -> Result<Account, CommandError> {
    let current = store
        .ensure_account(account, AccountLimits::default())
        .await?;
    let limits = current.limits;
    let updated = store
        .update_account(
            current.id,
            changes
                .subscription_active
                .unwrap_or(current.subscription_active),
            AccountLimits {
                requests_per_minute: changes
                    .requests_per_minute
                    .unwrap_or(limits.requests_per_minute),
                concurrent_requests: changes
                    .concurrent_requests
                    .unwrap_or(limits.concurrent_requests),
                analysis_quota_seconds: changes
                    .analysis_quota_seconds
                    .unwrap_or(limits.analysis_quota_seconds),
                daily_quota_seconds: changes
                    .daily_quota_seconds
                    .unwrap_or(limits.daily_quota_seconds),
            },
        )
        .await?;
    let limits = updated.limits;
    writeln!(
        out,
        "Account `{}`: subscription {}, {} requests per minute, {} concurrent requests, \
         analysis quota {} s, daily quota {} s.",
        updated.name,
        if updated.subscription_active {
            "active"
        } else {
            "inactive"
        },
        limits.requests_per_minute,
        limits.concurrent_requests,
        limits.analysis_quota_seconds,
        limits.daily_quota_seconds,
    )?;
    Ok(updated)
}

fn scope_list(scopes: &[Scope]) -> String {
    if scopes.is_empty() {
        return "(none)".to_owned();
    }
    scopes
        .iter()
        .map(|scope| scope.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn write_key_table(out: &mut dyn Write, keys: &[KeyRecord]) -> io::Result<()> {
    let rows: Vec<[String; 6]> = keys
        .iter()
        .map(|key| {
            [
                key.id.clone(),
                format!("{}…", key.display_prefix),
                key.account_name.clone(),
                key.status.as_str().to_owned(),
                key.created_at
                    .format(&Rfc3339)
                    .unwrap_or_else(|_| key.created_at.unix_timestamp().to_string()),
                scope_list(&key.scopes),
            ]
        })
        .collect();
    let header = ["ID", "PREFIX", "ACCOUNT", "STATUS", "CREATED", "SCOPES"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
