//! The one analysis executor of an instance: a fixed set of threads (`analysis_threads`)
//! running upload analyses, stream analysis batches and live transcription alike.
//!
//! Hand-written rather than `spawn_blocking`: tokio's blocking pool grows a thread per
//! waiting task (up to 512), so hundreds of sessions would oversubscribe the cores and every
//! session's latency would suffer together; a fixed set keeps one task per core running and
//! queues the rest.
//!
//! Three queues, one per [`Lane`], each first come, first served:
//! - **Streams first.** A free thread takes the oldest waiting stream batch before any
//!   upload: a batch is short (the frames a session received since its last batch) and a
//!   live session's events wait on it.
//! - **Then live transcription, never on every thread.** A session's transcription step
//!   (a Whisper decoding, about half a CPU second, every 5-15 s of speech) waits behind stream
//!   batches but not behind uploads, and at most `threads - 1` run at once (one with a single
//!   thread), so a decoding never holds every thread while window batches wait. Transcripts
//!   are late by nature (a segment is final at a pause); a window event is not.
//! - **Uploads never take every thread.** At most `threads - 1` upload analyses run at once
//!   (one when there is a single thread), so with two threads or more a long upload cannot
//!   hold back a live session's windows: one thread is always left to the streams' queue.
//!   Uploads still use every thread the streams leave idle up to that bound.
//! - With a single thread an upload that started runs to its end (a whole-file analysis is
//!   one task); stream batches queued meanwhile run before the next upload.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use tokio::sync::oneshot;

type Task = Box<dyn FnOnce() + Send>;

/// Which queue a task waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// A stream session's batch of frames: latency-bound, served first.
    Stream,
    /// A live session's transcription step: served after stream batches, never on every
    /// thread.
    Transcript,
    /// An upload's analysis: throughput-bound, never on every thread.
    Upload,
}

/// The executor (see the module docs). Cloning shares it.
#[derive(Clone)]
pub struct Executor {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<Queues>,
    ready: Condvar,
    threads: usize,
    /// Threads running a task now.
    busy: AtomicUsize,
}

#[derive(Default)]
struct Queues {
    streams: VecDeque<Task>,
    transcripts: VecDeque<Task>,
    transcripts_running: usize,
    uploads: VecDeque<Task>,
    uploads_running: usize,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("threads", &self.shared.threads)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor of `threads` threads (at least one). They live as long as the process.
    pub fn new(threads: usize) -> Executor {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            state: Mutex::new(Queues::default()),
            ready: Condvar::new(),
            threads,
            busy: AtomicUsize::new(0),
        });
        for index in 0..threads {
            let shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("attune-analysis-{index}"))
                .spawn(move || work(&shared));
            if let Err(error) = spawned {
                tracing::error!(%error, "cannot start an analysis thread");
            }
        }
        Executor { shared }
    }

    /// The number of threads.
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Whether a thread sits idle with no stream batch waiting: a core a task may borrow
    /// for a moment (a stream session reads its closing frame's video beside its audio,
    /// `attune_core::live::LiveAnalyzer::with_spare_core`) without taking it from another
    /// session.
    pub fn has_idle_thread(&self) -> bool {
        self.shared.busy.load(Ordering::Acquire) < self.shared.threads
            && self.lock().streams.is_empty()
    }

    /// How many upload analyses may run at once: every thread but one, at least one.
    pub fn upload_capacity(&self) -> usize {
        upload_capacity(self.shared.threads)
    }

    /// Runs `f` on an analysis thread from `lane`'s queue; `None` when it panicked.
    pub async fn run<T: Send + 'static>(
        &self,
        lane: Lane,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.submit(lane, move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(f)).ok();
            let _ = tx.send(result);
        });
        rx.await.ok().flatten()
    }

    /// Queues `task` in `lane` without waiting for it.
    fn submit(&self, lane: Lane, task: impl FnOnce() + Send + 'static) {
        let mut queues = self.lock();
        match lane {
            Lane::Stream => queues.streams.push_back(Box::new(task)),
            Lane::Transcript => queues.transcripts.push_back(Box::new(task)),
            Lane::Upload => queues.uploads.push_back(Box::new(task)),
        }
        drop(queues);
        // Every thread rechecks: the one woken may not be allowed an upload.
        self.shared.ready.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn upload_capacity(threads: usize) -> usize {
    threads.saturating_sub(1).max(1)
}

/// The next task a free thread may take, by the rules of the module docs.
fn next(queues: &mut Queues, threads: usize) -> Option<(Lane, Task)> {
    if let Some(task) = queues.streams.pop_front() {
        return Some((Lane::Stream, task));
    }
    if queues.transcripts_running < upload_capacity(threads) {
        if let Some(task) = queues.transcripts.pop_front() {
            queues.transcripts_running += 1;
            return Some((Lane::Transcript, task));
        }
    }
    if queues.uploads_running < upload_capacity(threads) {
        if let Some(task) = queues.uploads.pop_front() {
            queues.uploads_running += 1;
            return Some((Lane::Upload, task));
        }
    }
    None
}

fn work(shared: &Shared) {
    loop {
        let (lane, task) = {
            let mut queues = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if let Some(found) = next(&mut queues, shared.threads) {
                    break found;
                }
                queues = shared
                    .ready
                    .wait(queues)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        // Tasks catch their own panics (`Executor::run`), so the thread lives on.
        shared.busy.fetch_add(1, Ordering::AcqRel);
        task();
        shared.busy.fetch_sub(1, Ordering::AcqRel);
        if lane != Lane::Stream {
            let mut queues = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            match lane {
                Lane::Transcript => queues.transcripts_running -= 1,
                _ => queues.uploads_running -= 1,
            }
            drop(queues);
            shared.ready.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// An upload task that runs until the test releases it, telling when it started.
    fn blocking_upload(
        executor: &Executor,
        started: mpsc::Sender<&'static str>,
        name: &'static str,
    ) -> mpsc::Sender<()> {
        let (release, wait) = mpsc::channel::<()>();
        executor.submit(Lane::Upload, move || {
            let _ = started.send(name);
            let _ = wait.recv();
        });
        release
    }

    /// Two threads, two long uploads that never end while the test runs, then the windows of
    /// three live sessions: every session's batches run while both uploads are still
    /// submitted and unfinished. One upload runs, the other waits for the streams' thread to
    /// be free of stream work and for the running upload to end.
    #[test]
    fn a_long_upload_does_not_starve_live_sessions() {
        let executor = Executor::new(2);
        let (started_tx, started) = mpsc::channel();
        let release_a = blocking_upload(&executor, started_tx.clone(), "upload-a");
        let release_b = blocking_upload(&executor, started_tx.clone(), "upload-b");
        assert_eq!(started.recv().unwrap(), "upload-a");
        for _session in 0..3 {
            for batch in 0..4 {
                let tx = started_tx.clone();
                executor.submit(Lane::Stream, move || {
                    let _ = tx.send(if batch == 3 { "last-batch" } else { "batch" });
                });
            }
        }
        // All twelve stream batches run on the thread uploads may not take, while upload A
        // still holds the other and upload B still waits.
        let mut seen = Vec::new();
        for _ in 0..12 {
            seen.push(started.recv().unwrap());
        }
        assert_eq!(seen.iter().filter(|s| **s == "last-batch").count(), 3);
        assert!(!seen.contains(&"upload-b"), "{seen:?}");
        // Only when A ends does B start.
        release_a.send(()).unwrap();
        assert_eq!(started.recv().unwrap(), "upload-b");
        release_b.send(()).unwrap();
    }

    /// A stream session may borrow a core only while a thread is idle: with both threads of
    /// two busy, or a stream batch waiting, it may not.
    #[test]
    fn a_spare_core_is_one_no_task_runs_on() {
        let executor = Executor::new(2);
        assert!(executor.has_idle_thread());
        let (started_tx, started) = mpsc::channel();
        let release_a = blocking_upload(&executor, started_tx.clone(), "upload-a");
        assert_eq!(started.recv().unwrap(), "upload-a");
        assert!(executor.has_idle_thread(), "one of two threads is busy");
        let (release_b, wait_b) = mpsc::channel::<()>();
        let tx = started_tx.clone();
        executor.submit(Lane::Stream, move || {
            let _ = tx.send("stream");
            let _ = wait_b.recv();
        });
        assert_eq!(started.recv().unwrap(), "stream");
        assert!(!executor.has_idle_thread(), "both threads are busy");
        release_a.send(()).unwrap();
        // The upload's thread comes free (it says so once its task has returned).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !executor.has_idle_thread() {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread never came free"
            );
            std::thread::yield_now();
        }
        release_b.send(()).unwrap();
    }

    /// A free thread takes waiting stream batches before waiting uploads.
    #[test]
    fn streams_are_served_before_waiting_uploads() {
        let mut queues = Queues::default();
        let (tx, rx) = mpsc::channel();
        for name in ["upload", "stream-1", "stream-2"] {
            let tx = tx.clone();
            let task: Task = Box::new(move || tx.send(name).unwrap());
            if name == "upload" {
                queues.uploads.push_back(task);
            } else {
                queues.streams.push_back(task);
            }
        }
        let mut order = Vec::new();
        while let Some((_, task)) = next(&mut queues, 2) {
            task();
            order.push(rx.recv().unwrap());
        }
        assert_eq!(order, ["stream-1", "stream-2", "upload"]);
        assert_eq!(queues.uploads_running, 1);
    }

    /// Transcription waits behind stream batches, goes before waiting uploads, and never
    /// takes every thread.
    #[test]
    fn transcripts_come_after_streams_before_uploads_and_leave_a_thread() {
        let mut queues = Queues::default();
        let (tx, rx) = mpsc::channel();
        for (lane, name) in [
            (Lane::Upload, "upload"),
            (Lane::Transcript, "words-1"),
            (Lane::Transcript, "words-2"),
            (Lane::Stream, "stream"),
        ] {
            let tx = tx.clone();
            let task: Task = Box::new(move || tx.send(name).unwrap());
            match lane {
                Lane::Stream => queues.streams.push_back(task),
                Lane::Transcript => queues.transcripts.push_back(task),
                Lane::Upload => queues.uploads.push_back(task),
            }
        }
        // Three threads: two may transcribe at once, uploads have their own two.
        let mut order = Vec::new();
        while let Some((_, task)) = next(&mut queues, 3) {
            task();
            order.push(rx.recv().unwrap());
        }
        assert_eq!(order, ["stream", "words-1", "words-2", "upload"]);
        assert_eq!(queues.transcripts_running, 2);
        // Two threads: one transcription runs, the next waits for it, not for a thread.
        let mut queues = Queues::default();
        for _ in 0..2 {
            queues.transcripts.push_back(Box::new(|| {}));
        }
        assert!(matches!(next(&mut queues, 2), Some((Lane::Transcript, _))));
        assert!(next(&mut queues, 2).is_none());
    }

    #[test]
    fn uploads_leave_one_thread_to_streams_when_there_are_two_or_more() {
        assert_eq!(upload_capacity(1), 1);
        assert_eq!(upload_capacity(2), 1);
        assert_eq!(upload_capacity(8), 7);
    }

    #[tokio::test]
    async fn a_panicking_task_answers_none_and_the_thread_lives_on() {
        let executor = Executor::new(1);
        assert_eq!(
            executor
                .run(Lane::Upload, || -> u8 { panic!("boom") })
                .await,
            None
        );
        assert_eq!(executor.run(Lane::Stream, || 7).await, Some(7));
    }
}
