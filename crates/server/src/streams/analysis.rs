//! The media side of a stream session: a task per session that hands the session's queued
//! frames to a shared pool of analysis threads, in order, and reports what they produced.
//!
//! The socket side never waits for analysis: it queues frames ([`AnalysisHandle::media`])
//! and goes back to reading. The analysis of one session runs on at most one pool thread at
//! a time (its [`LiveAnalyzer`] moves to the thread with a batch of frames and comes back
//! with the output), and the pool's queue is first come, first served across sessions, so
//! a busy session cannot starve the others.
//!
//! Bounded memory: a frame that waited longer than [`StreamSettings::max_lag`] before its
//! batch started is behind; it is still demuxed and decoded (container and codec state must
//! follow the stream) but not analyzed, and the windows it covered come back as
//! `coverage.dropped`. Decoding alone is several times cheaper than feature extraction, so a
//! lagging session catches up. Frames beyond [`StreamSettings::max_queued_bytes`] are not
//! queued at all (see [`Enqueued::Refused`]).

use super::StreamSettings;
use attune_core::live::{LiveAnalyzer, LiveOutput};
use attune_core::wire::{AudioFormat, Endpoint, Model};
use attune_core::{ErrorCode, ServiceError};
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of threads running analysis batches first come, first served.
///
/// Hand-written rather than `spawn_blocking`: tokio's blocking pool grows a thread per
/// waiting task (up to 512), so hundreds of sessions would oversubscribe two cores and
/// every session's latency would suffer together; a fixed pool keeps one batch per core
/// running and queues the rest fairly.
#[derive(Clone)]
pub(crate) struct AnalysisPool {
    shared: Arc<PoolShared>,
}

struct PoolShared {
    queue: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

impl std::fmt::Debug for AnalysisPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnalysisPool").finish_non_exhaustive()
    }
}

impl AnalysisPool {
    /// A pool of `threads` analysis threads (at least one). They live as long as the process.
    pub(crate) fn new(threads: usize) -> AnalysisPool {
        let shared = Arc::new(PoolShared {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        });
        for index in 0..threads.max(1) {
            let shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("attune-stream-{index}"))
                .spawn(move || worker(&shared));
            if let Err(error) = spawned {
                tracing::error!(%error, "cannot start a stream analysis thread");
            }
        }
        AnalysisPool { shared }
    }

    /// Runs `f` on a pool thread; `None` when it panicked.
    async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(f)).ok();
            let _ = tx.send(result);
        });
        self.shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(job);
        self.shared.ready.notify_one();
        rx.await.ok().flatten()
    }
}

fn worker(shared: &PoolShared) {
    loop {
        let job = {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if let Some(job) = queue.pop_front() {
                    break job;
                }
                queue = shared
                    .ready
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        job();
    }
}

/// Work for a session's analysis, in the order the session produced it.
enum Work {
    /// A binary frame, with when it arrived.
    Media {
        segment: u64,
        bytes: Vec<u8>,
        arrived: Instant,
    },
    /// Frames are raw PCM from now on.
    AudioFormat(AudioFormat),
    /// The stream ended: analyze what is held back, then report [`AnalysisEvent::Drained`].
    Finish,
}

/// What the analysis tells the session.
#[derive(Debug)]
pub(crate) enum AnalysisEvent {
    /// Output of one batch of frames.
    Output(LiveOutput),
    /// Everything queued before `Finish` was analyzed.
    Drained,
    /// The analysis failed (a panic in the media path: a bug); the session must close.
    Failed(ServiceError),
}

/// Whether a frame was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enqueued {
    /// Queued for analysis.
    Queued,
    /// Not queued: the session already holds `max_queued_bytes` of unanalyzed frames.
    Refused,
}

/// The session side of its analysis task.
#[derive(Debug)]
pub(crate) struct AnalysisHandle {
    tx: mpsc::UnboundedSender<Work>,
    queued_bytes: Arc<AtomicU64>,
    max_queued_bytes: u64,
}

impl AnalysisHandle {
    /// Starts the analysis task of a session analyzed by `model`; its events arrive on the
    /// returned receiver.
    pub(crate) fn start(
        pool: AnalysisPool,
        settings: &StreamSettings,
        model: Model,
        endpoint: Endpoint,
    ) -> (AnalysisHandle, mpsc::UnboundedReceiver<AnalysisEvent>) {
        let (tx, work_rx) = mpsc::unbounded_channel();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let queued_bytes = Arc::new(AtomicU64::new(0));
        let task = AnalysisTask {
            pool,
            analyzer: Some(Box::new(LiveAnalyzer::new(model, endpoint))),
            work: work_rx,
            events: events_tx,
            queued_bytes: Arc::clone(&queued_bytes),
            max_lag: settings.max_lag,
        };
        tokio::spawn(task.run());
        let handle = AnalysisHandle {
            tx,
            queued_bytes,
            max_queued_bytes: settings.max_queued_bytes,
        };
        (handle, events_rx)
    }

    /// Queues a binary frame, unless the session already holds its maximum of unanalyzed
    /// bytes.
    pub(crate) fn media(&self, segment: u64, bytes: Vec<u8>) -> Enqueued {
        let size = bytes.len() as u64;
        let held = self.queued_bytes.load(Ordering::Acquire);
        if held > 0 && held + size > self.max_queued_bytes {
            return Enqueued::Refused;
        }
        self.queued_bytes.fetch_add(size, Ordering::AcqRel);
        let work = Work::Media {
            segment,
            bytes,
            arrived: Instant::now(),
        };
        if self.tx.send(work).is_err() {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
        }
        Enqueued::Queued
    }

    /// Frames are raw PCM in `format` from now on.
    pub(crate) fn audio_format(&self, format: AudioFormat) {
        let _ = self.tx.send(Work::AudioFormat(format));
    }

    /// The stream ended.
    pub(crate) fn finish(&self) {
        let _ = self.tx.send(Work::Finish);
    }

    /// Bytes queued and not yet analyzed.
    pub(crate) fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Acquire)
    }
}

struct AnalysisTask {
    pool: AnalysisPool,
    analyzer: Option<Box<LiveAnalyzer>>,
    work: mpsc::UnboundedReceiver<Work>,
    events: mpsc::UnboundedSender<AnalysisEvent>,
    queued_bytes: Arc<AtomicU64>,
    max_lag: Duration,
}

impl AnalysisTask {
    async fn run(mut self) {
        while let Some(first) = self.work.recv().await {
            let mut batch = vec![first];
            while let Ok(more) = self.work.try_recv() {
                batch.push(more);
            }
            let finish = batch.iter().any(|w| matches!(w, Work::Finish));
            let bytes: u64 = batch
                .iter()
                .map(|w| match w {
                    Work::Media { bytes, .. } => bytes.len() as u64,
                    _ => 0,
                })
                .sum();
            let Some(mut analyzer) = self.analyzer.take() else {
                return;
            };
            let started = Instant::now();
            let max_lag = self.max_lag;
            let result = self
                .pool
                .run(move || {
                    let output = process(&mut analyzer, batch, started, max_lag);
                    (analyzer, output)
                })
                .await;
            self.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
            let Some((analyzer, output)) = result else {
                let error = ServiceError::with_message(
                    ErrorCode::Ih1001,
                    "the analysis of this session failed; reconnect to start a new session",
                );
                tracing::error!("stream analysis panicked");
                let _ = self.events.send(AnalysisEvent::Failed(error));
                return;
            };
            self.analyzer = Some(analyzer);
            let failed = output.fatal.is_some();
            if !output.is_empty() && self.events.send(AnalysisEvent::Output(output)).is_err() {
                return;
            }
            if failed {
                return;
            }
            if finish {
                let _ = self.events.send(AnalysisEvent::Drained);
                return;
            }
        }
    }
}

/// Runs one batch on a pool thread.
fn process(
    analyzer: &mut LiveAnalyzer,
    batch: Vec<Work>,
    started: Instant,
    max_lag: Duration,
) -> LiveOutput {
    let mut out = LiveOutput::default();
    for work in batch {
        match work {
            Work::Media {
                segment,
                bytes,
                arrived,
            } => {
                let behind = started.duration_since(arrived) > max_lag;
                out.extend(analyzer.push(segment, &bytes, behind));
            }
            Work::AudioFormat(format) => {
                if let Err(error) = analyzer.set_audio_format(format) {
                    out.fatal.get_or_insert(error);
                }
            }
            Work::Finish => out.extend(analyzer.finish()),
        }
        if out.fatal.is_some() {
            break;
        }
    }
    out
}
