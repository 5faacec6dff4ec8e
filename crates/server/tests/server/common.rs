//! Starting servers, minting credentials, building forms and reading answers.
//!
//! The analysis runner here is dependency injection for tests: it returns a
//! small fixed result assembled by attune-core, or fails, or holds until
//! released, as a test scripts it. The server under test never sees anything
//! else.

use attune_core::upload::{job_result, V1Parts};
use attune_core::wire::{
    EngagementLevel, ErrorResponse, Feedback, Probability, Signal, SignalType, Timestamp,
    UploadJobResult, UploadJobWindow,
};
use attune_core::ServiceError;
use attune_server::config::{Config, ConfigLayer};
use attune_server::{
    Account, AccountLimits, JobInput, JobOutput, JobRunner, KeyStore, ManualClock, Scope,
    ServerHandle, Services, SqliteStore, UploadRequest, ValidatedMedia,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The `docs_url` every test server is configured with.
pub const DOCS_URL: &str = "https://docs.attune.test";

/// Guards against a hang turning into a stuck test run; never reached when
/// the server behaves.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// What the test runner does with the next requests.
#[derive(Debug, Clone)]
pub struct Script {
    /// Duration validation reports for every file.
    pub duration_seconds: f64,
    /// Refuse at validation with this error.
    pub validate_error: Option<ServiceError>,
    /// Fail the analysis with this error.
    pub run_error: Option<ServiceError>,
    /// Hold every analysis until [`TestRunner::release`].
    pub hold: bool,
    /// Panic in the analysis (a bug in the analyzer, as the server sees it).
    pub panic: bool,
    /// Detect no signal at all (the windows keep their engagement).
    pub no_signals: bool,
}

/// A runner scripted by the test (see the module docs).
#[derive(Debug)]
pub struct TestRunner {
    script: Mutex<Script>,
    seen: Mutex<Vec<UploadRequest>>,
    released: Mutex<bool>,
    release: Condvar,
    started: AtomicUsize,
    finished: AtomicUsize,
}

impl Default for TestRunner {
    fn default() -> Self {
        TestRunner {
            script: Mutex::new(Script {
                duration_seconds: 12.0,
                validate_error: None,
                run_error: None,
                hold: false,
                panic: false,
                no_signals: false,
            }),
            seen: Mutex::new(Vec::new()),
            released: Mutex::new(false),
            release: Condvar::new(),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
        }
    }
}

impl TestRunner {
    /// Changes the script.
    pub fn set(&self, change: impl FnOnce(&mut Script)) {
        change(&mut self.script.lock().unwrap());
    }

    /// Lets every held analysis, present and future, go on.
    pub fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.release.notify_all();
    }

    /// The requests validated so far.
    pub fn seen(&self) -> Vec<UploadRequest> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `count` analyses have started.
    pub async fn wait_started(&self, count: usize) {
        tokio::time::timeout(HANG_GUARD, async {
            while self.started.load(Ordering::SeqCst) < count {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the analyses never started");
    }

    /// Waits until `count` analyses have returned.
    pub async fn wait_finished(&self, count: usize) {
        tokio::time::timeout(HANG_GUARD, async {
            while self.finished.load(Ordering::SeqCst) < count {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the analyses never finished");
    }

    /// The result every analysis of `duration` seconds gets: 5-second
    /// windows, engaged, with interest in the first one.
    pub fn result_for(duration: f64, request: &UploadRequest) -> UploadJobResult {
        let count = (duration / 5.0).ceil() as u32;
        let windows = (0..count)
            .map(|index| {
                let start = f64::from(index) * 5.0;
                let end = (start + 5.0).min(duration);
                UploadJobWindow {
                    index,
                    start_seconds: start,
                    end_seconds: end,
                    engagement_status: EngagementLevel::Engaged,
                    signals: if index == 0 {
                        vec![Signal {
                            signal_type: SignalType::Interest,
                            start,
                            end,
                            probability: Some(Probability::High),
                            rationale: Some("leans in".into()),
                            modality: None,
                        }]
                    } else {
                        vec![]
                    },
                }
            })
            .collect();
        job_result(windows, duration, 5.0, request.sections())
    }
}

impl JobRunner for TestRunner {
    fn validate(&self, request: &UploadRequest) -> Result<ValidatedMedia, ServiceError> {
        self.seen.lock().unwrap().push(request.clone());
        let script = self.script.lock().unwrap().clone();
        match script.validate_error {
            Some(error) => Err(error),
            None => Ok(ValidatedMedia {
                duration_seconds: script.duration_seconds,
            }),
        }
    }

    fn run(&self, job: JobInput) -> Result<JobOutput, ServiceError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let script = self.script.lock().unwrap().clone();
        if script.hold {
            let mut released = self.released.lock().unwrap();
            while !*released {
                released = self.release.wait(released).unwrap();
            }
        }
        if script.panic {
            self.finished.fetch_add(1, Ordering::SeqCst);
            panic!("the scripted analyzer panics");
        }
        let outcome = match script.run_error {
            Some(error) => Err(error),
            None if script.no_signals => {
                let mut result = TestRunner::result_for(job.media.duration_seconds, &job.request);
                for window in &mut result.windows {
                    window.signals.clear();
                }
                // The CQI block follows from the windows, so it is recomputed.
                Ok(job_result(
                    result.windows,
                    result.duration_seconds,
                    result.window_seconds,
                    job.request.sections(),
                ))
            }
            None => Ok(TestRunner::result_for(
                job.media.duration_seconds,
                &job.request,
            )),
        };
        self.finished.fetch_add(1, Ordering::SeqCst);
        outcome.map(JobOutput::from)
    }

    fn feedback(&self, request: &UploadRequest, parts: &V1Parts) -> Result<Feedback, ServiceError> {
        Ok(Feedback::Feedback {
            message: format!(
                "context {:?}, {} signals",
                request.conversation_context,
                parts.signals.len()
            ),
            active_dimensions: request.goal_dimensions.clone(),
            primary_signal: SignalType::Interest,
        })
    }
}

/// Everything a test server is built from: a store in a temporary
/// directory, a clock standing at a fixed instant, and a scripted runner.
pub struct Harness {
    /// Holds the store file.
    pub dir: tempfile::TempDir,
    /// The store.
    pub store: SqliteStore,
    /// The server's clock.
    pub clock: Arc<ManualClock>,
    /// The server's runner.
    pub runner: Arc<TestRunner>,
}

impl Drop for Harness {
    /// A failing test must not leave an analysis held: the runtime waits for
    /// its blocking threads on the way out, and would wait forever.
    fn drop(&mut self) {
        self.runner.release();
    }
}

/// 2026-11-22T10:00:00Z, where every test clock starts.
pub fn start_time() -> Timestamp {
    serde_json::from_str("\"2026-11-22T10:00:00Z\"").unwrap()
}

impl Harness {
    /// A fresh store, clock and runner.
    pub async fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
            .await
            .unwrap();
        Harness {
            dir,
            store,
            clock: Arc::new(ManualClock::new(start_time())),
            runner: Arc::new(TestRunner::default()),
        }
    }

    /// The services of this harness.
    pub fn services(&self) -> Services {
        Services::new(self.store.clone(), self.runner.clone()).with_clock(self.clock.clone())
    }

    /// A test configuration, changed by `change`.
    pub fn config(change: impl FnOnce(&mut ConfigLayer)) -> Config {
        let mut layer = ConfigLayer {
            bind: Some("127.0.0.1:0".parse().unwrap()),
            docs_url: Some(DOCS_URL.to_owned()),
            // Two uploads at once and a thread left to streams (see `executor`).
            analysis_threads: Some(3),
            // Open stream sessions would otherwise hold a test server's shutdown for the
            // reference 5 minutes of notice.
            stream_shutdown_notice_seconds: Some(1),
            // Unoptimized test builds analyze slower than real time; skipping media for lag is
            // tested on its own (streams::a_session_behind_its_stream_drops_video_and_says_so).
            stream_max_lag_ms: Some(600_000),
            ..ConfigLayer::default()
        };
        change(&mut layer);
        Config::from_layer(layer).unwrap()
    }

    /// A server with the default test configuration.
    pub async fn start(&self) -> ServerHandle {
        self.start_with(|_| {}, self.services()).await
    }

    /// A server with a changed configuration and the given services.
    pub async fn start_with(
        &self,
        change: impl FnOnce(&mut ConfigLayer),
        services: Services,
    ) -> ServerHandle {
        attune_server::spawn(Harness::config(change), services)
            .await
            .unwrap()
    }

    /// A new key with `scopes` for `account` (created if new).
    pub async fn key(&self, account: &str, scopes: &[Scope]) -> String {
        let account = self
            .store
            .ensure_account(account, AccountLimits::default())
            .await
            .unwrap();
        let created = self.store.create_key(account.id, scopes).await.unwrap();
        created.key.expose().to_owned()
    }

    /// Sets an account's subscription flag and limits.
    pub async fn set_account(&self, account: &str, active: bool, limits: AccountLimits) -> Account {
        let account = self
            .store
            .ensure_account(account, AccountLimits::default())
            .await
            .unwrap();
        self.store
            .update_account(account.id, active, limits)
            .await
            .unwrap()
    }
}

/// An HTTP client that never goes through a proxy.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// `http://{addr}{path}`.
pub fn url(server: &ServerHandle, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

/// The response's `X-Correlation-ID`, checked to be 32 hex characters.
pub fn correlation_id(response: &reqwest::Response) -> String {
    let id = response
        .headers()
        .get("x-correlation-id")
        .expect("every response carries X-Correlation-ID")
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    id
}

/// The body as an `ErrorResponse`, checking its correlation id against the
/// header.
pub async fn error_body(response: reqwest::Response) -> ErrorResponse {
    let header = correlation_id(&response);
    let bytes = response.bytes().await.unwrap();
    let body: ErrorResponse = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not an ErrorResponse ({e}): {bytes:?}"));
    assert_eq!(body.correlation_id.as_deref(), Some(header.as_str()));
    body
}

/// Asserts the response is an error with `status` and `code`; answers its
/// body.
pub async fn expect_error(
    response: reqwest::Response,
    status: u16,
    code: attune_core::ErrorCode,
) -> ErrorResponse {
    assert_eq!(
        response.status().as_u16(),
        status,
        "{:?}",
        response.headers()
    );
    let body = error_body(response).await;
    assert_eq!(body.error_id, code, "{body:?}");
    body
}

/// The body as JSON.
pub async fn json(response: reqwest::Response) -> serde_json::Value {
    let bytes = response.bytes().await.unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}

/// A `multipart/form-data` body built by hand, so tests control field order
/// and can stream it over a raw socket.
#[derive(Debug, Clone)]
pub struct Form {
    boundary: String,
    body: Vec<u8>,
}

impl Default for Form {
    fn default() -> Self {
        Form {
            boundary: "attune-test-boundary-7d3f".into(),
            body: Vec::new(),
        }
    }
}

impl Form {
    /// An empty form.
    pub fn new() -> Form {
        Form::default()
    }

    /// Adds a text field.
    pub fn text(mut self, name: &str, value: &str) -> Form {
        self.body.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        self
    }

    /// The head of a file part: what precedes its content.
    pub fn file_head(&self, name: &str) -> Vec<u8> {
        format!(
            "--{}\r\nContent-Disposition: form-data; name=\"{name}\"; \
             filename=\"conversation.mp4\"\r\nContent-Type: video/mp4\r\n\r\n",
            self.boundary
        )
        .into_bytes()
    }

    /// Adds a file part.
    pub fn file(mut self, name: &str, content: &[u8]) -> Form {
        let head = self.file_head(name);
        self.body.extend_from_slice(&head);
        self.body.extend_from_slice(content);
        self.body.extend_from_slice(b"\r\n");
        self
    }

    /// A media file of `size` bytes.
    pub fn media(self, size: usize) -> Form {
        self.file("file", &vec![0x42; size])
    }

    /// The `Content-Type` of the body.
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    /// The fields so far, without the closing boundary (for streaming).
    pub fn open_body(&self) -> Vec<u8> {
        self.body.clone()
    }

    /// `body` (this form's fields and more parts) closed with this form's
    /// final boundary.
    pub fn into_body_after(self, mut body: Vec<u8>) -> Vec<u8> {
        body.extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        body
    }

    /// The whole body.
    pub fn into_body(mut self) -> Vec<u8> {
        self.body
            .extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        self.body
    }
}

/// Sends `form` to `path` with `credential` as a bearer token.
pub async fn post_form(
    server: &ServerHandle,
    path: &str,
    credential: &str,
    form: Form,
) -> reqwest::Response {
    client()
        .post(url(server, path))
        .bearer_auth(credential)
        .header("content-type", form.content_type())
        .body(form.into_body())
        .send()
        .await
        .unwrap()
}

/// A v2 submission of a small file with `model` and extra fields.
pub async fn submit(
    server: &ServerHandle,
    credential: &str,
    model: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = Form::new().text("model", model);
    for (name, value) in fields {
        form = form.text(name, value);
    }
    post_form(server, "/v2/upload/analyze", credential, form.media(1000)).await
}

/// `GET /v2/upload/jobs/{job_id}`.
pub async fn get_job(server: &ServerHandle, credential: &str, job_id: &str) -> reqwest::Response {
    client()
        .get(url(server, &format!("/v2/upload/jobs/{job_id}")))
        .bearer_auth(credential)
        .send()
        .await
        .unwrap()
}

/// Reads a job until it is `completed` or `failed`; answers its envelope.
pub async fn poll_until_done(
    server: &ServerHandle,
    credential: &str,
    job_id: &str,
) -> serde_json::Value {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let response = get_job(server, credential, job_id).await;
            assert_eq!(response.status(), 200);
            let envelope = json(response).await;
            if envelope["status"] == "completed" || envelope["status"] == "failed" {
                return envelope;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the job never finished")
}

/// Mints a client token with `key` from the JSON `request`; answers the
/// response body.
pub async fn mint(
    server: &ServerHandle,
    key: &str,
    request: serde_json::Value,
) -> reqwest::Response {
    client()
        .post(url(server, "/v1/client_tokens"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(request.to_string())
        .send()
        .await
        .unwrap()
}

/// Mints a token and answers it.
pub async fn mint_token(server: &ServerHandle, key: &str, request: serde_json::Value) -> String {
    let response = mint(server, key, request).await;
    assert_eq!(response.status(), 200);
    json(response).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}
