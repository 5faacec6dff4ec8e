//! Configuration layering and resolution: defaults, file, environment, flags.

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
        crate::streams::StreamSettings::from(&config).write_timeout,
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
    let file =
        ConfigLayer::from_toml("store_url = \"postgres://attune:hunter2@db.internal:5432/attune\"")
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
