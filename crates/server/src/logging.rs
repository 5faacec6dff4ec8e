//! Log setup: `tracing` events written as text lines by `tracing-subscriber`,
//! or as one JSON object a line with `ATTUNE_LOG_FORMAT=json` (for log
//! collectors), filtered by `ATTUNE_LOG` (or `RUST_LOG`), `info` by default.
//!
//! The format is read from the environment, not the configuration file,
//! because logging starts before the configuration is read (so that errors
//! reading it are logged too).
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

/// The subscriber for `ATTUNE_LOG_FORMAT=json`: each event one JSON object
/// on its own line, with `timestamp`, `level`, `target`, `fields` (the
/// message and the event's fields) and the enclosing `span` (its fields,
/// such as `correlation_id`).
pub fn json_subscriber<W>(filter: EnvFilter, writer: W) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable text (the default).
    Text,
    /// One JSON object a line.
    Json,
}

/// The format named by `ATTUNE_LOG_FORMAT` (`text` or `json`; unset or empty
/// is `text`).
pub fn log_format() -> Result<LogFormat, LoggingError> {
    match std::env::var("ATTUNE_LOG_FORMAT") {
        Err(_) => Ok(LogFormat::Text),
        Ok(value) => match value.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(LoggingError::Format(value)),
        },
    }
}

/// Installs the process-wide subscriber, writing to standard error (standard
/// output is kept for what commands print, such as a new key).
pub fn init() -> Result<(), LoggingError> {
    let directives = filter_directives();
    let filter = EnvFilter::try_new(&directives).map_err(|source| LoggingError::Filter {
        directives: directives.clone(),
        source,
    })?;
    let installed = match log_format()? {
        LogFormat::Text => {
            let ansi = std::io::stderr().is_terminal();
            tracing::subscriber::set_global_default(subscriber(filter, std::io::stderr, ansi))
        }
        LogFormat::Json => {
            tracing::subscriber::set_global_default(json_subscriber(filter, std::io::stderr))
        }
    };
    installed.map_err(|_| LoggingError::AlreadySet)
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
    /// `ATTUNE_LOG_FORMAT` names no known format.
    #[error("invalid ATTUNE_LOG_FORMAT `{0}`: use `text` or `json`")]
    Format(String),
    /// Another subscriber was installed first.
    #[error("a global log subscriber is already installed")]
    AlreadySet,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_are_one_object_each_with_the_request_span() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = json_subscriber(EnvFilter::new("info"), move || writer.clone());
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", correlation_id = "c0ffee");
            let _entered = span.enter();
            tracing::info!(status = 200, "request answered");
            tracing::debug!("filtered out");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["fields"]["message"], "request answered");
        assert_eq!(line["fields"]["status"], 200);
        assert_eq!(line["span"]["correlation_id"], "c0ffee");
    }
}
