//! The OpenAPI document against the implementation: the router's route table
//! and the document name the same operations, the document is what
//! `/openapi.json` serves, and real responses of every route, successes and
//! errors, validate against the schemas the document gives for their status.

use crate::common::{client, get_job, mint_token, poll_until_done, post_form, url, Form, Harness};
use attune_core::{ErrorCode, ServiceError};
use attune_server::routes::{OPENAPI_JSON, ROUTES};
use attune_server::tokens::normalize_origin;
use attune_server::ClientToken;
use attune_server::{AccountLimits, AnalyzerRunner, ServerHandle, Services};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The methods an OpenAPI path item may hold, as its keys spell them.
const OPENAPI_METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// A job id no job has.
const NO_JOB: &str = "0123456789abcdef0123456789abcdef";

/// The document, with validators for its response schemas built on demand.
struct Contract {
    doc: Value,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

/// Escapes a JSON pointer token (RFC 6901).
fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

impl Contract {
    fn load() -> Contract {
        Contract {
            doc: serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON"),
            validators: Mutex::new(HashMap::new()),
        }
    }

    /// Follows a local `$ref` (`#/components/...`) to what it names.
    fn deref<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let pointer = reference.strip_prefix('#').expect("local references only");
                self.doc
                    .pointer(pointer)
                    .unwrap_or_else(|| panic!("dangling reference {reference}"))
            }
            None => value,
        }
    }

    /// Every `(path, method)` operation of the document.
    fn operations(&self) -> BTreeSet<(String, String)> {
        let mut operations = BTreeSet::new();
        for (path, item) in self.doc["paths"].as_object().unwrap() {
            for key in item.as_object().unwrap().keys() {
                assert!(
                    OPENAPI_METHODS.contains(&key.as_str()),
                    "{path}: `{key}` is not a method"
                );
                operations.insert((path.clone(), key.clone()));
            }
        }
        operations
    }

    /// A validator for the schema at `pointer` in the document, resolving its
    /// references against the whole document.
    fn validator(&self, pointer: &str) -> Arc<jsonschema::Validator> {
        let mut validators = self.validators.lock().unwrap();
        if let Some(validator) = validators.get(pointer) {
            return Arc::clone(validator);
        }
        assert!(
            self.doc.pointer(pointer).is_some(),
            "no schema at {pointer}"
        );
        // The document itself is the root schema: its OpenAPI keys are not
        // JSON Schema keywords and are ignored, while `#/components/...`
        // references resolve inside it.
        let mut root = self.doc.clone();
        let root_object = root.as_object_mut().unwrap();
        root_object.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        // As a URI fragment, a pointer's `{` and `}` are percent-encoded.
        let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
        root_object.insert("$ref".into(), json!(format!("#{fragment}")));
        let validator = Arc::new(
            jsonschema::options()
                .should_validate_formats(true)
                .build(&root)
                .unwrap_or_else(|e| panic!("the schema at {pointer} does not compile: {e}")),
        );
        validators.insert(pointer.to_owned(), Arc::clone(&validator));
        validator
    }

    fn assert_valid(&self, pointer: &str, instance: &Value, what: &str) {
        let validator = self.validator(pointer);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what} violates {pointer}:\n  {}\n{instance:#}",
            errors.join("\n  ")
        );
    }

    /// Checks a real response of `method template` against the document:
    /// its status is documented, every required header is present and every
    /// documented header's value fits its schema, and its body is the
    /// documented JSON (or absent when none is documented). Answers the
    /// status and the body.
    async fn check(
        &self,
        method: &str,
        template: &str,
        response: reqwest::Response,
    ) -> (u16, Value) {
        let status = response.status().as_u16();
        let what = format!("{} {template} -> {status}", method.to_uppercase());
        let operation_pointer = format!("/paths/{}/{method}", pointer_token(template));
        let operation = self
            .doc
            .pointer(&operation_pointer)
            .unwrap_or_else(|| panic!("{what}: the operation is not documented"));
        let documented = operation["responses"]
            .get(status.to_string())
            .unwrap_or_else(|| panic!("{what}: the status is not documented"));
        let documented = self.deref(documented);

        if let Some(headers) = documented.get("headers").and_then(Value::as_object) {
            for (name, header) in headers {
                let header = self.deref(header);
                let value = response
                    .headers()
                    .get(name.as_str())
                    .map(|v| v.to_str().unwrap().to_owned());
                let Some(value) = value else {
                    assert!(
                        header.get("required") != Some(&Value::Bool(true)),
                        "{what}: the required header {name} is missing"
                    );
                    continue;
                };
                let instance = match header["schema"].get("type").and_then(Value::as_str) {
                    Some("integer") => json!(value
                        .parse::<i64>()
                        .unwrap_or_else(|_| panic!("{what}: {name}: {value} is not an integer"))),
                    _ => json!(value),
                };
                let header_pointer = match headers[name].get("$ref").and_then(Value::as_str) {
                    Some(reference) => format!("{}/schema", &reference[1..]),
                    None => format!(
                        "{operation_pointer}/responses/{status}/headers/{}/schema",
                        pointer_token(name)
                    ),
                };
                self.assert_valid(&header_pointer, &instance, &format!("{what}: {name}"));
            }
        }

        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = response.bytes().await.unwrap();
        let Some(content) = documented.get("content").and_then(Value::as_object) else {
            assert!(bytes.is_empty(), "{what}: an undocumented body");
            return (status, Value::Null);
        };
        let media_type = content_type.unwrap_or_else(|| panic!("{what}: no Content-Type"));
        let essence = media_type.split(';').next().unwrap().trim();
        assert!(
            content.contains_key(essence),
            "{what}: Content-Type {media_type} is not documented"
        );
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{what}: not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        let schema_pointer = format!(
            "{}/content/{}/schema",
            match operation["responses"][status.to_string()]
                .get("$ref")
                .and_then(Value::as_str)
            {
                Some(reference) => reference[1..].to_owned(),
                None => format!("{operation_pointer}/responses/{status}"),
            },
            pointer_token(essence)
        );
        self.assert_valid(&schema_pointer, &body, &what);
        (status, body)
    }
}

/// The `error_id` values a documented error response allows, if it is one.
fn documented_codes(response: &Value) -> Option<Vec<String>> {
    let schema = response.pointer("/content/application~1json/schema")?;
    let codes = schema.pointer("/properties/error_id/enum")?.as_array()?;
    Some(
        codes
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect(),
    )
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_route_table_and_the_document_name_the_same_operations() {
    let contract = Contract::load();
    let documented = contract.operations();
    let mut routed = BTreeSet::new();
    for route in ROUTES {
        for method in route.methods() {
            routed.insert((route.path().to_owned(), method.as_str().to_lowercase()));
        }
    }
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "routed, not documented: {undocumented:?}"
    );
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(unrouted.is_empty(), "documented, not routed: {unrouted:?}");
}

#[test]
fn documented_error_codes_are_the_catalog_s_with_their_statuses() {
    let contract = Contract::load();
    let catalog: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let enumerated: Vec<&str> = contract.doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(enumerated, catalog);

    let mut checked = 0;
    for (path, method) in contract.operations() {
        let operation = &contract.doc["paths"][&path][&method];
        for (status, response) in operation["responses"].as_object().unwrap() {
            let Some(codes) = documented_codes(contract.deref(response)) else {
                continue;
            };
            assert!(!codes.is_empty(), "{method} {path} {status}");
            for code in codes {
                let parsed = ErrorCode::parse(&code)
                    .unwrap_or_else(|| panic!("{method} {path} {status}: unknown {code}"));
                let catalog_status = parsed.info().http_status;
                // A JSON body over its size limit is `ih4006` with 413, as
                // an upload over its limit is 413; a body that does not arrive
                // within the body read timeout is 408 with the route's own code.
                let overridden = (status == "413" && parsed == ErrorCode::Ih4006)
                    || (status == "408" && matches!(parsed, ErrorCode::Ih4005 | ErrorCode::Ih4006));
                assert!(
                    overridden || catalog_status.map(|s| s.to_string()).as_ref() == Some(status),
                    "{method} {path}: {code} is documented under {status}, the catalog says \
                     {catalog_status:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "only {checked} codes documented");
}

#[test]
fn the_documented_origin_and_token_patterns_accept_what_the_server_accepts() {
    let contract = Contract::load();
    let origin = contract
        .validator("/components/schemas/ClientTokenRequest/properties/allowed_origins/items");
    let hex = "0123456789abcdef".repeat(4);
    for candidate in [
        "https://app.example.com",
        "HTTPS://App.Example.com:443/",
        "http://localhost:3000",
        "http://localhost:000080",
        "http://host:0",
        "http://host:65535",
        "http://host:65536",
        "http://host:",
        "http://:80",
        "https://",
        "https://app.example.com/path",
        "https://user@app.example.com",
        "https://app.example.com?q",
        "https://app.example.com//",
        " \t https://app.example.com \u{85}",
        "\u{feff}https://app.example.com",
        "ws://host",
        "null",
        "",
        "http://a:b:80",
        "http://a]",
        "http://exa mple.com",
        "http://bücher.example",
        "http://xn--bcher-kva.example",
        "http://[::]",
        "http://[::1]:8080",
        "http://[1:2:3:4:5:6:7:8]",
        "http://[1:2:3:4:5:6:7:8:9]",
        "http://[1:2:3:4:5:6:7::]",
        "http://[1:2:3:4:5:6:7:8::]",
        "http://[::1:2:3:4:5:6:7]",
        "http://[::1:2:3:4:5:6:7:8]",
        "http://[1::2::3]",
        "http://[1:2::3:4]",
        "http://[::ffff:1.2.3.4]",
        "http://[1:2:3:4:5:6:1.2.3.4]",
        "http://[1:2:3:4:5:6:7:1.2.3.4]",
        "http://[1::1.2.3.4]",
        "http://[::1.2.3.04]",
        "http://[::256.1.1.1]",
        "http://[12345::]",
        "http://[fe80::1%eth0]",
        "http://[:1]",
        "http://[1:]",
        "http://[abc]",
        "http://[",
        "http://[::1]x",
    ] {
        assert_eq!(
            origin.is_valid(&json!(candidate)),
            normalize_origin(candidate).is_some(),
            "{candidate:?}"
        );
    }

    let token = contract.validator("/components/schemas/ClientTokenRevokeRequest/properties/token");
    for candidate in [
        format!("att_{hex}"),
        format!(" att_{hex}\n"),
        format!("att_{}", hex.to_uppercase()),
        format!("att_{hex}0"),
        format!("atk_{hex}"),
        "att_".to_owned(),
    ] {
        assert_eq!(
            token.is_valid(&json!(candidate)),
            ClientToken::is_well_formed(candidate.trim()),
            "{candidate:?}"
        );
    }
}

#[tokio::test]
async fn openapi_json_serves_the_committed_document_and_every_operation_is_answered() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let contract = Contract::load();
    let client = client();

    let (status, served) = contract
        .check(
            "get",
            "/openapi.json",
            client
                .get(url(&server, "/openapi.json"))
                .send()
                .await
                .unwrap(),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(served, contract.doc);
    assert_eq!(served["openapi"], "3.1.0");

    // Every documented operation reaches its route: no 404 or 405 from the
    // router, whose refusals carry `ih4005`.
    for (path, method) in contract.operations() {
        let concrete = path.replace("{job_id}", NO_JOB);
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let response = client
            .request(method.clone(), url(&server, &concrete))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        if status == 404 || status == 405 {
            let body = response.text().await.unwrap();
            assert!(!body.contains("ih4005"), "{method} {path}: {status} {body}");
        }
    }
    // And every route refuses the methods it does not answer, listing those
    // it does.
    for route in ROUTES {
        let concrete = route.path().replace("{job_id}", NO_JOB);
        let response = client.patch(url(&server, &concrete)).send().await.unwrap();
        assert_eq!(response.status(), 405, "{}", route.path());
        let allow: Vec<&str> = route.methods().iter().map(|m| m.as_str()).collect();
        assert_eq!(response.headers()["allow"], allow.join(", ").as_str());
    }
    server.shutdown().await;
}

#[tokio::test]
async fn operations_routes_answer_as_documented() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let contract = Contract::load();
    let client = client();

    let (status, body) = contract
        .check(
            "get",
            "/healthz",
            client.get(url(&server, "/healthz")).send().await.unwrap(),
        )
        .await;
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    let (status, body) = contract
        .check(
            "get",
            "/readyz",
            client.get(url(&server, "/readyz")).send().await.unwrap(),
        )
        .await;
    assert_eq!((status, body), (200, json!({"status": "ready"})));
    for path in ["/healthz", "/readyz", "/openapi.json"] {
        let (status, _) = contract
            .check(
                "head",
                path,
                client.head(url(&server, path)).send().await.unwrap(),
            )
            .await;
        assert_eq!(status, 200, "HEAD {path}");
    }
    let response = client
        .post(url(&server, "/auth"))
        .header("content-type", "application/json")
        .body(json!({"key_id": "kid", "key_secret": "s3cret"}).to_string())
        .send()
        .await
        .unwrap();
    let (status, body) = contract.check("post", "/auth", response).await;
    assert_eq!((status, body["error_id"].as_str()), (401, Some("ih2001")));
    server.shutdown().await;
}

/// `POST /v2/upload/analyze` checked against the document.
async fn v2(contract: &Contract, server: &ServerHandle, key: &str, form: Form) -> (u16, Value) {
    let response = post_form(server, "/v2/upload/analyze", key, form).await;
    contract.check("post", "/v2/upload/analyze", response).await
}

/// `GET /v2/upload/jobs/{job_id}` checked against the document.
async fn read(contract: &Contract, server: &ServerHandle, key: &str, id: &str) -> (u16, Value) {
    let response = get_job(server, key, id).await;
    contract
        .check("get", "/v2/upload/jobs/{job_id}", response)
        .await
}

fn form(model: &str, fields: &[(&str, &str)]) -> Form {
    let mut form = Form::new().text("model", model);
    for (name, value) in fields {
        form = form.text(name, value);
    }
    form.media(1000)
}

#[tokio::test]
async fn upload_v2_and_job_reads_answer_as_documented() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &attune_server::Scope::ALL).await;
    let upload_only = harness.key("acme", &[attune_server::Scope::Upload]).await;
    let server = harness
        .start_with(
            |config| {
                config.analysis_threads = Some(1);
                config.max_jobs = Some(1);
            },
            harness.services(),
        )
        .await;
    let contract = Contract::load();

    // 202 queued, then read queued or running, then completed.
    harness.runner.set(|script| script.hold = true);
    let (status, queued) = v2(
        &contract,
        &server,
        &key,
        form("inter-2", &[("include[]", "signals")]),
    )
    .await;
    assert_eq!((status, queued["status"].as_str()), (202, Some("queued")));
    let id = queued["job_id"].as_str().unwrap().to_owned();
    harness.runner.wait_started(1).await;
    let (status, running) = read(&contract, &server, &key, &id).await;
    assert_eq!((status, running["status"].as_str()), (200, Some("running")));
    // The only job slot is taken: 503 with Retry-After.
    let (status, full) = v2(&contract, &server, &key, form("inter-2", &[])).await;
    assert_eq!((status, full["error_id"].as_str()), (503, Some("ih1002")));
    harness.runner.release();
    poll_until_done(&server, &key, &id).await;
    let (status, done) = read(&contract, &server, &key, &id).await;
    assert_eq!((status, done["status"].as_str()), (200, Some("completed")));
    let response = client()
        .head(url(&server, &format!("/v2/upload/jobs/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    let (status, _) = contract
        .check("head", "/v2/upload/jobs/{job_id}", response)
        .await;
    assert_eq!(status, 200);
    assert!(done["result"]["signals"].is_array());

    // 200 with a finished job, completed or failed.
    let fields = [
        ("wait_seconds", "30"),
        ("include[]", "conversation_quality_overall"),
        ("include[]", "conversation_quality_timeline"),
    ];
    let (status, done) = v2(&contract, &server, &key, form("inter-2-audio", &fields)).await;
    assert_eq!((status, done["status"].as_str()), (200, Some("completed")));
    harness.runner.set(|script| {
        script.run_error = Some(ServiceError::new(ErrorCode::Ih5003));
    });
    let (status, failed) = v2(
        &contract,
        &server,
        &key,
        form("inter-2", &[("wait_seconds", "30")]),
    )
    .await;
    assert_eq!(
        (status, failed["error"]["error_id"].as_str()),
        (200, Some("ih5003"))
    );
    let (_, reread) = read(&contract, &server, &key, failed["job_id"].as_str().unwrap()).await;
    assert_eq!(reread["status"], "failed");
    harness.runner.set(|script| script.run_error = None);

    // Form errors, credentials, scopes.
    for (form, code) in [
        (Form::new().text("model", "inter-2"), "ih4001"),
        (form("inter-9", &[]), "ih4005"),
        (form("inter-2", &[("wait_seconds", "121")]), "ih4005"),
        (form("inter-2-deep", &[]), "ih4020"),
    ] {
        let (status, body) = v2(&contract, &server, &key, form).await;
        assert_eq!((status, body["error_id"].as_str()), (400, Some(code)));
    }
    for (credential, status, code) in [
        ("", 401, "ih2002"),
        ("atk_not-a-key", 401, "ih2001"),
        (upload_only.as_str(), 403, "ih2003"),
    ] {
        let (got, body) = v2(&contract, &server, credential, form("inter-2", &[])).await;
        assert_eq!((got, body["error_id"].as_str()), (status, Some(code)));
        let (got, body) = read(&contract, &server, credential, &id).await;
        let expected = if credential == upload_only {
            (200, None)
        } else {
            (status, Some(code))
        };
        assert_eq!((got, body["error_id"].as_str()), expected);
    }
    let (status, body) = read(&contract, &server, &key, NO_JOB).await;
    assert_eq!((status, body["error_id"].as_str()), (404, Some("ih4021")));

    // Media refused at validation.
    harness.runner.set(|script| {
        script.validate_error = Some(ServiceError::new(ErrorCode::Ih5002));
    });
    let (status, body) = v2(&contract, &server, &key, form("inter-2", &[])).await;
    assert_eq!((status, body["error_id"].as_str()), (422, Some("ih5002")));
    server.shutdown().await;
}

#[tokio::test]
async fn size_quota_and_rate_refusals_answer_as_documented() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &attune_server::Scope::ALL).await;
    let server = harness
        .start_with(
            |config| config.max_upload_bytes = Some(500),
            harness.services(),
        )
        .await;
    let contract = Contract::load();

    let (status, body) = v2(&contract, &server, &key, form("inter-2", &[])).await;
    assert_eq!((status, body["error_id"].as_str()), (413, Some("ih4003")));
    let response = post_form(&server, "/v1/upload/analyze", &key, Form::new().media(1000)).await;
    let (status, body) = contract.check("post", "/v1/upload/analyze", response).await;
    assert_eq!((status, body["error_id"].as_str()), (413, Some("ih4003")));

    // The daily quota used up: 429 with `reset_time`.
    harness
        .set_account(
            "acme",
            true,
            AccountLimits {
                daily_quota_seconds: 0,
                requests_per_minute: 1,
                ..AccountLimits::default()
            },
        )
        .await;
    // A quiet minute: the allowance of one request is whole again.
    harness.clock.advance(60);
    let (status, body) = v2(
        &contract,
        &server,
        &key,
        Form::new().text("model", "inter-2"),
    )
    .await;
    assert_eq!((status, body["error_id"].as_str()), (429, Some("ih3004")));
    assert_eq!(body["reset_time"], "2026-11-23T00:00:00.000Z");
    // The minute's allowance of one request is used up: 429 with Retry-After.
    let response = get_job(&server, &key, NO_JOB).await;
    assert!(response.headers().contains_key("retry-after"));
    let (status, body) = contract
        .check("get", "/v2/upload/jobs/{job_id}", response)
        .await;
    assert_eq!((status, body["error_id"].as_str()), (429, Some("ih3001")));

    // An inactive subscription.
    harness
        .set_account("acme", false, AccountLimits::default())
        .await;
    let (status, body) = v2(&contract, &server, &key, form("inter-2", &[])).await;
    assert_eq!((status, body["error_id"].as_str()), (403, Some("ih3005")));
    server.shutdown().await;
}

#[tokio::test]
async fn upload_v1_answers_as_documented() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &attune_server::Scope::ALL).await;
    let server = harness.start().await;
    let contract = Contract::load();
    let post = |form: Form| {
        let server = &server;
        let key = &key;
        let contract = &contract;
        async move {
            let response = post_form(server, "/v1/upload/analyze", key, form).await;
            contract.check("post", "/v1/upload/analyze", response).await
        }
    };

    let (status, body) = post(Form::new().media(1000)).await;
    assert_eq!(
        (status, body["feedback"]["type"].as_str()),
        (200, Some("no_feedback"))
    );
    let (status, body) = post(
        Form::new()
            .text("include[]", "conversation_quality_overall")
            .text("goal_dimensions[]", "rapport")
            .media(1000),
    )
    .await;
    assert_eq!(
        (status, body["feedback"]["type"].as_str()),
        (200, Some("feedback"))
    );

    for (form, code) in [
        (Form::new(), "ih4001"),
        (
            Form::new().text("include[]", "signals").media(1000),
            "ih4005",
        ),
        (
            Form::new().text("goal_dimensions[]", "charm").media(1000),
            "ih4005",
        ),
    ] {
        let (status, body) = post(form).await;
        assert_eq!((status, body["error_id"].as_str()), (400, Some(code)));
    }
    harness.runner.set(|script| {
        script.validate_error = Some(ServiceError::new(ErrorCode::Ih4007));
    });
    let (status, body) = post(Form::new().media(1000)).await;
    assert_eq!((status, body["error_id"].as_str()), (400, Some("ih4007")));
    server.shutdown().await;
}

#[tokio::test]
async fn client_token_routes_answer_as_documented() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &attune_server::Scope::ALL).await;
    let stream_only = harness.key("acme", &[attune_server::Scope::Stream]).await;
    let server = harness.start().await;
    let contract = Contract::load();
    let client = client();
    let post = |path: &'static str, credential: Option<&str>, body: String| {
        let mut request = client
            .post(url(&server, path))
            .header("content-type", "application/json")
            .body(body);
        if let Some(credential) = credential {
            request = request.bearer_auth(credential);
        }
        let contract = &contract;
        async move {
            contract
                .check("post", path, request.send().await.unwrap())
                .await
        }
    };

    let mint_request = json!({
        "scopes": ["service.upload", "service.stream"],
        "expires_in": 600,
        "max_video_seconds": 90.5,
        "max_bytes": 1_000_000,
        "max_duration_seconds": 7200,
        "allowed_origins": ["https://App.example.com/"],
    });
    let (status, minted) = post("/v1/client_tokens", Some(&key), mint_request.to_string()).await;
    assert_eq!(status, 200);
    assert_eq!(minted["max_duration_seconds"], 3600);
    // The key in the body, and an empty body.
    let (status, _) = post(
        "/v1/client_tokens",
        None,
        json!({"api_key": key}).to_string(),
    )
    .await;
    assert_eq!(status, 200);
    let nulls = json!({"scopes": null, "expires_in": null, "allowed_origins": null});
    let (status, _) = post("/v1/client_tokens", Some(&key), nulls.to_string()).await;
    assert_eq!(status, 200, "null reads as absent");
    let (status, minted_float) = post(
        "/v1/client_tokens",
        Some(&key),
        r#"{"expires_in": 600.0}"#.to_owned(),
    )
    .await;
    assert_eq!(
        (status, minted_float["expires_in"].as_u64()),
        (200, Some(600))
    );
    let (status, minted_default) = post("/v1/client_tokens", Some(&key), String::new()).await;
    assert_eq!(
        (status, minted_default["scope"].as_str()),
        (200, Some("service.stream"))
    );

    for (credential, body, status, code) in [
        (
            Some(key.as_str()),
            r#"{"scopes": ["service.all"]}"#.to_owned(),
            400,
            "ih4005",
        ),
        (
            Some(key.as_str()),
            r#"{"expires_in": -1}"#.to_owned(),
            400,
            "ih4006",
        ),
        (Some(key.as_str()), "[null, null]".to_owned(), 400, "ih4006"),
        (Some(key.as_str()), "x".repeat(70_000), 413, "ih4006"),
        (None, "{}".to_owned(), 401, "ih2002"),
        (
            Some(stream_only.as_str()),
            r#"{"scopes": ["service.upload"]}"#.to_owned(),
            403,
            "ih2003",
        ),
    ] {
        let (got, answer) = post("/v1/client_tokens", credential, body).await;
        assert_eq!((got, answer["error_id"].as_str()), (status, Some(code)));
    }

    let token = mint_token(&server, &key, json!({"scopes": ["service.upload"]})).await;
    let revoke = json!({ "token": token }).to_string();
    let (status, body) = post("/v1/client_tokens/revoke", Some(&key), revoke.clone()).await;
    assert_eq!((status, body), (200, json!({})));
    let (status, body) = read(&contract, &server, &token, NO_JOB).await;
    assert_eq!((status, body["error_id"].as_str()), (401, Some("ih2014")));
    for (body, code) in [
        (json!({"token": "atk_pasted-a-key"}).to_string(), "ih4005"),
        ("{}".to_owned(), "ih4006"),
    ] {
        let (status, answer) = post("/v1/client_tokens/revoke", Some(&key), body).await;
        assert_eq!((status, answer["error_id"].as_str()), (400, Some(code)));
    }
    let (status, answer) = post("/v1/client_tokens/revoke", Some(&token), revoke).await;
    assert_eq!((status, answer["error_id"].as_str()), (401, Some("ih2014")));
    server.shutdown().await;
}

#[tokio::test]
async fn real_analyses_answer_as_documented() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &attune_server::Scope::ALL).await;
    let services = Services::new(
        harness.store.clone(),
        Arc::new(AnalyzerRunner::new(Duration::from_secs(1800))),
    )
    .with_clock(harness.clock.clone());
    let server = harness.start_with(|_| {}, services).await;
    let contract = Contract::load();
    let every_section = [
        ("wait_seconds", "60"),
        ("include[]", "conversation_quality_overall"),
        ("include[]", "conversation_quality_timeline"),
        ("include[]", "signals"),
    ];

    for (file, model) in [
        ("speech/hesitant.wav", "inter-2-audio"),
        ("mp4_h264_aac.mp4", "inter-2"),
    ] {
        let mut form = Form::new().text("model", model);
        for (name, value) in every_section {
            form = form.text(name, value);
        }
        let (status, job) = v2(&contract, &server, &key, form.file("file", &fixture(file))).await;
        assert_eq!(
            (status, job["status"].as_str()),
            (200, Some("completed")),
            "{file}"
        );
        assert!(
            !job["result"]["windows"].as_array().unwrap().is_empty(),
            "{file}"
        );
        let (status, reread) =
            read(&contract, &server, &key, job["job_id"].as_str().unwrap()).await;
        assert_eq!((status, &reread), (200, &job), "{file}");
    }
    for (file, status, code) in [
        ("random.bin", 422, "ih5002"),
        ("short_2s.mp4", 400, "ih4007"),
        ("video_only.mp4", 422, "ih5008"),
    ] {
        let form = Form::new()
            .text("model", "inter-2")
            .file("file", &fixture(file));
        let (got, body) = v2(&contract, &server, &key, form).await;
        assert_eq!(
            (got, body["error_id"].as_str()),
            (status, Some(code)),
            "{file}"
        );
    }

    let form = Form::new()
        .text("include[]", "conversation_quality_overall")
        .text("include[]", "conversation_quality_timeline")
        .text(
            "conversation_context",
            "A sales call; I want to sound more confident.",
        )
        .file("file", &fixture("mkv_h264_vorbis.mkv"));
    let response = post_form(&server, "/v1/upload/analyze", &key, form).await;
    let (status, body) = contract.check("post", "/v1/upload/analyze", response).await;
    assert_eq!(status, 200);
    assert!(body["conversation_quality"]["overall"].is_object());
    let response = post_form(
        &server,
        "/v1/upload/analyze",
        &key,
        Form::new().file("file", &fixture("truncated.mp4")),
    )
    .await;
    let (status, body) = contract.check("post", "/v1/upload/analyze", response).await;
    assert_eq!((status, body["error_id"].as_str()), (422, Some("ih5002")));
    server.shutdown().await;
}
