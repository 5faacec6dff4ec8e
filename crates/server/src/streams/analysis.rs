//! The media side of a stream session: a task per session that hands the session's queued
//! frames to a shared pool of analysis threads, in order, and reports what they produced.
//!
//! The socket side never waits for analysis: it queues frames ([`AnalysisHandle::media`])
//! and goes back to reading. The analysis of one session runs on at most one pool thread at
//! a time (its [`LiveAnalyzer`] moves to the thread with a batch of frames and comes back
//! with the output). Batches run on the instance's one analysis [`Executor`], in its stream
//! lane: first come, first served across sessions, so a busy session cannot starve the
//! others, and ahead of waiting uploads (see [`crate::executor`]).
//!
//! Video is read ahead: the pictures of a session's next window that already arrived are
//! decoded and read ([`LiveAnalyzer::read_ahead`]) in a batch of their own when no frame
//! waits, and before each frame of a batch otherwise, so the frame that closes a window waits
//! only for the video that came with it, and a backlog's pictures are read frame by frame
//! rather than all by the frame that closes the window.
//!
//! Bounded memory: a frame that waited longer than [`StreamSettings::max_lag`] before its
//! batch started is behind; it is still demuxed and decoded (container and codec state must
//! follow the stream) but not analyzed, and the windows it covered come back as
//! `coverage.dropped`. Decoding alone is several times cheaper than feature extraction, so a
//! lagging session catches up. A frame that arrives while the session already holds
//! [`StreamSettings::max_queued_bytes`] of unread frames is treated the same way at once
//! ([`Enqueued::DecodeOnly`]): its bytes are kept, because every later frame of a continuous
//! WebM/fMP4/TS stream depends on them, and only its analysis is skipped. Memory stays bounded
//! by [`StreamSettings::max_backlog_bytes`]: a session whose unread frames would pass it cannot
//! even be decoded in time, and is closed cleanly ([`Enqueued::Overflow`], `ih1002`) rather
//! than fed a stream with a hole in it.
//!
//! Words: a session that transcribes ([`StreamSettings::transcribes`], when the process has a
//! transcriber) has a third task, its transcription ([`TranscriptTask`]): after each batch the
//! analysis hands it what the batch heard (samples and speaker turns, [`Heard`]), and it runs
//! the session's [`LiveTranscript`] on the executor's transcript lane, apart from the
//! analysis, so a decoding never delays the session's window events. The words it finalizes
//! go to the session (realtime: `transcript.generated`) and back to the analysis
//! ([`LiveAnalyzer::add_utterances`]). A transcription that falls behind lets go of audio
//! (its words are lost, the session goes on): audio that waited longer than
//! [`transcript_max_lag`] for its step, and audio arriving while [`MAX_TRANSCRIPT_HELD_S`]
//! wait already (a memory bound for clients sending much faster than real time). At the end the analysis waits for the transcription's last words before
//! it reports [`AnalysisEvent::Drained`], so they come before `session.ended` (within the
//! drain deadline, as any drain).

use super::registry::StreamSettings;
use crate::executor::{Executor, Lane};
pub(crate) use attune_core::backlog::Enqueued;
use attune_core::backlog::MediaBacklog;
use attune_core::live::{Heard, LiveAnalyzer, LiveOutput, LiveTranscript};
use attune_core::transcript::Utterance;
use attune_core::wire::{AudioFormat, Endpoint, Model};
use attune_core::{ErrorCode, ServiceError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Audio a session's transcription may hold unread, s: audio arriving beyond is not
/// transcribed.
pub(crate) const MAX_TRANSCRIPT_HELD_S: f64 = 120.0;
/// The least [`transcript_max_lag`]: a step waits behind stream batches and a decoding takes
/// about half a second, and a segment is final only at a pause anyway.
const MIN_TRANSCRIPT_LAG: Duration = Duration::from_secs(30);

/// Longest audio waits for its transcription step before it is let go: the analysis's
/// `max_lag`, at least [`MIN_TRANSCRIPT_LAG`].
pub(crate) fn transcript_max_lag(settings: &StreamSettings) -> Duration {
    settings.max_lag.max(MIN_TRANSCRIPT_LAG)
}
const SAMPLE_RATE: f64 = 16_000.0;

/// Work for a session's analysis, in the order the session produced it.
enum Work {
    /// A binary frame, with when it arrived and whether saturation already decided to skip
    /// its analysis.
    Media {
        segment: u64,
        bytes: Vec<u8>,
        arrived: Instant,
        skip: bool,
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
    /// Words of the session's transcript that became final (session time, in order).
    Words(Vec<Utterance>),
    /// Everything queued before `Finish` was analyzed.
    Drained,
    /// The analysis failed (a panic in the media path: a bug); the session must close.
    Failed(ServiceError),
}

/// The session side of its analysis task.
#[derive(Debug)]
pub(crate) struct AnalysisHandle {
    tx: mpsc::UnboundedSender<Work>,
    queued_bytes: Arc<AtomicU64>,
    backlog: MediaBacklog,
}

impl AnalysisHandle {
    /// Starts the analysis task of a session analyzed by `model`; its events arrive on the
    /// returned receiver.
    pub(crate) fn start(
        pool: Executor,
        settings: &StreamSettings,
        model: Model,
        endpoint: Endpoint,
    ) -> (AnalysisHandle, mpsc::UnboundedReceiver<AnalysisEvent>) {
        let (tx, work_rx) = mpsc::unbounded_channel();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let queued_bytes = Arc::new(AtomicU64::new(0));
        let spare = pool.clone();
        let mut analyzer = LiveAnalyzer::new(model, endpoint)
            .defer_video()
            .with_spare_core(Arc::new(move || spare.has_idle_thread()));
        let mut words = None;
        if settings.transcribes(endpoint) {
            analyzer = analyzer.keep_heard();
            words = Some(TranscriptTask::start(
                pool.clone(),
                events_tx.clone(),
                endpoint == Endpoint::Realtime,
                transcript_max_lag(settings),
            ));
        }
        let task = AnalysisTask {
            pool,
            analyzer: Some(Box::new(analyzer)),
            work: work_rx,
            events: events_tx,
            queued_bytes: Arc::clone(&queued_bytes),
            max_lag: settings.max_lag,
            words,
        };
        tokio::spawn(task.run());
        let handle = AnalysisHandle {
            tx,
            queued_bytes,
            backlog: MediaBacklog::new(settings.max_queued_bytes, settings.max_backlog_bytes),
        };
        (handle, events_rx)
    }

    /// Queues a binary frame: for analysis while the session's unread frames stay within
    /// `max_queued_bytes`, for decoding only beyond, not at all beyond `max_backlog_bytes`.
    pub(crate) fn media(&self, segment: u64, bytes: Vec<u8>) -> Enqueued {
        let size = bytes.len() as u64;
        let held = self.queued_bytes.load(Ordering::Acquire);
        let outcome = self.backlog.admit(held, size);
        if outcome == Enqueued::Overflow {
            return outcome;
        }
        self.queued_bytes.fetch_add(size, Ordering::AcqRel);
        let work = Work::Media {
            segment,
            bytes,
            arrived: Instant::now(),
            skip: outcome == Enqueued::DecodeOnly,
        };
        if self.tx.send(work).is_err() {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
        }
        outcome
    }

    /// The session's hard bound on unread frames.
    pub(crate) fn max_backlog_bytes(&self) -> u64 {
        self.backlog.max_backlog_bytes()
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
    pool: Executor,
    analyzer: Option<Box<LiveAnalyzer>>,
    work: mpsc::UnboundedReceiver<Work>,
    events: mpsc::UnboundedSender<AnalysisEvent>,
    queued_bytes: Arc<AtomicU64>,
    max_lag: Duration,
    /// The session's transcription, when it transcribes.
    words: Option<WordsHandle>,
}

impl AnalysisTask {
    async fn run(mut self) {
        loop {
            // Between frames, the pictures of the next window are decoded and read (on the
            // executor, as any batch), so the frame that closes it finds little video left.
            let next = match self.work.try_recv() {
                Ok(work) => Some(work),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
                Err(mpsc::error::TryRecvError::Empty) => {
                    if self.analyzer.as_ref().is_some_and(|a| a.has_work_ahead()) {
                        if !self.read_ahead().await {
                            return;
                        }
                        continue;
                    }
                    self.work.recv().await
                }
            };
            let Some(first) = next else {
                return;
            };
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
            let said = self
                .words
                .as_mut()
                .map(WordsHandle::said)
                .unwrap_or_default();
            let result = self
                .pool
                .run(Lane::Stream, move || {
                    analyzer.add_utterances(&said);
                    let output = process(&mut analyzer, batch, started, max_lag);
                    let heard = analyzer.take_heard();
                    (analyzer, output, heard)
                })
                .await;
            self.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
            let Some((analyzer, output, heard)) = result else {
                self.fail();
                return;
            };
            self.analyzer = Some(analyzer);
            let failed = output.fatal.is_some();
            if !output.is_empty() && self.events.send(AnalysisEvent::Output(output)).is_err() {
                return;
            }
            if let Some(words) = &mut self.words {
                words.hear(heard);
            }
            if failed {
                return;
            }
            if finish {
                // The transcription's last words come before the end.
                if let Some(words) = self.words.take() {
                    words.finish().await;
                }
                let _ = self.events.send(AnalysisEvent::Drained);
                return;
            }
        }
    }
}

impl AnalysisTask {
    /// Runs [`LiveAnalyzer::read_ahead`] on the executor; `false` when it panicked (the
    /// session was told and must close).
    async fn read_ahead(&mut self) -> bool {
        let Some(mut analyzer) = self.analyzer.take() else {
            return false;
        };
        let result = self
            .pool
            .run(Lane::Stream, move || {
                analyzer.read_ahead();
                analyzer
            })
            .await;
        match result {
            Some(analyzer) => {
                self.analyzer = Some(analyzer);
                true
            }
            None => {
                self.fail();
                false
            }
        }
    }

    /// Tells the session its analysis failed (a panic in the media path: a bug).
    fn fail(&self) {
        let error = ServiceError::with_message(
            ErrorCode::Ih1001,
            "the analysis of this session failed; reconnect to start a new session",
        );
        tracing::error!("stream analysis panicked");
        let _ = self.events.send(AnalysisEvent::Failed(error));
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
                skip,
            } => {
                // The video of the frames before this one first (module docs).
                analyzer.read_ahead();
                let behind = skip || started.duration_since(arrived) > max_lag;
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

/// The analysis side of a session's transcription.
struct WordsHandle {
    tx: mpsc::UnboundedSender<Listen>,
    /// Samples handed over and not yet transcribed.
    queued_samples: Arc<AtomicUsize>,
    /// Set once the transcription stopped: nothing more is handed over.
    stopped: Arc<AtomicBool>,
    /// The latest `turns_until` handed over.
    turns_until: f64,
    /// Final words for the analyzer.
    said: mpsc::UnboundedReceiver<Vec<Utterance>>,
}

/// Work for a session's transcription.
enum Listen {
    /// What a batch of the analysis heard, and when it was handed over.
    Heard(Heard, Instant),
    /// The stream ended: transcribe what is held, send the last words, then answer.
    Finish(oneshot::Sender<()>),
}

impl WordsHandle {
    /// Hands over what a batch heard; only its speaker turns when the transcription already
    /// holds [`MAX_TRANSCRIPT_HELD_S`].
    fn hear(&mut self, mut heard: Heard) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        let max = (MAX_TRANSCRIPT_HELD_S * SAMPLE_RATE) as usize;
        if self.queued_samples.load(Ordering::Acquire) >= max {
            heard.audio.clear();
        }
        if heard.is_empty() && heard.turns_until <= self.turns_until {
            return;
        }
        self.turns_until = heard.turns_until;
        self.queued_samples
            .fetch_add(heard.samples(), Ordering::AcqRel);
        let _ = self.tx.send(Listen::Heard(heard, Instant::now()));
    }

    /// The words finalized since the last call (for the analyzer).
    fn said(&mut self) -> Vec<Utterance> {
        let mut out = Vec::new();
        while let Ok(words) = self.said.try_recv() {
            out.extend(words);
        }
        out
    }

    /// Waits until the transcription sent its last words (or ended).
    async fn finish(self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Listen::Finish(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// A session's transcription (module docs): a task that runs the session's [`LiveTranscript`]
/// on the executor's transcript lane, one step at a time, over everything heard since the
/// previous step.
struct TranscriptTask {
    pool: Executor,
    /// `None` before the first step (the process's transcriber may still have to load, which
    /// is done on the executor) and once transcription stopped.
    transcript: Option<Box<LiveTranscript>>,
    /// Set when transcription stopped (no transcriber, an error, a panic): what arrives is
    /// dropped, and the analysis stops handing audio over.
    stopped: Arc<AtomicBool>,
    work: mpsc::UnboundedReceiver<Listen>,
    queued_samples: Arc<AtomicUsize>,
    events: mpsc::UnboundedSender<AnalysisEvent>,
    /// Whether the session is told the words (realtime).
    tell_session: bool,
    /// See [`transcript_max_lag`].
    max_lag: Duration,
    said: mpsc::UnboundedSender<Vec<Utterance>>,
}

impl TranscriptTask {
    fn start(
        pool: Executor,
        events: mpsc::UnboundedSender<AnalysisEvent>,
        tell_session: bool,
        max_lag: Duration,
    ) -> WordsHandle {
        let (tx, work) = mpsc::unbounded_channel();
        let (said_tx, said) = mpsc::unbounded_channel();
        let queued_samples = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        let task = TranscriptTask {
            pool,
            transcript: None,
            stopped: Arc::clone(&stopped),
            work,
            queued_samples: Arc::clone(&queued_samples),
            events,
            tell_session,
            max_lag,
            said: said_tx,
        };
        tokio::spawn(task.run());
        WordsHandle {
            tx,
            queued_samples,
            stopped,
            turns_until: 0.0,
            said,
        }
    }

    async fn run(mut self) {
        while let Some(first) = self.work.recv().await {
            let mut heard = Heard::default();
            let mut finished = None;
            let mut next = Some(first);
            let (mut samples, mut dropped) = (0, 0);
            let now = Instant::now();
            while let Some(work) = next.take().or_else(|| self.work.try_recv().ok()) {
                match work {
                    Listen::Heard(mut h, at) => {
                        samples += h.samples();
                        if now.duration_since(at) > self.max_lag {
                            dropped += h.samples();
                            h.audio.clear();
                        }
                        heard.extend(h);
                    }
                    Listen::Finish(done) => {
                        finished = Some(done);
                        break;
                    }
                }
            }
            if dropped > 0 {
                tracing::info!(
                    seconds = dropped as f64 / SAMPLE_RATE,
                    "transcription behind: the oldest audio is not transcribed"
                );
            }
            let words = self.step(heard, finished.is_some()).await;
            self.queued_samples.fetch_sub(samples, Ordering::AcqRel);
            if !words.is_empty() {
                if self.tell_session
                    && self
                        .events
                        .send(AnalysisEvent::Words(words.clone()))
                        .is_err()
                {
                    return;
                }
                let _ = self.said.send(words);
            }
            if let Some(done) = finished {
                let _ = done.send(());
                return;
            }
        }
    }

    /// One transcription step on the executor: what was heard, then, at the end, the rest.
    async fn step(&mut self, heard: Heard, finish: bool) -> Vec<Utterance> {
        if self.stopped.load(Ordering::Acquire) {
            return Vec::new();
        }
        let transcript = self.transcript.take();
        let result = self
            .pool
            .run(Lane::Transcript, move || {
                // The transcriber's products run on one thread (`attune_voice::on_one_thread`):
                // a decoding holds one core, as every executor task does.
                let mut transcript = match transcript {
                    Some(t) => t,
                    None => Box::new(LiveTranscript::new(attune_core::transcript::shared()?)),
                };
                let mut words = transcript.push(heard);
                if finish {
                    words.extend(transcript.finish());
                }
                Some((transcript, words))
            })
            .await;
        match result {
            Some(Some((transcript, words))) => {
                if let Some(error) = transcript.error() {
                    tracing::warn!(%error, "the session's transcription failed; it stops here");
                    self.stopped.store(true, Ordering::Release);
                } else {
                    self.transcript = Some(transcript);
                }
                words
            }
            // No transcriber in this process: nothing to transcribe with.
            Some(None) => {
                self.stopped.store(true, Ordering::Release);
                Vec::new()
            }
            None => {
                tracing::error!("the session's transcription panicked; it stops here");
                self.stopped.store(true, Ordering::Release);
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn settings(max_queued_bytes: u64, max_backlog_bytes: u64) -> StreamSettings {
        StreamSettings {
            max_queued_bytes,
            max_backlog_bytes,
            // Only saturation skips analysis here, never lag.
            max_lag: Duration::from_secs(600),
            ..StreamSettings::default()
        }
    }

    /// Waits until the analysis read everything queued, gathering its outputs.
    async fn settle(
        handle: &AnalysisHandle,
        events: &mut mpsc::UnboundedReceiver<AnalysisEvent>,
        out: &mut LiveOutput,
    ) {
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                while let Ok(event) = events.try_recv() {
                    match event {
                        AnalysisEvent::Output(o) => out.extend(o),
                        other => panic!("{other:?}"),
                    }
                }
                if handle.queued_bytes() == 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the analysis never caught up");
    }

    /// Issue 11, defect 6: frames past the queue bound of one continuous WebM recording are
    /// kept and decoded, not discarded, so the frames after them still decode and the later
    /// windows are analyzed; the skipped span is reported as dropped.
    ///
    /// On a current-thread runtime nothing runs between `media` calls, so the backlog each
    /// frame meets is exactly the bytes queued before it: the saturation is forced, not raced.
    #[tokio::test]
    async fn a_saturated_continuous_webm_keeps_its_bytes_and_later_windows_are_analyzed() {
        let media = fixture("segments/continuous.webm");
        let (handle, mut events) = AnalysisHandle::start(
            Executor::new(1),
            &settings(15_000, 1 << 20),
            Model::Inter2,
            Endpoint::StreamV1,
        );
        let chunks: Vec<&[u8]> = media.chunks(5_000).collect();
        let mut out = LiveOutput::default();
        let mut outcomes = Vec::new();
        // A burst: about 3.6 s of media at once, more than the 15 000 bytes of the bound.
        for (segment, chunk) in chunks[..7].iter().enumerate() {
            outcomes.push(handle.media(segment as u64, chunk.to_vec()));
        }
        use Enqueued::{DecodeOnly, Queued};
        assert_eq!(
            outcomes,
            [Queued, Queued, Queued, DecodeOnly, DecodeOnly, DecodeOnly, DecodeOnly]
        );
        settle(&handle, &mut events, &mut out).await;
        // Then the rest at the pace analysis keeps up with: never more than the bound waiting.
        for (i, group) in chunks[7..].chunks(3).enumerate() {
            for (j, chunk) in group.iter().enumerate() {
                let segment = (7 + i * 3 + j) as u64;
                assert_eq!(handle.media(segment, chunk.to_vec()), Queued);
            }
            settle(&handle, &mut events, &mut out).await;
        }
        handle.finish();
        let drained = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(event) = events.recv().await {
                match event {
                    AnalysisEvent::Output(o) => out.extend(o),
                    AnalysisEvent::Drained => return true,
                    AnalysisEvent::Failed(error) => panic!("{error:?}"),
                    // A v1 session transcribes only with `transcribe_streams`.
                    AnalysisEvent::Words(words) => panic!("{words:?}"),
                }
            }
            false
        })
        .await
        .expect("the analysis never drained");
        assert!(drained);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert!(out.fatal.is_none(), "{:?}", out.fatal);
        // The window the skipped span touched is dropped; the one after it is analyzed, which
        // needs every byte of the stream before it to have been demuxed.
        assert_eq!(out.dropped.len(), 1, "{:?}", out.dropped);
        assert_eq!(out.dropped[0].start, 0.0);
        assert_eq!(out.dropped[0].end, 5.0);
        let analyzed: Vec<(f64, f64)> = out.windows.iter().map(|w| (w.start, w.end)).collect();
        assert_eq!(analyzed.len(), 1, "{analyzed:?}");
        assert_eq!(analyzed[0].0, 5.0);
        assert!(analyzed[0].1 > 8.5, "{analyzed:?}");
    }

    /// Past the hard bound a frame is not queued at all (the session must then end: see
    /// `StreamSession::on_media_backlog_overflow`); a lone frame is always queued.
    #[tokio::test]
    async fn the_backlog_has_a_hard_bound() {
        let (handle, _events) = AnalysisHandle::start(
            Executor::new(1),
            &settings(10, 25),
            Model::Inter2,
            Endpoint::StreamV1,
        );
        assert_eq!(handle.media(0, vec![0; 40]), Enqueued::Queued);
        let (handle, _events) = AnalysisHandle::start(
            Executor::new(1),
            &settings(10, 25),
            Model::Inter2,
            Endpoint::StreamV1,
        );
        assert_eq!(handle.media(0, vec![0; 8]), Enqueued::Queued);
        assert_eq!(handle.media(1, vec![0; 8]), Enqueued::DecodeOnly);
        assert_eq!(handle.media(2, vec![0; 8]), Enqueued::DecodeOnly);
        assert_eq!(handle.media(3, vec![0; 8]), Enqueued::Overflow);
        assert_eq!(handle.queued_bytes(), 24);
        assert_eq!(handle.max_backlog_bytes(), 25);
    }
}
