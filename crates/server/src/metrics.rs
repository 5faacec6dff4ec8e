//! The instance's Prometheus metrics, scraped at `GET /metrics`.
//!
//! The registry lives in each instance's memory: counters start at zero when
//! the process starts and count only what this instance saw, which is what
//! Prometheus expects (it sums instances and handles resets). Labels are
//! bounded by construction: routes are [`ROUTES`](crate::routes::ROUTES)
//! templates (or `other`), never raw paths, and no label ever carries a
//! credential, an account or an id.

use crate::jobs::WorkerPool;
use crate::store::{JobStore, StoreErrorCounts};
use attune_core::wire::{Endpoint, Timestamp};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use std::sync::Arc;
use std::time::Duration;

/// How long a scrape waits for the store's oldest queued job.
const QUEUE_AGE_PATIENCE: Duration = Duration::from_secs(1);

/// The content type of a scrape: OpenMetrics text, which Prometheus reads.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    method: &'static str,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
    method: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

fn latency_histogram() -> Histogram {
    // 1 ms to about 33 s: a health check to a synchronous v1 analysis.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn lag_histogram() -> Histogram {
    // 50 ms to about 100 s: a window's own length is already seconds behind.
    Histogram::new(exponential_buckets(0.05, 2.0, 12))
}

/// One instance's metrics and the registry they are encoded from.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram, fn() -> Histogram>,
    jobs: Family<StateLabels, Gauge>,
    queue_wait: Histogram,
    oldest_queued: Gauge<f64, std::sync::atomic::AtomicU64>,
    sessions: Family<EndpointLabels, Gauge>,
    dropped: Family<EndpointLabels, Counter<f64, std::sync::atomic::AtomicU64>>,
    lag: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    store_errors: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics, registered under their `attune_` names.
    pub fn new() -> Metrics {
        Metrics::with_store_errors(None)
    }

    /// Like [`Metrics::new`], exporting the store's failed calls by
    /// operation too, when the store counts them.
    pub fn with_store_errors(store_errors: Option<StoreErrorCounts>) -> Metrics {
        let mut registry = Registry::default();
        if let Some(counts) = store_errors {
            registry.register(
                "attune_store_operation_errors",
                "Store calls that failed with the store unavailable, by operation (the store \
                 method, e.g. find_key, claim_job), from requests, sessions and background work",
                counts.family(),
            );
        }
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "attune_http_requests",
            "HTTP requests answered by this instance, by route template, method and status",
            requests.clone(),
        );
        let durations = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register_with_unit(
            "attune_http_request_duration",
            "Time from receiving a request to its response head, by route template and method",
            Unit::Seconds,
            durations.clone(),
        );
        let jobs = Family::<StateLabels, Gauge>::default();
        registry.register(
            "attune_jobs",
            "Upload jobs this instance holds (queued: accepted here and waiting for a worker) \
             or runs (running); jobs queued in a shared store but not yet claimed by this \
             instance are not counted",
            jobs.clone(),
        );
        let queue_wait = Histogram::new(exponential_buckets(0.01, 2.0, 14));
        registry.register_with_unit(
            "attune_job_queue_wait",
            "Time from a job's acceptance to the start of its analysis, observed by the \
             instance that runs it (on a shared queue, from acceptance on any instance to the \
             claim)",
            Unit::Seconds,
            queue_wait.clone(),
        );
        let oldest_queued = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register_with_unit(
            "attune_job_queue_oldest_age",
            "Age of the oldest job waiting for a worker, read from the store at each scrape (0 \
             when none waits). On a shared store the queue is the deployment's, so every \
             instance reports the same value",
            Unit::Seconds,
            oldest_queued.clone(),
        );
        let sessions = Family::<EndpointLabels, Gauge>::default();
        registry.register(
            "attune_stream_sessions",
            "Open WebSocket stream sessions on this instance, by endpoint (v1, v2, realtime)",
            sessions.clone(),
        );
        let dropped =
            Family::<EndpointLabels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register_with_unit(
            "attune_stream_dropped",
            "Media seconds reported to stream clients in coverage.dropped (not analyzed)",
            Unit::Seconds,
            dropped.clone(),
        );
        let lag = Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            lag_histogram,
        );
        registry.register_with_unit(
            "attune_stream_analysis_lag",
            "How far stream analysis trails real time, by endpoint: for each analyzed window, \
             the session's elapsed time when its result was ready minus the window's end in the \
             media (for a client sending in real time, the delay it sees)",
            Unit::Seconds,
            lag.clone(),
        );
        let store_errors = Counter::default();
        registry.register(
            "attune_store_errors",
            "HTTP requests refused with ih1003 because a store call failed with the store \
             unavailable (WebSocket sessions and background job work are not counted)",
            store_errors.clone(),
        );
        for endpoint in [Endpoint::StreamV1, Endpoint::StreamV2, Endpoint::Realtime] {
            // Present from the start, so a dashboard sees 0 rather than no series.
            let labels = endpoint_labels(endpoint);
            sessions.get_or_create(&labels).set(0);
            dropped.get_or_create(&labels).inc_by(0.0);
            drop(lag.get_or_create(&labels));
        }
        for state in ["queued", "running"] {
            jobs.get_or_create(&StateLabels { state }).set(0);
        }
        Metrics {
            registry,
            requests,
            durations,
            jobs,
            queue_wait,
            oldest_queued,
            sessions,
            dropped,
            lag,
            store_errors,
        }
    }

    /// Counts one answered request; `route` is its template or `other`.
    pub fn observe_request(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        took: Duration,
    ) {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
        self.durations
            .get_or_create(&RouteLabels { route, method })
            .observe(took.as_secs_f64());
    }

    /// Records how long a job waited between acceptance and its start.
    pub fn observe_queue_wait(&self, waited: Duration) {
        self.queue_wait.observe(waited.as_secs_f64());
    }

    /// Sets the age of the oldest queued job from `jobs`, at `now`. A store
    /// that fails, or does not answer within a second, leaves the previous
    /// value (its failure is counted by operation).
    pub async fn refresh_queue_age(&self, jobs: &dyn JobStore, now: Timestamp) {
        match tokio::time::timeout(QUEUE_AGE_PATIENCE, jobs.oldest_queued()).await {
            Ok(Ok(oldest)) => {
                let age_ms = oldest.map_or(0, |at| now.unix_millis() - at.unix_millis());
                self.oldest_queued.set(age_ms.max(0) as f64 / 1000.0);
            }
            Ok(Err(error)) => tracing::debug!(%error, "oldest queued job not read"),
            Err(_) => tracing::debug!("oldest queued job not read in time"),
        }
    }

    /// Counts one request refused because the store was unavailable.
    pub fn store_error(&self) {
        self.store_errors.inc();
    }

    /// Counts media seconds a stream session reported as dropped.
    pub fn dropped_seconds(&self, endpoint: Endpoint, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.dropped
                .get_or_create(&endpoint_labels(endpoint))
                .inc_by(seconds);
        }
    }

    /// Records how far behind real time one analyzed stream window was:
    /// `elapsed` session seconds when it was ready, `window_end` its end in
    /// the media.
    pub fn analysis_lag(&self, endpoint: Endpoint, elapsed: f64, window_end: f64) {
        let lag = elapsed - window_end;
        if lag.is_finite() {
            self.lag
                .get_or_create(&endpoint_labels(endpoint))
                .observe(lag.max(0.0));
        }
    }

    /// Counts an open stream session until the guard is dropped.
    pub fn session_opened(self: &Arc<Self>, endpoint: Endpoint) -> SessionGuard {
        self.sessions
            .get_or_create(&endpoint_labels(endpoint))
            .inc();
        SessionGuard {
            metrics: Arc::clone(self),
            endpoint,
        }
    }

    /// The scrape: every metric in the text format, with the job gauges read
    /// from `pool` now.
    pub fn encode(&self, pool: &WorkerPool) -> String {
        let (held, running) = pool.occupancy();
        self.jobs
            .get_or_create(&StateLabels { state: "running" })
            .set(i64::try_from(running).unwrap_or(i64::MAX));
        self.jobs
            .get_or_create(&StateLabels { state: "queued" })
            .set(i64::try_from(held.saturating_sub(running)).unwrap_or(i64::MAX));
        let mut text = String::new();
        // Writing to a String cannot fail.
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("encoding to a String");
        text
    }
}

fn endpoint_labels(endpoint: Endpoint) -> EndpointLabels {
    EndpointLabels {
        endpoint: match endpoint {
            Endpoint::StreamV1 => "v1",
            Endpoint::StreamV2 => "v2",
            Endpoint::Realtime => "realtime",
        },
    }
}

/// An open stream session, counted in `attune_stream_sessions` while it lives.
#[derive(Debug)]
pub struct SessionGuard {
    metrics: Arc<Metrics>,
    endpoint: Endpoint,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.metrics
            .sessions
            .get_or_create(&endpoint_labels(self.endpoint))
            .dec();
    }
}
