//! API keys through the library: create, list, authenticate, revoke.

use attune_core::wire::Timestamp;
use attune_core::ErrorCode;
use attune_server::{authenticate, commands, KeyStatus, KeyStore, Scope, SqliteStore};
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION};

fn bearer(credential: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {credential}")).unwrap(),
    );
    headers
}

#[tokio::test]
async fn a_created_key_authenticates_until_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
        .await
        .unwrap();

    let (mut out, mut notes) = (Vec::new(), Vec::new());
    let created = commands::keys_create(
        &store,
        "acme",
        &[Scope::Upload, Scope::UploadInter2],
        &mut out,
        &mut notes,
    )
    .await
    .unwrap();
    let key = String::from_utf8(out).unwrap().trim().to_owned();
    assert_eq!(key, created.key.expose());
    assert!(key.starts_with("atk_") && key.len() >= 4 + 64, "{key}");
    assert!(!String::from_utf8(notes).unwrap().contains(&key));

    let principal = authenticate(&store, &store, &bearer(&key), Timestamp::now())
        .await
        .unwrap();
    assert_eq!(principal.account_id(), created.record.account_id);
    assert_eq!(principal.key_id(), created.record.id);
    principal.require_scope(Scope::UploadInter2).unwrap();
    let refused = principal.require_scope(Scope::Stream).unwrap_err();
    assert_eq!(refused.code, ErrorCode::Ih2003);

    let mut listing = Vec::new();
    commands::keys_list(&store, &mut listing).await.unwrap();
    let listing = String::from_utf8(listing).unwrap();
    assert!(!listing.contains(&key), "{listing}");
    for expected in [
        created.record.id.as_str(),
        &key[..12],
        "acme",
        "active",
        "service.upload,service.upload.inter-2",
    ] {
        assert!(
            listing.contains(expected),
            "{expected} missing from {listing}"
        );
    }

    let mut revoked = Vec::new();
    commands::keys_revoke(&store, &created.record.id, &mut revoked)
        .await
        .unwrap();
    let refused = authenticate(&store, &store, &bearer(&key), Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Ih2001);
    // Revoked and never-issued keys are indistinguishable to the caller.
    let unknown = format!("atk_{}", "0".repeat(64));
    let never_issued = authenticate(&store, &store, &bearer(&unknown), Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(refused, never_issued);

    let keys = store.list_keys().await.unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].status, KeyStatus::Revoked);
    assert!(keys[0].revoked_at.is_some());
}

#[tokio::test]
async fn missing_and_malformed_credentials_are_refused_without_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
        .await
        .unwrap();
    let missing = authenticate(&store, &store, &HeaderMap::new(), Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::Ih2002);

    let malformed = authenticate(&store, &store, &bearer("not-a-key"), Timestamp::now())
        .await
        .unwrap_err();
    let mut basic = HeaderMap::new();
    basic.insert(
        AUTHORIZATION,
        HeaderValue::from_static("Basic a2V5OnNlY3JldA=="),
    );
    let other_scheme = authenticate(&store, &store, &basic, Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(malformed.code, ErrorCode::Ih2001);
    assert_eq!(malformed, other_scheme);
}

#[tokio::test]
async fn an_empty_store_gets_one_development_key_with_every_scope() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
        .await
        .unwrap();
    let created = commands::bootstrap_dev_key(&store)
        .await
        .unwrap()
        .expect("an empty store gets a key");
    assert_eq!(created.record.account_name, "dev");
    assert_eq!(created.record.scopes, Scope::ALL.to_vec());

    let mut notice = Vec::new();
    commands::write_dev_key_notice(&mut notice, &created, "http://127.0.0.1:8080").unwrap();
    let notice = String::from_utf8(notice).unwrap();
    let expected = format!("curl -H \"Authorization: Bearer {}\"", created.key.expose());
    assert!(notice.contains(&expected), "{notice}");

    let principal = authenticate(
        &store,
        &store,
        &bearer(created.key.expose()),
        Timestamp::now(),
    )
    .await
    .unwrap();
    for scope in Scope::ALL {
        principal.require_scope(scope).unwrap();
    }
    assert!(commands::bootstrap_dev_key(&store).await.unwrap().is_none());
    assert_eq!(store.key_count().await.unwrap(), 1);
}

#[tokio::test]
async fn accounts_set_changes_only_the_limits_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
        .await
        .unwrap();
    let mut out = Vec::new();
    let changed = commands::accounts_set(
        &store,
        "bench",
        commands::AccountChanges {
            requests_per_minute: Some(1_000_000),
            concurrent_requests: Some(4096),
            ..Default::default()
        },
        &mut out,
    )
    .await
    .unwrap();
    let defaults = attune_server::AccountLimits::default();
    assert_eq!(changed.limits.requests_per_minute, 1_000_000);
    assert_eq!(changed.limits.concurrent_requests, 4096);
    assert_eq!(
        changed.limits.daily_quota_seconds,
        defaults.daily_quota_seconds
    );
    assert!(changed.subscription_active);
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("1000000 requests per minute"), "{printed}");

    let again = commands::accounts_set(
        &store,
        "bench",
        commands::AccountChanges {
            subscription_active: Some(false),
            ..Default::default()
        },
        &mut Vec::new(),
    )
    .await
    .unwrap();
    assert_eq!(again.id, changed.id);
    assert!(!again.subscription_active);
    assert_eq!(again.limits, changed.limits, "unchanged limits are kept");
}
