//! Log setup: `tracing` events written as text lines by `tracing-subscriber`,
//! filtered by `ATTUNE_LOG` (or `RUST_LOG`), `info` by default.
//!
//! Nothing here decides what is safe to log; request handling only ever hands
//! redacted values to the logger (see [`crate::redact`]).

use std::io::IsTerminal;
use tracing::Subscriber;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Filter used when neither variable is set.
pub const DEFAULT_FILTER: &str = "info";

/// The filter directives in effect: `ATTUNE_LOG`, else `RUST_LOG`, else
/// [`DEFAULT_FILTER`].
pub fn filter_directives() -> String {
    ["ATTUNE_LOG", "RUST_LOG"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_FILTER.to_owned())
}

/// The subscriber the server logs through, writing to `writer`. Tests pass
/// an in-memory writer to read what would have been logged.
pub fn subscriber<W>(
    filter: EnvFilter,
    writer: W,
    ansi: bool,
) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi)
        .finish()
}

/// Installs the process-wide subscriber, writing to standard error (standard
/// output is kept for what commands print, such as a new key).
pub fn init() -> Result<(), LoggingError> {
    let directives = filter_directives();
    let filter = EnvFilter::try_new(&directives).map_err(|source| LoggingError::Filter {
        directives: directives.clone(),
        source,
    })?;
    let ansi = std::io::stderr().is_terminal();
    tracing::subscriber::set_global_default(subscriber(filter, std::io::stderr, ansi))
        .map_err(|_| LoggingError::AlreadySet)
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoggingError {
    /// The filter in `ATTUNE_LOG` or `RUST_LOG` does not parse.
    #[error("invalid log filter `{directives}`: {source}")]
    Filter {
        /// The directives.
        directives: String,
        /// Why.
        source: tracing_subscriber::filter::ParseError,
    },
    /// Another subscriber was installed first.
    #[error("a global log subscriber is already installed")]
    AlreadySet,
}
