//! A live session's words: what its analysis heard ([`Heard`]), transcribed as it arrives
//! ([`LiveTranscript`]).

use crate::features::SpeakerTurn;
use crate::transcript::{assign_speakers, Transcriber, TranscriptStream, Utterance};
use crate::wire::Seconds;

/// Samples per second of the session's audio.
const RATE: f64 = 16_000.0;
/// Samples handed to the transcriber at a time (0.1 s), counted from its stream's first
/// sample: what it decides (where speech starts, the lead-in it keeps, when it decodes) then
/// depends on the audio alone, not on how the analysis happened to batch it.
const FEED_SAMPLES: usize = 1_600;
/// Speaker turns kept before the latest labelled time, s: longer than any utterance a
/// transcriber holds (at most 30 s) plus the diarizer's step.
const KEEP_TURNS_S: f64 = 60.0;

/// Consecutive samples of a session's analyzed audio.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AudioRun {
    /// Session sample index of `pcm[0]` (16 kHz from the session's first sample).
    pub first_sample: u64,
    /// 16 kHz mono samples.
    pub pcm: Vec<f32>,
}

impl AudioRun {
    /// The session sample just after this run.
    pub fn end_sample(&self) -> u64 {
        self.first_sample + self.pcm.len() as u64
    }
}

/// What a session's analysis heard since it was last taken
/// ([`LiveAnalyzer::take_heard`](super::LiveAnalyzer::take_heard)).
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    /// The samples analyzed, in order, in runs of consecutive samples (a new run after media
    /// the analysis skipped).
    pub audio: Vec<AudioRun>,
    /// The speaker turns the online diarizer gave, session seconds.
    pub turns: Vec<SpeakerTurn>,
    /// Session time before which every speaker turn has been given (infinite once the
    /// stream ended or when there is no diarizer).
    pub turns_until: Seconds,
}

impl Default for Heard {
    fn default() -> Self {
        Self {
            audio: Vec::new(),
            turns: Vec::new(),
            turns_until: 0.0,
        }
    }
}

impl Heard {
    /// Whether there is neither audio nor a turn in it.
    pub fn is_empty(&self) -> bool {
        self.audio.is_empty() && self.turns.is_empty()
    }

    /// Samples of audio held.
    pub fn samples(&self) -> usize {
        self.audio.iter().map(|r| r.pcm.len()).sum()
    }

    /// Appends samples that start at session sample `first_sample`, joined to the last run
    /// when they follow it.
    pub fn push_audio(&mut self, first_sample: u64, pcm: &[f32]) {
        if pcm.is_empty() {
            return;
        }
        match self.audio.last_mut() {
            Some(last) if last.end_sample() == first_sample => last.pcm.extend_from_slice(pcm),
            _ => self.audio.push(AudioRun {
                first_sample,
                pcm: pcm.to_vec(),
            }),
        }
    }

    /// Appends what was heard after this.
    pub fn extend(&mut self, later: Heard) {
        for run in later.audio {
            self.push_audio(run.first_sample, &run.pcm);
        }
        self.turns.extend(later.turns);
        self.turns_until = self.turns_until.max(later.turns_until);
    }
}

/// One live session's transcription, each utterance given the voice the session's online
/// diarizer heard speaking it. Sans-I/O: it runs where the caller calls it, for as long as
/// the transcriber takes.
///
/// The analysis and the transcription are two steps so that a caller can run them apart (the
/// server runs a session's transcription as its own task on the analysis executor, so a
/// decoding, about half a CPU second, never holds back the session's window events):
///
/// 1. a [`LiveAnalyzer`](super::LiveAnalyzer) built with
///    [`keep_heard`](super::LiveAnalyzer::keep_heard) keeps the samples it analyzed and the
///    speaker turns its diarizer gave, in session time, until [`take_heard`](super::LiveAnalyzer::take_heard);
/// 2. a [`LiveTranscript`] is fed those ([`LiveTranscript::push`]) and gives the utterances
///    that became final, in order, with session times and speakers.
///
/// An utterance is final when the transcriber closes it (at a pause, see
/// `attune_voice::whisper::StreamTranscriber`) and the diarizer has labelled its whole span
/// (it labels 5 s steps, so a closed utterance waits up to one step for its voice): its
/// speaker is the voice whose turns overlap it most, `None` when no turn does. Audio the
/// analysis skipped (a session behind) is not transcribed: at such a gap the words held are
/// finalized and a new transcriber starts after it. After a skip the analysis restarts its
/// diarizer too, so the voice numbers after a gap are those of a new diarizer.
pub struct LiveTranscript {
    transcriber: &'static dyn Transcriber,
    /// The transcriber of the current run of consecutive audio.
    stream: Option<Box<dyn TranscriptStream>>,
    /// Session sample of the current stream's first sample.
    origin: u64,
    /// Session sample the current stream expects next.
    next: u64,
    /// Samples received for the current stream and not yet handed to it (under
    /// [`FEED_SAMPLES`]).
    unfed: Vec<f32>,
    turns: Vec<SpeakerTurn>,
    turns_until: Seconds,
    /// Closed utterances waiting for the diarizer to label their span, in order.
    waiting: Vec<Utterance>,
    /// The transcriber's first error; nothing is transcribed after it.
    error: Option<String>,
    /// Whether the latest utterance asked (ended with a question mark): the next one answers
    /// it ([`Utterance::after_question`]).
    asked: bool,
}

impl std::fmt::Debug for LiveTranscript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTranscript")
            .field("origin", &self.origin)
            .field("next", &self.next)
            .field("turns_until", &self.turns_until)
            .field("waiting", &self.waiting.len())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl LiveTranscript {
    /// A session's transcription by `transcriber` (normally [`crate::transcript::shared`]).
    pub fn new(transcriber: &'static dyn Transcriber) -> Self {
        Self {
            transcriber,
            stream: None,
            origin: 0,
            next: 0,
            unfed: Vec::with_capacity(FEED_SAMPLES),
            turns: Vec::new(),
            turns_until: 0.0,
            waiting: Vec::new(),
            error: None,
            asked: false,
        }
    }

    /// The transcriber's error, once it failed (nothing more is transcribed).
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Feeds what the analysis heard; gives the utterances that became final (session times,
    /// speakers from the turns).
    pub fn push(&mut self, heard: Heard) -> Vec<Utterance> {
        self.turns.extend(heard.turns);
        self.turns_until = self.turns_until.max(heard.turns_until);
        // Utterances final whatever the turns say: those before a gap.
        let mut before_gap = 0;
        for run in heard.audio {
            if self.stream.is_some() && run.first_sample != self.next {
                // Media the analysis skipped: what is held ends here.
                self.close_stream();
                before_gap = self.waiting.len();
            }
            self.feed(run);
        }
        let out = self.release(before_gap);
        let keep_from = self.turns_until - KEEP_TURNS_S;
        if keep_from.is_finite() {
            self.turns.retain(|t| t.end >= keep_from);
        }
        out
    }

    /// The stream ended: the words still held, every one final. Call after the last
    /// [`push`](Self::push) (whose [`Heard`] came from the analyzer's finish, so every turn
    /// is in).
    pub fn finish(&mut self) -> Vec<Utterance> {
        self.close_stream();
        self.release(usize::MAX)
    }

    fn feed(&mut self, run: AudioRun) {
        if self.error.is_some() || run.pcm.is_empty() {
            return;
        }
        if self.stream.is_none() {
            match self.transcriber.stream() {
                Ok(stream) => {
                    self.stream = Some(stream);
                    self.origin = run.first_sample;
                }
                Err(error) => {
                    self.error = Some(error);
                    return;
                }
            }
        }
        self.next = run.end_sample();
        let mut rest = run.pcm.as_slice();
        while !rest.is_empty() {
            let take = (FEED_SAMPLES - self.unfed.len()).min(rest.len());
            self.unfed.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.unfed.len() == FEED_SAMPLES {
                self.feed_unfed();
            }
        }
    }

    /// Hands the unfed samples to the stream.
    fn feed_unfed(&mut self) {
        let result = match self.stream.as_mut() {
            Some(stream) => stream.push(&self.unfed),
            None => Ok(Vec::new()),
        };
        self.unfed.clear();
        match result {
            Ok(utterances) => self.hold(utterances),
            Err(error) => {
                self.error = Some(error);
                self.stream = None;
            }
        }
    }

    fn close_stream(&mut self) {
        if !self.unfed.is_empty() {
            self.feed_unfed();
        }
        if let Some(mut stream) = self.stream.take() {
            match stream.finish() {
                Ok(utterances) => self.hold(utterances),
                Err(error) => self.error = Some(error),
            }
        }
    }

    /// Holds utterances of the current stream in session time.
    fn hold(&mut self, utterances: Vec<Utterance>) {
        let offset = self.origin as f64 / RATE;
        for mut u in utterances {
            u.text = u.text.trim().to_owned();
            if u.text.is_empty() {
                continue;
            }
            u.start += offset;
            u.end += offset;
            u.after_question = self.asked;
            self.asked = u.text.ends_with('?');
            self.waiting.push(u);
        }
    }

    /// The waiting utterances whose span is labelled, and at least the first `at_least`,
    /// with their speakers.
    fn release(&mut self, at_least: usize) -> Vec<Utterance> {
        let labelled = self
            .waiting
            .iter()
            .take_while(|u| u.end <= self.turns_until)
            .count();
        let ready = labelled.max(at_least).min(self.waiting.len());
        let mut out: Vec<Utterance> = self.waiting.drain(..ready).collect();
        assign_speakers(&mut out, &self.turns);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transcriber that "hears" one utterance per 16 000 samples pushed, numbered, spanning
    /// the middle half of that second of its stream.
    struct Counting;

    struct CountingStream {
        seen: usize,
        said: usize,
    }

    impl TranscriptStream for CountingStream {
        fn push(&mut self, pcm: &[f32]) -> Result<Vec<Utterance>, String> {
            self.seen += pcm.len();
            let mut out = Vec::new();
            while (self.said + 1) * 16_000 <= self.seen {
                let t = self.said as f64;
                out.push(Utterance {
                    start: t + 0.25,
                    end: t + 0.75,
                    speaker: None,
                    text: format!(" word {}", self.said),
                    after_question: false,
                    avg_logprob: None,
                });
                self.said += 1;
            }
            Ok(out)
        }

        fn finish(&mut self) -> Result<Vec<Utterance>, String> {
            Ok(vec![Utterance {
                start: self.seen as f64 / RATE,
                end: self.seen as f64 / RATE,
                speaker: None,
                text: "end".into(),
                after_question: false,
                avg_logprob: None,
            }])
        }
    }

    impl Transcriber for Counting {
        fn transcribe(&self, _pcm: &[f32]) -> Result<Vec<Utterance>, String> {
            Ok(Vec::new())
        }
        fn stream(&self) -> Result<Box<dyn TranscriptStream>, String> {
            Ok(Box::new(CountingStream { seen: 0, said: 0 }))
        }
        fn language(&self) -> &'static str {
            "en"
        }
    }

    fn heard(first_sample: u64, seconds: f64, turns: Vec<SpeakerTurn>, until: f64) -> Heard {
        let mut h = Heard {
            turns,
            turns_until: until,
            ..Heard::default()
        };
        h.push_audio(first_sample, &vec![0.0; (seconds * RATE) as usize]);
        h
    }

    fn turn(speaker: usize, start: f64, end: f64) -> SpeakerTurn {
        SpeakerTurn {
            speaker,
            start,
            end,
        }
    }

    #[test]
    fn utterances_wait_for_their_voice_and_come_in_session_time() {
        let mut t = LiveTranscript::new(&Counting);
        // Two seconds heard, no turn labelled yet: nothing is final.
        assert!(t.push(heard(0, 2.0, vec![], 0.0)).is_empty());
        // The diarizer labelled the first 1.5 s: the first utterance (0.25-0.75) is final.
        let out = t.push(heard(32_000, 0.5, vec![turn(1, 0.0, 1.3)], 1.5));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].start, out[0].end), (0.25, 0.75));
        assert_eq!(out[0].speaker, Some(1));
        assert_eq!(out[0].text, "word 0");
        // The end: everything held, in order, the last without a voice.
        let mut rest = t.push(heard(40_000, 0.0, vec![turn(0, 1.5, 2.5)], f64::INFINITY));
        rest.extend(t.finish());
        let words: Vec<(&str, Option<usize>)> =
            rest.iter().map(|u| (u.text.as_str(), u.speaker)).collect();
        assert_eq!(words, [("word 1", Some(0)), ("end", None)]);
    }

    #[test]
    fn a_gap_finalizes_what_is_held_and_restarts_after_it() {
        let mut t = LiveTranscript::new(&Counting);
        assert!(t.push(heard(0, 1.0, vec![], 0.0)).is_empty());
        // Two seconds skipped by the analysis: the held words are final at once.
        let out = t.push(heard(48_000, 1.0, vec![], 0.0));
        let texts: Vec<&str> = out.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(texts, ["word 0", "end"]);
        assert_eq!(out[1].start, 1.0);
        // The new stream's words are in session time, after the gap.
        let out = t.push(heard(64_000, 0.0, vec![], f64::INFINITY));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].start, out[0].end), (3.25, 3.75));
    }

    /// A transcriber that records the size of every push.
    struct Recording(std::sync::Mutex<Vec<usize>>);

    struct RecordingStream(&'static Recording);

    impl TranscriptStream for RecordingStream {
        fn push(&mut self, pcm: &[f32]) -> Result<Vec<Utterance>, String> {
            self.0 .0.lock().unwrap().push(pcm.len());
            Ok(Vec::new())
        }
        fn finish(&mut self) -> Result<Vec<Utterance>, String> {
            Ok(Vec::new())
        }
    }

    impl Transcriber for &'static Recording {
        fn transcribe(&self, _pcm: &[f32]) -> Result<Vec<Utterance>, String> {
            Ok(Vec::new())
        }
        fn stream(&self) -> Result<Box<dyn TranscriptStream>, String> {
            Ok(Box::new(RecordingStream(self)))
        }
        fn language(&self) -> &'static str {
            "en"
        }
    }

    /// The transcriber decides where speech starts and when to decode from what it was
    /// pushed, so it is pushed the same pieces whatever batches the analysis heard them in.
    #[test]
    fn the_transcriber_is_fed_the_same_pieces_however_the_audio_was_batched() {
        let mut fed = Vec::new();
        for batches in [&[48_000usize][..], &[1, 1_599, 3_000, 43_400], &[700; 69]] {
            let recording: &'static Recording = Box::leak(Box::new(Recording(Default::default())));
            let transcriber: &'static dyn Transcriber = Box::leak(Box::new(recording));
            let mut t = LiveTranscript::new(transcriber);
            let mut at = 0u64;
            for &n in batches {
                let mut h = Heard::default();
                h.push_audio(at, &vec![0.0; n]);
                t.push(h);
                at += n as u64;
            }
            t.finish();
            fed.push(recording.0.lock().unwrap().clone());
        }
        // 48 000 samples; the last batching has 300 more, pushed at the end.
        assert_eq!(fed[0], vec![FEED_SAMPLES; 30]);
        assert_eq!(fed[1], fed[0]);
        let mut longer = vec![FEED_SAMPLES; 30];
        longer.push(300);
        assert_eq!(fed[2], longer);
    }

    #[test]
    fn heard_joins_consecutive_audio() {
        let mut h = Heard::default();
        h.push_audio(0, &[0.0; 10]);
        h.push_audio(10, &[1.0; 10]);
        h.push_audio(30, &[2.0; 5]);
        assert_eq!(h.audio.len(), 2);
        assert_eq!(h.samples(), 25);
        assert_eq!(h.audio[0].pcm.len(), 20);
        assert_eq!(h.audio[1].first_sample, 30);
        let mut later = Heard::default();
        later.push_audio(35, &[3.0; 5]);
        later.turns_until = 2.0;
        h.extend(later);
        assert_eq!(h.audio.len(), 2);
        assert_eq!(h.audio[1].pcm.len(), 10);
        assert_eq!(h.turns_until, 2.0);
    }
}
