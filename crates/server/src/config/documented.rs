//! The configuration's documentation checked against the code, so neither can
//! change alone: the example file `docs/attune.example.toml` holds every key
//! with its default, and the settings table of `docs/SERVER.md` names every
//! key, its environment variable and its default.

use super::*;
use crate::recommend_backend::RecommenderConfig;

const EXAMPLE: &str = include_str!("../../../../docs/attune.example.toml");
const MANUAL: &str = include_str!("../../../../docs/SERVER.md");
/// The heading of the manual's table of settings.
const SETTINGS_HEADING: &str = "## Settings";

/// The example with every `#key = value` line (a key whose default is not a
/// fixed value) switched on.
fn every_key_set() -> String {
    EXAMPLE
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The keys set in `text` (`name`, or `table.name` inside a table), with
/// their values.
fn keys_in(text: &str) -> Vec<(String, toml::Value)> {
    let table: toml::Table = toml::from_str(text).expect("the example file is TOML");
    let mut keys = Vec::new();
    for (key, value) in table {
        match value {
            toml::Value::Table(inner) => {
                keys.extend(inner.into_iter().map(|(k, v)| (format!("{key}.{k}"), v)))
            }
            value => keys.push((key, value)),
        }
    }
    keys
}

/// A value as its environment variable carries it: strings bare, lists
/// comma-separated.
fn env_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        toml::Value::Array(items) => items.iter().map(env_text).collect::<Vec<_>>().join(","),
        other => toml_text(other),
    }
}

/// A value as TOML text (this build's `toml` parses only, so scalars are
/// written here: strings as JSON-style quoted text, which TOML reads alike).
fn toml_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => serde_json::to_string(text).expect("a string serialises"),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(toml_text).collect();
            format!("[{}]", items.join(", "))
        }
        other => panic!("no TOML text for {other:?} in this test"),
    }
}

/// `ATTUNE_` and the key in upper case, a table's name joined by `_`.
fn variable(key: &str) -> String {
    format!("ATTUNE_{}", key.replace('.', "_").to_uppercase())
}

/// A TOML document setting `key` alone.
fn toml_setting(key: &str, value: &toml::Value) -> String {
    match key.split_once('.') {
        Some((table, name)) => format!("[{table}]\n{name} = {}\n", toml_text(value)),
        None => format!("{key} = {}\n", toml_text(value)),
    }
}

#[test]
fn the_example_file_gives_exactly_the_defaults() {
    let layer = ConfigLayer::from_toml(EXAMPLE).expect("docs/attune.example.toml parses");
    let mut config = Config::from_layer(layer).expect("the example is a valid configuration");
    let defaults = Config::default();
    // The recommender's settings are kept as given and resolved when used: compare the
    // timeout it resolves to, then the rest.
    assert_eq!(
        config.recommender.timeout().unwrap(),
        defaults.recommender.timeout().unwrap(),
        "recommender.timeout_ms in docs/attune.example.toml differs from the code's default"
    );
    config.recommender.timeout_ms = defaults.recommender.timeout_ms;
    assert_eq!(
        config, defaults,
        "a default in docs/attune.example.toml differs from the code's"
    );
}

#[test]
fn the_example_file_names_every_key() {
    let layer = ConfigLayer::from_toml(&every_key_set())
        .expect("docs/attune.example.toml parses with every key switched on");
    // Exhaustive on purpose: a new key does not compile until it is listed here, and then
    // fails until the example file sets it.
    let ConfigLayer {
        bind,
        base_url,
        ws_base_url,
        docs_url,
        store_path,
        store_url,
        store_lease_seconds,
        max_connections,
        max_connections_per_ip,
        header_read_timeout_seconds,
        body_read_timeout_seconds,
        analysis_threads,
        workers,
        max_jobs,
        max_media_duration_seconds,
        max_upload_bytes,
        shutdown_grace_seconds,
        stream_idle_timeout_seconds,
        stream_max_duration_seconds,
        stream_drain_seconds,
        stream_shutdown_notice_seconds,
        stream_analysis_threads,
        stream_time_scale,
        stream_max_lag_ms,
        stream_max_queued_bytes,
        stream_max_backlog_bytes,
        stream_max_message_bytes,
        stream_write_timeout_seconds,
        stream_models,
        realtime_transcribe,
        stream_transcribe,
        warm_up,
        recommender,
        demo_api_key,
    } = layer;
    let RecommenderConfig {
        url,
        model,
        api_key,
        api_key_env,
        timeout_ms,
    } = recommender;
    let set = [
        ("bind", bind.is_some()),
        ("base_url", base_url.is_some()),
        ("ws_base_url", ws_base_url.is_some()),
        ("docs_url", docs_url.is_some()),
        ("store_path", store_path.is_some()),
        ("store_url", store_url.is_some()),
        ("store_lease_seconds", store_lease_seconds.is_some()),
        ("max_connections", max_connections.is_some()),
        ("max_connections_per_ip", max_connections_per_ip.is_some()),
        (
            "header_read_timeout_seconds",
            header_read_timeout_seconds.is_some(),
        ),
        (
            "body_read_timeout_seconds",
            body_read_timeout_seconds.is_some(),
        ),
        ("analysis_threads", analysis_threads.is_some()),
        ("workers", workers.is_some()),
        ("max_jobs", max_jobs.is_some()),
        (
            "max_media_duration_seconds",
            max_media_duration_seconds.is_some(),
        ),
        ("max_upload_bytes", max_upload_bytes.is_some()),
        ("shutdown_grace_seconds", shutdown_grace_seconds.is_some()),
        (
            "stream_idle_timeout_seconds",
            stream_idle_timeout_seconds.is_some(),
        ),
        (
            "stream_max_duration_seconds",
            stream_max_duration_seconds.is_some(),
        ),
        ("stream_drain_seconds", stream_drain_seconds.is_some()),
        (
            "stream_shutdown_notice_seconds",
            stream_shutdown_notice_seconds.is_some(),
        ),
        ("stream_analysis_threads", stream_analysis_threads.is_some()),
        ("stream_time_scale", stream_time_scale.is_some()),
        ("stream_max_lag_ms", stream_max_lag_ms.is_some()),
        ("stream_max_queued_bytes", stream_max_queued_bytes.is_some()),
        (
            "stream_max_backlog_bytes",
            stream_max_backlog_bytes.is_some(),
        ),
        (
            "stream_max_message_bytes",
            stream_max_message_bytes.is_some(),
        ),
        (
            "stream_write_timeout_seconds",
            stream_write_timeout_seconds.is_some(),
        ),
        ("stream_models", stream_models.is_some()),
        ("realtime_transcribe", realtime_transcribe.is_some()),
        ("stream_transcribe", stream_transcribe.is_some()),
        ("warm_up", warm_up.is_some()),
        ("demo_api_key", demo_api_key.is_some()),
        ("recommender.url", url.is_some()),
        ("recommender.model", model.is_some()),
        ("recommender.api_key", api_key.is_some()),
        ("recommender.api_key_env", api_key_env.is_some()),
        ("recommender.timeout_ms", timeout_ms.is_some()),
    ];
    let missing: Vec<&str> = set
        .iter()
        .filter(|(_, is_set)| !is_set)
        .map(|(key, _)| *key)
        .collect();
    assert!(
        missing.is_empty(),
        "keys missing from docs/attune.example.toml: {missing:?}"
    );
    assert_eq!(keys_in(&every_key_set()).len(), set.len());
}

#[test]
fn every_key_is_read_from_its_environment_variable() {
    for (key, value) in keys_in(&every_key_set()) {
        let from_file = ConfigLayer::from_toml(&toml_setting(&key, &value)).unwrap();
        assert_ne!(from_file, ConfigLayer::default(), "{key} sets nothing");
        let pair = (
            OsString::from(variable(&key)),
            OsString::from(env_text(&value)),
        );
        let from_env = ConfigLayer::from_env([pair]).unwrap();
        assert_eq!(from_env, from_file, "{} does not set {key}", variable(&key));
    }
}

/// The rows of the manual's settings table: key, variable, default.
fn manual_rows() -> Vec<(String, String, String)> {
    let start = MANUAL
        .find(SETTINGS_HEADING)
        .expect("docs/SERVER.md has a settings section");
    let section = &MANUAL[start + SETTINGS_HEADING.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let cell = |i: usize| cells.get(i).copied().unwrap_or_default().to_owned();
            (cell(1).trim_matches('`').to_owned(), cell(2), cell(3))
        })
        .collect()
}

#[test]
fn the_manual_documents_every_key_with_its_variable_and_default() {
    let rows = manual_rows();
    let fixed: Vec<String> = keys_in(EXAMPLE).into_iter().map(|(k, _)| k).collect();
    let keys = keys_in(&every_key_set());
    for (key, value) in &keys {
        let Some((_, var, default)) = rows.iter().find(|(k, _, _)| k == key) else {
            panic!("docs/SERVER.md, {SETTINGS_HEADING}: no row for `{key}`");
        };
        assert!(
            var.contains(&format!("`{}`", variable(key))),
            "docs/SERVER.md: the row of `{key}` does not name {}",
            variable(key)
        );
        if fixed.contains(key) {
            assert!(
                default.contains(&format!("`{}`", env_text(value))),
                "docs/SERVER.md: the default of `{key}` is `{}`, not {default}",
                env_text(value)
            );
        }
    }
    for (key, _, _) in &rows {
        assert!(
            keys.iter().any(|(k, _)| k == key),
            "docs/SERVER.md documents `{key}`, which is not a configuration key"
        );
    }
}
