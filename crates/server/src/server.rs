//! The TCP listener: accepts connections up to a limit, serves each on its
//! own task with hyper, and shuts down gracefully.
//!
//! Shutdown, once its future resolves: the listening socket is closed so new
//! clients are refused; every connection is told to finish the request it is
//! serving and close (idle keep-alive connections close at once); then the
//! server waits up to the configured grace period and drops whatever is still
//! running.

use crate::app::{App, X_CORRELATION_ID};
use crate::body::BODY_READ_TIMEOUT;
use crate::config::Config;
use crate::executor::Executor;
use crate::http_error::HttpError;
use crate::ids::CorrelationId;
use crate::jobs::WorkerPool;
use crate::linger::{BodyFlag, LingerLimits, LingeringStream};
use crate::services::Services;
use attune_core::{ErrorCode, ServiceError};
use hyper::body::Body as _;
use hyper::header::{HeaderValue, CONNECTION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

/// Longest pause between failed accepts; a full file-descriptor table frees
/// up as connections close, so accepting is retried rather than given up.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// Least a refused request's unread body is drained before its connection
/// closes (see [`crate::linger`]); more when uploads may be larger.
const MIN_LINGER_BYTES: u64 = 64 * 1024 * 1024;

/// The accept loop's state.
struct Listener {
    /// The bound socket. Dropping it at shutdown is what refuses new clients.
    listener: TcpListener,
    /// One permit per open connection, taken before accepting, so a flood of
    /// clients waits in the kernel's backlog instead of exhausting file
    /// descriptors and memory.
    limit_connections: Arc<Semaphore>,
    /// Flipped to `true` at shutdown; every connection task watches it to
    /// finish its in-flight request and close.
    notify_shutdown: watch::Sender<bool>,
    /// The connection tasks, so shutdown can wait for them and abort the ones
    /// still running when the grace period is over.
    connections: JoinSet<()>,
    /// HTTP/1.1 settings shared by every connection.
    http: http1::Builder,
    /// The request handler.
    app: Arc<App>,
    /// How much of a refused body is drained at close.
    linger: LingerLimits,
    /// Open connections per client address, when `max_connections_per_ip` is set.
    per_ip: Option<Arc<PerIp>>,
    /// See [`Config::body_read_timeout`].
    body_read_timeout: Duration,
}

/// Connections held per client address, against `max_connections_per_ip`.
#[derive(Debug)]
struct PerIp {
    limit: usize,
    open: std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>,
}

/// One connection counted against its address; uncounted when dropped.
struct IpSlot {
    per_ip: Arc<PerIp>,
    ip: IpAddr,
}

impl PerIp {
    /// A slot for a new connection from `ip`, or `None` when the address holds its limit.
    fn take(self: &Arc<PerIp>, ip: IpAddr) -> Option<IpSlot> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(ip).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(IpSlot {
            per_ip: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut open = self
            .per_ip
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            // Addresses seen once must not accumulate.
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Serves HTTP on `listener` with `services` until `shutdown` resolves, then
/// shuts down gracefully within `config.shutdown_grace`.
///
/// Before serving, jobs left `queued` or `running` by a previous process are
/// marked `failed` with `ih1004` (jobs are not resumed). At shutdown, jobs
/// still waiting for a worker are failed the same way; running analyses are
/// left to finish if the process lives on.
///
/// On a store that shares its job queue, jobs queued with their media are
/// left for any instance to claim (a shutdown loses none of them); only jobs
/// running on an instance whose lease lapsed are failed, and jobs this
/// instance claimed finish within the grace period.
///
/// HTTP/1.1 only: WebSocket streams need its `Upgrade`, clients do not speak
/// cleartext HTTP/2, and TLS (where HTTP/2 would be negotiated) is left to a
/// proxy in front.
pub async fn run(listener: TcpListener, config: Config, services: Services, shutdown: impl Future) {
    let config = match listener.local_addr() {
        Ok(addr) => config.bound_to(addr),
        Err(_) => config,
    };
    recover_jobs(&services).await;
    let pool = WorkerPool::new(
        Arc::clone(&services.runner),
        Executor::new(config.analysis_threads),
        config.max_jobs,
    );
    let mut http = http1::Builder::new();
    // A slow-loris client otherwise holds a connection permit forever; hyper starts this
    // timer when the connection starts waiting for a head, so a silent connection is cut too.
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .keep_alive(true);
    let (notify_shutdown, _) = watch::channel(false);
    let mut server = Listener {
        listener,
        limit_connections: Arc::new(Semaphore::new(config.max_connections)),
        notify_shutdown,
        connections: JoinSet::new(),
        http,
        app: Arc::new(
            App::new(
                config.docs_url.clone(),
                config.max_upload_bytes,
                services,
                pool.clone(),
                crate::streams::StreamSettings::from(&config),
            )
            .with_demo(&config),
        ),
        linger: LingerLimits {
            // Any body the server could have accepted is drained whole, so a
            // refusal reaches a client that sends before it reads.
            max_bytes: config
                .max_upload_bytes
                .saturating_add(crate::upload_form::FORM_OVERHEAD_BYTES)
                .max(MIN_LINGER_BYTES),
        },
        per_ip: (config.max_connections_per_ip > 0).then(|| {
            Arc::new(PerIp {
                limit: config.max_connections_per_ip,
                open: std::sync::Mutex::default(),
            })
        }),
        body_read_timeout: config.body_read_timeout,
    };
    // On a shared store, this instance takes queued jobs from the store
    // rather than running the ones it accepts.
    let claimer = server
        .app
        .services
        .jobs
        .shares_queue()
        .then(|| tokio::spawn(crate::uploads::claim_jobs(Arc::clone(&server.app))));
    if let Ok(addr) = server.listener.local_addr() {
        tracing::info!(%addr, base_url = %config.base_url, "listening");
    }

    tokio::select! {
        () = server.accept_loop() => {}
        _ = shutdown => tracing::info!("shutting down: no longer accepting connections"),
    }

    let app = Arc::clone(&server.app);
    app.draining
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let Listener {
        listener,
        notify_shutdown,
        mut connections,
        ..
    } = server;
    drop(listener);
    pool.close();
    notify_shutdown.send_replace(true);
    let http = async {
        let drained = tokio::time::timeout(config.shutdown_grace, async {
            while connections.join_next().await.is_some() {}
            // Jobs claimed from a shared queue finish within the grace
            // period; past it, the peers fail them (`ih1004`) once this
            // instance deregisters.
            if let Some(claimer) = claimer {
                let _ = claimer.await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                remaining = connections.len(),
                grace_seconds = config.shutdown_grace.as_secs_f64(),
                "grace period over: dropping unfinished requests"
            );
            connections.shutdown().await;
        }
    };
    // Stream sessions get their own notice (`ih6006` warnings, then `ih6005`).
    tokio::join!(http, app.streams.shut_down());
    tracing::info!("shutdown complete");
}

/// Marks the jobs a previous process left unfinished as interrupted, and
/// forgets expired ones. A store that cannot answer is logged, not fatal:
/// requests needing it answer `ih1003` until it is back.
async fn recover_jobs(services: &Services) {
    let now = services.clock.now();
    match services.jobs.mark_interrupted(now).await {
        Ok(0) => {}
        Ok(count) => tracing::warn!(
            count,
            "jobs interrupted by the previous shutdown marked failed"
        ),
        Err(error) => tracing::error!(%error, "cannot mark interrupted jobs"),
    }
    if let Err(error) = services.jobs.purge_expired(now).await {
        tracing::warn!(%error, "cannot purge expired jobs");
    }
}

impl Listener {
    /// Accepts connections until the task is dropped.
    async fn accept_loop(&mut self) {
        loop {
            // Never closed, so acquiring cannot fail.
            let permit = Arc::clone(&self.limit_connections)
                .acquire_owned()
                .await
                .expect("the connection semaphore is never closed");
            let (socket, peer) = self.accept().await;
            self.reap_finished();

            let http = self.http.clone();
            let app = Arc::clone(&self.app);
            let shutdown = self.notify_shutdown.subscribe();
            let linger = self.linger;
            let slot = match &self.per_ip {
                None => None,
                Some(per_ip) => match per_ip.take(peer.ip()) {
                    Some(slot) => Some(slot),
                    None => {
                        tracing::info!(
                            limit = per_ip.limit,
                            "connection refused: its address holds max_connections_per_ip"
                        );
                        let docs_url = app.docs_url.clone();
                        self.connections.spawn(async move {
                            refuse_connection(socket, linger, http, docs_url).await;
                            drop(permit);
                        });
                        continue;
                    }
                },
            };
            let body_read_timeout = self.body_read_timeout;
            self.connections.spawn(async move {
                serve_connection(socket, linger, http, app, body_read_timeout, shutdown).await;
                drop((permit, slot));
            });
        }
    }

    /// The next connection, retrying failed accepts with a growing pause.
    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        let mut backoff = Duration::from_millis(10);
        loop {
            match self.listener.accept().await {
                Ok((socket, peer)) => {
                    // Responses are small and written whole; waiting to
                    // coalesce them (Nagle) only adds latency.
                    if let Err(error) = socket.set_nodelay(true) {
                        tracing::debug!(%error, "cannot disable Nagle's algorithm");
                    }
                    return (socket, peer);
                }
                Err(error) => {
                    tracing::error!(%error, "accepting a connection failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
                }
            }
        }
    }

    /// Drops finished connection tasks so the set does not grow with every
    /// connection ever served.
    fn reap_finished(&mut self) {
        while let Some(finished) = self.connections.try_join_next() {
            if let Err(error) = finished {
                tracing::error!(%error, "a connection task failed");
            }
        }
    }
}

/// Serves one connection until the client closes it or shutdown is signalled,
/// in which case the request in flight is finished first.
async fn serve_connection(
    socket: TcpStream,
    linger: LingerLimits,
    http: http1::Builder,
    app: Arc<App>,
    body_read_timeout: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let has_body = BodyFlag::default();
    let socket = LingeringStream::new(socket, has_body.clone(), linger);
    let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        has_body.set(!request.body().is_end_stream());
        let app = Arc::clone(&app);
        async move {
            let response = BODY_READ_TIMEOUT
                .scope(body_read_timeout, app.handle(request))
                .await;
            Ok::<_, Infallible>(response)
        }
    });
    // `with_upgrades` keeps the socket usable after a `101 Switching
    // Protocols`, which the WebSocket routes rely on.
    let connection = http
        .serve_connection(TokioIo::new(socket), service)
        .with_upgrades();
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stop_requested(&mut shutdown) => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        // Clients hanging up mid-request are routine, not server faults.
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// Answers every request on a connection over `max_connections_per_ip` with `503` `ih1002`
/// and closes it. Answering (rather than closing at once) tells an HTTP client why; reading
/// the request first keeps the answer from being lost to a reset.
async fn refuse_connection(
    socket: TcpStream,
    linger: LingerLimits,
    http: http1::Builder,
    docs_url: String,
) {
    let has_body = BodyFlag::default();
    let socket = LingeringStream::new(socket, has_body.clone(), linger);
    let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        has_body.set(!request.body().is_end_stream());
        let correlation_id = CorrelationId::new();
        let error = ServiceError::with_message(
            ErrorCode::Ih1002,
            "This client address holds as many connections as the server allows it; \
             retry after closing one.",
        );
        let mut response = HttpError::new(error).into_response(&correlation_id, &docs_url);
        let headers = response.headers_mut();
        if let Ok(value) = HeaderValue::from_str(correlation_id.as_str()) {
            headers.insert(X_CORRELATION_ID, value);
        }
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
        async move { Ok::<_, Infallible>(response) }
    });
    if let Err(error) = http.serve_connection(TokioIo::new(socket), service).await {
        tracing::debug!(%error, "refused connection ended with an error");
    }
}

/// Resolves once shutdown is signalled (or its sender is gone).
async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    // The guard `wait_for` answers is not `Send`; drop it here.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// A server running on its own task, as started by [`spawn`].
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

/// Binds `config.bind` (port 0 picks a free port) and runs the server with
/// `services` on a new task until [`ServerHandle::shutdown`] is called or the
/// handle dropped.
pub async fn spawn(config: Config, services: Services) -> io::Result<ServerHandle> {
    let listener = TcpListener::bind(config.bind).await?;
    let local_addr = listener.local_addr()?;
    let (shutdown, stop) = oneshot::channel::<()>();
    let task = tokio::spawn(run(listener, config, services, async move {
        // A dropped handle resolves this too, so an abandoned server stops.
        let _ = stop.await;
    }));
    Ok(ServerHandle {
        local_addr,
        shutdown: Some(shutdown),
        task,
    })
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts a graceful shutdown without waiting for it.
    pub fn begin_shutdown(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }

    /// Waits for the server to stop, re-raising a panic of its task.
    pub async fn stopped(self) {
        if let Err(error) = self.task.await {
            if error.is_panic() {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    }

    /// Shuts down gracefully and waits until the server has stopped.
    pub async fn shutdown(mut self) {
        self.begin_shutdown();
        self.stopped().await;
    }
}

/// Resolves on ctrl-c or, on Unix, SIGTERM: what `attune serve` passes to
/// [`run`] as its shutdown future.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c received"),
        () = terminate => tracing::info!("SIGTERM received"),
    }
}
