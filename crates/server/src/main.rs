//! The `attune` command: parses arguments and hands over to the library.

use anyhow::Context;
use attune_server::analyze_batch;
use attune_server::analyze_cmd::{self, AnalyzeArgs, AnalyzeSettings, Mode, Outcome};
use attune_server::commands::AccountChanges;
use attune_server::commands::AdminStore;
use attune_server::config::{Config, ConfigLayer};
use attune_server::{commands, logging, Scope};
use clap::{CommandFactory, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// The `attune` process's allocator: jemalloc (the library leaves the choice to embedders).
/// With glibc's malloc, a server mixing stream sessions and upload analyses kept freed memory
/// resident in fragmented arenas: in a soak of 100 sessions reopened every minute plus an
/// upload every 5 s (`benches/soak.sh`, BENCHMARKS.md), its RSS grew 11 % from minute 3 to
/// minute 10 and had not levelled off; with jemalloc it held flat (-1 %) at a lower level.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Attune: conversation analysis over HTTP and WebSocket.
#[derive(Debug, Parser)]
#[command(name = "attune", version)]
struct Cli {
    /// TOML configuration file; `ATTUNE_*` environment variables override it.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (on an empty store, first creates and prints a
    /// development key).
    Serve {
        /// Address to listen on [default: 127.0.0.1:8080].
        #[arg(long, value_name = "ADDR")]
        bind: Option<SocketAddr>,
    },
    /// Create, list and revoke API keys.
    Keys {
        /// The SQLite store [default: ./attune-data/attune.sqlite3].
        #[arg(long, global = true, value_name = "PATH")]
        store: Option<PathBuf>,
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Change an account's subscription and limits.
    Accounts {
        /// The SQLite store [default: ./attune-data/attune.sqlite3].
        #[arg(long, global = true, value_name = "PATH")]
        store: Option<PathBuf>,
        #[command(subcommand)]
        command: AccountsCommand,
    },
    /// Apply the store's pending schema migrations (SQLite file, or the
    /// PostgreSQL store when `store_url` / `ATTUNE_STORE_URL` is set) and exit.
    Migrate,
    /// Analyze media files here, exactly as a v2 upload job would: one file
    /// prints a summary or the job's `result` JSON (and `--html` writes its
    /// report); several files or a directory with `--out DIR` get one result
    /// each and a summary CSV. Exit status: 0 analyzed, 1 a file refused or
    /// unreadable, 2 usage error.
    Analyze(AnalyzeArgs),
}

#[derive(Debug, Subcommand)]
enum AccountsCommand {
    /// Set an account's subscription flag and limits (creating the account
    /// if new); what is not given keeps its value.
    Set {
        /// The account.
        #[arg(long, value_name = "NAME")]
        account: String,
        /// Whether the subscription is active.
        #[arg(long, value_name = "BOOL")]
        subscription_active: Option<bool>,
        /// Requests accepted per minute.
        #[arg(long, value_name = "N")]
        requests_per_minute: Option<u32>,
        /// Requests in progress at once.
        #[arg(long, value_name = "N")]
        concurrent_requests: Option<u32>,
        /// Seconds of media the account may analyze in total.
        #[arg(long, value_name = "SECONDS")]
        analysis_quota_seconds: Option<u64>,
        /// Seconds of media the account may analyze per UTC day.
        #[arg(long, value_name = "SECONDS")]
        daily_quota_seconds: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Create a key (and its account if new) and print it, once.
    Create {
        /// The account the key belongs to.
        #[arg(long, value_name = "NAME")]
        account: String,
        /// Comma-separated scopes, e.g. service.upload,service.upload.inter-2.
        #[arg(long, value_name = "SCOPES", value_delimiter = ',', required = true)]
        scopes: Vec<Scope>,
    },
    /// List keys (ids and prefixes, never the keys).
    List,
    /// Revoke a key by id.
    Revoke {
        /// The key's id, as `keys list` shows it.
        id: String,
    },
}

fn main() -> ExitCode {
    // Before any thread exists: candle's 8-bit products split over a process-wide pool of
    // spinning threads unless the environment says one; every transcription runs on one thread
    // of its own instead, which costs about half the CPU (`attune_voice::threads`).
    attune_core::transcript::one_candle_thread_unless_set();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => {
            // `{:#}` prints the whole cause chain on one line, without the
            // backtrace `Debug` would add.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    logging::init()?;
    let mut overrides = ConfigLayer::default();
    match &cli.command {
        Command::Serve { bind } => overrides.bind = *bind,
        Command::Keys { store, .. } | Command::Accounts { store, .. } => {
            overrides.store_path = store.clone();
        }
        Command::Analyze(_) | Command::Migrate => {}
    }
    let config = Config::load(cli.config.as_deref(), std::env::vars_os(), overrides)?;

    let mut stdout = std::io::stdout();
    match cli.command {
        Command::Serve { .. } => commands::serve(config, &mut stdout).await?,
        Command::Migrate => commands::migrate(&config, &mut stdout).await?,
        Command::Keys { command, .. } => {
            let opened = AdminStore::open(&config)
                .await
                .with_context(|| store_name(&config))?;
            let store = opened.keys();
            match command {
                KeysCommand::Create { account, scopes } => {
                    let mut stderr = std::io::stderr();
                    commands::keys_create(store, &account, &scopes, &mut stdout, &mut stderr)
                        .await?;
                }
                KeysCommand::List => commands::keys_list(store, &mut stdout).await?,
                KeysCommand::Revoke { id } => {
                    commands::keys_revoke(store, &id, &mut stdout).await?;
                }
            }
            opened.close().await;
        }
        Command::Accounts { command, .. } => {
            let opened = AdminStore::open(&config)
                .await
                .with_context(|| store_name(&config))?;
            let store = opened.keys();
            match command {
                AccountsCommand::Set {
                    account,
                    subscription_active,
                    requests_per_minute,
                    concurrent_requests,
                    analysis_quota_seconds,
                    daily_quota_seconds,
                } => {
                    let changes = AccountChanges {
                        subscription_active,
                        requests_per_minute,
                        concurrent_requests,
                        analysis_quota_seconds,
                        daily_quota_seconds,
                    };
                    commands::accounts_set(store, &account, changes, &mut stdout).await?;
                }
            }
            opened.close().await;
        }
        Command::Analyze(args) => {
            let mode = match args.mode() {
                Ok(mode) => mode,
                Err(message) => Cli::command()
                    .error(clap::error::ErrorKind::ArgumentConflict, message)
                    .exit(),
            };
            let settings = AnalyzeSettings::from_config(&config);
            let mut stderr = std::io::stderr();
            let outcome = match mode {
                Mode::Single { file, html } => analyze_cmd::analyze(
                    &args,
                    &file,
                    html.as_deref(),
                    &settings,
                    &mut stdout.lock(),
                    &mut stderr,
                )?,
                Mode::Batch { out, html } => analyze_batch::analyze_batch(
                    &args,
                    &out,
                    html,
                    &settings,
                    &mut stdout.lock(),
                    &mut stderr,
                )?,
            };
            match outcome {
                Outcome::Refused(_) => return Ok(ExitCode::FAILURE),
                Outcome::Batch { failed, .. } if failed > 0 => return Ok(ExitCode::FAILURE),
                _ => {}
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What "opening the store" failed on, for the error message: never the URL,
/// which may carry a password.
fn store_name(config: &Config) -> String {
    match &config.store_url {
        None => format!("opening {}", config.store_path.display()),
        Some(_) => "opening the PostgreSQL store (store_url)".to_owned(),
    }
}
