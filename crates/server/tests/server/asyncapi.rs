//! The AsyncAPI document (`GET /asyncapi.json`): served as committed, its
//! shared schemas the OpenAPI components themselves, every event type
//! described; and [`check_event`], which `ws.rs` runs on every event any
//! stream or realtime test receives, so each real event validates against
//! its channel's message schema.

use crate::common::{client, url, Harness};
use attune_core::wire::EventData;
use attune_server::routes::{ASYNCAPI_JSON, OPENAPI_JSON};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(ASYNCAPI_JSON).expect("asyncapi.json is JSON"))
}

/// The schema a `$ref` names, or the value itself.
fn deref(value: &Value) -> &Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => doc()
            .pointer(&reference[1..])
            .unwrap_or_else(|| panic!("dangling {reference}")),
        None => value,
    }
}

/// Compiled payload schemas, by component name.
fn validator(schema_ref: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some(validator) = cache.get(schema_ref) {
        return Arc::clone(validator);
    }
    // The document is the root schema, so `#/components/schemas/...`
    // references resolve inside it; its AsyncAPI keys are not keywords.
    let mut root = doc().clone();
    let object = root.as_object_mut().unwrap();
    object.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    object.insert("$ref".into(), json!(schema_ref));
    let validator = Arc::new(
        jsonschema::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("{schema_ref} does not compile: {e}")),
    );
    cache.insert(schema_ref.to_owned(), Arc::clone(&validator));
    validator
}

/// The channel of a connection path (its query left off).
fn channel_of(path: &str) -> Option<&'static Value> {
    let address = path.split('?').next().unwrap_or(path);
    doc()["channels"]
        .as_object()
        .unwrap()
        .values()
        .find(|channel| channel["address"] == address)
}

/// The payload schema references of the channel's messages whose envelope
/// `type` is `kind`.
fn payloads_for(channel: &Value, kind: &str) -> Vec<String> {
    channel["messages"]
        .as_object()
        .unwrap()
        .values()
        .map(deref)
        .filter_map(|message| message["payload"]["$ref"].as_str())
        .filter(|payload| deref(&json!({ "$ref": payload }))["properties"]["type"]["const"] == kind)
        .map(str::to_owned)
        .collect()
}

/// Asserts `event`, received on a connection to `path`, is one of the
/// messages the document lists for that channel and valid against its
/// schema.
pub fn check_event(path: &str, event: &Value) {
    let Some(channel) = channel_of(path) else {
        return;
    };
    let kind = event["type"].as_str().unwrap_or_default();
    let payloads = payloads_for(channel, kind);
    assert!(
        !payloads.is_empty(),
        "{path}: the AsyncAPI document has no `{kind}` message on this channel: {event}"
    );
    let mut errors = Vec::new();
    for payload in &payloads {
        let found: Vec<String> = validator(payload)
            .iter_errors(event)
            .map(|e| format!("{payload}: {e} at {}", e.instance_path()))
            .collect();
        if found.is_empty() {
            return;
        }
        errors.extend(found);
    }
    panic!("{path}: the event does not match its AsyncAPI message: {errors:?}\n{event}");
}

#[tokio::test]
async fn asyncapi_json_serves_the_committed_document() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let response = client()
        .get(url(&server, "/asyncapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let served = crate::common::json(response).await;
    assert_eq!(&served, doc());
    assert_eq!(served["asyncapi"], "3.0.0");
    server.shutdown().await;
}

#[test]
fn schemas_named_like_openapi_components_are_the_same() {
    let openapi: Value = serde_json::from_str(OPENAPI_JSON).unwrap();
    let components = openapi["components"]["schemas"].as_object().unwrap();
    let mut shared = 0;
    for (name, schema) in doc()["components"]["schemas"].as_object().unwrap() {
        if let Some(component) = components.get(name) {
            assert_eq!(
                schema, component,
                "{name} differs from the OpenAPI component"
            );
            shared += 1;
        }
    }
    // The signal, engagement, CQI, include and error vocabularies at least.
    assert!(shared >= 8, "only {shared} shared schemas");
}

#[test]
fn every_event_type_and_endpoint_is_described() {
    for path in [
        "/v1/stream/analyze",
        "/v2/stream/analyze",
        "/v0/realtime/analyze",
    ] {
        let channel = channel_of(path).unwrap_or_else(|| panic!("no channel {path}"));
        for kind in EventData::TYPE_NAMES {
            let stream_only = !path.contains("realtime")
                && matches!(
                    *kind,
                    "realtime_recommendation.generated" | "transcript.generated"
                );
            if !stream_only {
                assert!(
                    !payloads_for(channel, kind).is_empty(),
                    "{path}: no `{kind}` message"
                );
            }
        }
    }
}

#[test]
fn a_wrong_event_fails_its_message_schema() {
    let path = "/v2/stream/analyze";
    let good = json!({
        "type": "signal.detected",
        "timestamp": "2026-11-24T12:00:00.000Z",
        "correlation_id": "c0ffee",
        "data": {"signal_type": "interest", "start": 5.0, "probability": "high", "rationale": "r"}
    });
    check_event(path, &good);
    let mut bad = good.clone();
    bad["data"]["probability"] = json!("certain");
    let result = std::panic::catch_unwind(|| check_event(path, &bad));
    assert!(result.is_err(), "an unknown probability passed");
    let mut unknown = good;
    unknown["type"] = json!("signal.vanished");
    let result = std::panic::catch_unwind(|| check_event(path, &unknown));
    assert!(result.is_err(), "an undescribed event type passed");
}
