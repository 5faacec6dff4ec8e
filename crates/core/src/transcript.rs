//! Transcripts: what was said, when, and by which voice.
//!
//! A [`Transcriber`] turns 16 kHz mono PCM into [`Utterance`]s, for a whole recording or as a
//! stream arrives; the speaker of each comes from the speaker turns the analysis already reads
//! ([`assign_speakers`]). The one implementation is Whisper tiny.en (`attune_voice::whisper`),
//! loaded once per process from `models/` ([`shared`]): every upload and session shares it.
//! Where its files are absent, [`shared`] is `None` and the analysis says nothing lexical.
//!
//! Whisper tiny.en knows English only, and writes English-sounding text for any other language.
//! So each recording, and each stream at its first finished words, is first given to the
//! language identifier (Whisper base, `attune_voice::whisper::LanguageIdentifier`, when its
//! files are in `models/`): speech it finds to be another language ([`SpokenLanguage`]) is not
//! transcribed, and so gives no transcript and no lexical evidence.
//!
//! Writers: [`webvtt`] (WebVTT with `<v Speaker N>` voice spans) and [`json`] (an array of
//! `{start, end, speaker, text}`), what `attune analyze --transcript` writes.

use attune_voice::whisper::{
    DecodeOptions, LanguageIdentifier, StreamParams, StreamTranscriber, Whisper, WINDOW_SAMPLES,
};
use attune_voice::SpeakerTurn;
use serde::Serialize;

/// One stretch of recognized speech.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Utterance {
    /// Start, seconds from the beginning of the media (or session).
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// The voice (0-based, as the speaker turns number them); `None` when no turn overlaps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speaker: Option<usize>,
    /// The words.
    pub text: String,
    /// Whether the utterance just before it asked a question: a bare "no" then answers rather
    /// than disagrees. Set by [`mark_answers`]. (Any voice: the speaker turns may merge two
    /// similar voices, and people seldom answer their own question with "not really".)
    #[serde(skip)]
    pub after_question: bool,
    /// The recognizer's mean log-probability per token over the decoding these words came
    /// from (Whisper's `avg_logprob`); `None` for words not from a recognizer (a human
    /// transcript). The lexical cues read only words at or above
    /// [`crate::analysis::lexicon::MIN_LOGPROB`].
    #[serde(skip)]
    pub avg_logprob: Option<f32>,
}

/// For a program's `main`, before its first thread: see [`attune_voice::threads`].
pub use attune_voice::threads::one_candle_thread_unless_set;

/// Speech to text, for recordings and streams. Implementations are shared across threads.
pub trait Transcriber: Send + Sync {
    /// A whole recording's utterances.
    fn transcribe(&self, pcm: &[f32]) -> Result<Vec<Utterance>, String>;
    /// [`Transcriber::transcribe`], and the language the recording was identified as when the
    /// transcriber identifies it (the default does not: `None`).
    fn transcribe_identified(
        &self,
        pcm: &[f32],
    ) -> Result<(Option<SpokenLanguage>, Vec<Utterance>), String> {
        self.transcribe(pcm).map(|words| (None, words))
    }
    /// A transcriber of one stream (times from the stream's first sample).
    fn stream(&self) -> Result<Box<dyn TranscriptStream>, String>;
    /// The language of the words (ISO 639-1): lexical evidence is read only for `en`. (Speech
    /// in another language gives no words: [`SpokenLanguage`].)
    fn language(&self) -> &'static str;
}

/// One stream's transcriber: samples in, utterances out as they are final.
pub trait TranscriptStream: Send {
    /// Feeds the next samples; gives the utterances they finalized.
    fn push(&mut self, pcm: &[f32]) -> Result<Vec<Utterance>, String>;
    /// The end of the stream: the utterances still held.
    fn finish(&mut self) -> Result<Vec<Utterance>, String>;
    /// The language the stream was identified as, once it is (at its first final words);
    /// `None` before, or when the transcriber does not identify languages.
    fn language(&self) -> Option<SpokenLanguage> {
        None
    }
}

/// Under this probability of English, speech whose most probable language is another one is
/// taken for that language and not transcribed. Set between what was measured
/// (`docs/EVALUATION.md`, "Another language"): on real English recordings English was always the
/// most probable language, at 0.53-0.99 over 30 s but down to 0.23 over their first 6 s; German
/// clips of 2-3 s whose most probable language was not English gave it at most 0.09.
pub const MIN_ENGLISH: f32 = 0.25;

/// The language identifier's reading of some speech.
#[derive(Debug, Clone, PartialEq)]
pub struct SpokenLanguage {
    /// The most probable language (ISO 639-1, as Whisper names them) and its probability.
    pub code: String,
    /// Its probability.
    pub probability: f32,
    /// The probability of English.
    pub english: f32,
}

impl SpokenLanguage {
    /// Whether the speech is transcribed: English is the most probable language, or has a
    /// probability of [`MIN_ENGLISH`] or more.
    pub fn transcribed(&self) -> bool {
        self.code == "en" || self.english >= MIN_ENGLISH
    }

    /// For people: what was heard and what follows from it.
    pub fn describe(&self) -> String {
        let verdict = if self.transcribed() {
            "transcribed"
        } else {
            "not transcribed (the recognizer reads English only)"
        };
        format!(
            "speech identified as '{}' (probability {:.2}; English {:.2}): {verdict}",
            self.code, self.probability, self.english
        )
    }
}

/// The language of `pcm`'s first 30 s (16 kHz mono), by the process's language identifier;
/// `None` when its model is not in `models/` or it failed (then the speech is transcribed).
pub fn spoken_language(pcm: &[f32]) -> Option<SpokenLanguage> {
    let guess = LanguageIdentifier::shared()?.identify(pcm).ok()?;
    let (code, probability) = guess.best();
    Some(SpokenLanguage {
        code: code.to_string(),
        probability,
        english: guess.probability("en"),
    })
}

fn utterance(s: attune_voice::whisper::Segment) -> Utterance {
    Utterance {
        start: s.start,
        end: s.end,
        speaker: None,
        text: s.text,
        after_question: false,
        avg_logprob: Some(s.avg_logprob),
    }
}

/// The process-wide Whisper as a [`Transcriber`] whose streams borrow it for `'static`.
struct SharedWhisper(&'static Whisper);

/// A stream's transcription, which holds its last 30 s until its first words are final: the
/// language is read from those 30 s then (the speech of the first words, and what came before
/// them), and a stream in another language stops transcribing.
struct WhisperStream {
    inner: StreamTranscriber<'static>,
    /// The stream's latest samples (at most 30 s), until the language is known.
    head: std::collections::VecDeque<f32>,
    /// `None` until the first words; then whether the stream is transcribed.
    transcribed: Option<bool>,
    /// What the identifier said at the first words.
    language: Option<SpokenLanguage>,
}

impl WhisperStream {
    fn gate(&mut self, words: Vec<attune_voice::whisper::Segment>) -> Vec<Utterance> {
        if self.transcribed.is_none() && !words.is_empty() {
            self.language = spoken_language(self.head.make_contiguous());
            self.transcribed = Some(self.language.as_ref().is_none_or(|l| l.transcribed()));
            self.head = Default::default();
        }
        match self.transcribed {
            Some(false) => Vec::new(),
            _ => words.into_iter().map(utterance).collect(),
        }
    }
}

impl TranscriptStream for WhisperStream {
    fn push(&mut self, pcm: &[f32]) -> Result<Vec<Utterance>, String> {
        match self.transcribed {
            Some(false) => return Ok(Vec::new()),
            None => {
                self.head.extend(pcm);
                let over = self.head.len().saturating_sub(WINDOW_SAMPLES);
                self.head.drain(..over);
            }
            Some(true) => {}
        }
        let words = self.inner.push(pcm).map_err(|e| e.to_string())?;
        Ok(self.gate(words))
    }

    fn finish(&mut self) -> Result<Vec<Utterance>, String> {
        if self.transcribed == Some(false) {
            return Ok(Vec::new());
        }
        let words = self.inner.finish().map_err(|e| e.to_string())?;
        Ok(self.gate(words))
    }

    fn language(&self) -> Option<SpokenLanguage> {
        self.language.clone()
    }
}

impl Transcriber for SharedWhisper {
    fn transcribe(&self, pcm: &[f32]) -> Result<Vec<Utterance>, String> {
        self.transcribe_identified(pcm).map(|(_, words)| words)
    }

    fn transcribe_identified(
        &self,
        pcm: &[f32],
    ) -> Result<(Option<SpokenLanguage>, Vec<Utterance>), String> {
        let language = spoken_language(pcm);
        if language.as_ref().is_some_and(|l| !l.transcribed()) {
            return Ok((language, Vec::new()));
        }
        self.0
            .transcribe(pcm, &DecodeOptions::default())
            .map(|segments| (language, segments.into_iter().map(utterance).collect()))
            .map_err(|e| e.to_string())
    }

    fn stream(&self) -> Result<Box<dyn TranscriptStream>, String> {
        StreamTranscriber::new(self.0, StreamParams::default())
            .map(|inner| {
                Box::new(WhisperStream {
                    inner,
                    head: Default::default(),
                    transcribed: None,
                    language: None,
                }) as Box<dyn TranscriptStream>
            })
            .map_err(|e| e.to_string())
    }

    fn language(&self) -> &'static str {
        "en"
    }
}

/// The process's transcriber: Whisper tiny.en from `models/` (or the directory
/// `ATTUNE_MODELS` names), loaded on first use; `None` when its files are absent or
/// `ATTUNE_TRANSCRIBE=0`.
pub fn shared() -> Option<&'static dyn Transcriber> {
    static SHARED: std::sync::OnceLock<Option<SharedWhisper>> = std::sync::OnceLock::new();
    if std::env::var("ATTUNE_TRANSCRIBE").is_ok_and(|v| v == "0") {
        return None;
    }
    SHARED
        .get_or_init(|| Whisper::shared().map(SharedWhisper))
        .as_ref()
        .map(|s| s as &dyn Transcriber)
}

/// Why [`shared`] gives no transcriber when transcription was not switched off
/// (`ATTUNE_TRANSCRIBE=0`): the model's files are missing (with the folder searched and how to
/// name another), or reading them failed when [`shared`] tried. `None` when the files are there
/// and did not fail (or were never read: this never loads the model), or when transcription is
/// off by choice.
pub fn why_no_words() -> Option<String> {
    model_missing().or_else(|| Whisper::shared_failure().map(str::to_owned))
}

/// Whether the model's files are missing, without reading them (a server says so as it
/// starts, before any session needs the 430 MB model): the reason [`why_no_words`] would
/// give, or `None` when the files are there or transcription is off (`ATTUNE_TRANSCRIBE=0`).
pub fn model_missing() -> Option<String> {
    if std::env::var("ATTUNE_TRANSCRIBE").is_ok_and(|v| v == "0") {
        return None;
    }
    attune_voice::whisper::ModelFiles::default_files().missing()
}

/// The utterances whose middle falls in `[start, end)`: a window's words (each utterance
/// counts in one window of a tiling).
pub fn within(utterances: &[Utterance], start: f64, end: f64) -> Vec<Utterance> {
    utterances
        .iter()
        .filter(|u| {
            let mid = (u.start + u.end) / 2.0;
            mid >= start && mid < end
        })
        .cloned()
        .collect()
}

/// Marks the utterances that follow a question (see [`Utterance::after_question`]).
pub fn mark_answers(utterances: &mut [Utterance]) {
    for i in 1..utterances.len() {
        utterances[i].after_question = utterances[i - 1].text.trim_end().ends_with('?');
    }
}

/// Gives each utterance the voice whose turns overlap it most (none when no turn does).
pub fn assign_speakers(utterances: &mut [Utterance], turns: &[SpeakerTurn]) {
    for u in utterances {
        let mut best: Option<(usize, f64)> = None;
        let mut totals: Vec<f64> = Vec::new();
        for t in turns {
            let overlap = t.end.min(u.end) - t.start.max(u.start);
            if overlap > 0.0 {
                if totals.len() <= t.speaker {
                    totals.resize(t.speaker + 1, 0.0);
                }
                totals[t.speaker] += overlap;
            }
        }
        for (speaker, &total) in totals.iter().enumerate() {
            if total > 0.0 && best.is_none_or(|(_, b)| total > b) {
                best = Some((speaker, total));
            }
        }
        u.speaker = best.map(|(s, _)| s);
    }
}

fn vtt_time(t: f64) -> String {
    let ms = (t.max(0.0) * 1000.0).round() as u64;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// WebVTT: one cue per utterance, the voice as `<v Speaker N>` (1-based) when known.
pub fn webvtt(utterances: &[Utterance]) -> String {
    let mut out = String::from("WEBVTT\n");
    for u in utterances {
        // A cue's text may not hold "-->"; escape what WebVTT reserves.
        let text = u
            .text
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        out.push('\n');
        out.push_str(&format!("{} --> {}\n", vtt_time(u.start), vtt_time(u.end)));
        match u.speaker {
            Some(s) => out.push_str(&format!("<v Speaker {}>{}\n", s + 1, text)),
            None => out.push_str(&format!("{text}\n")),
        }
    }
    out
}

/// JSON: an array of `{start, end, speaker, text}`, `speaker` 1-based and 0 when unknown (as
/// the realtime route's `transcript.generated` numbers them).
pub fn json(utterances: &[Utterance]) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        start: f64,
        end: f64,
        speaker: usize,
        text: &'a str,
    }
    let out: Vec<Out<'_>> = utterances
        .iter()
        .map(|u| Out {
            start: (u.start * 1000.0).round() / 1000.0,
            end: (u.end * 1000.0).round() / 1000.0,
            speaker: u.speaker.map_or(0, |s| s + 1),
            text: &u.text,
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&out).unwrap_or_else(|_| "[]".to_string());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(speaker: usize, start: f64, end: f64) -> SpeakerTurn {
        SpeakerTurn {
            speaker,
            start,
            end,
        }
    }

    fn said(start: f64, end: f64, text: &str) -> Utterance {
        Utterance {
            start,
            end,
            speaker: None,
            text: text.to_string(),
            after_question: false,
            avg_logprob: None,
        }
    }

    #[test]
    fn each_utterance_goes_to_the_voice_that_speaks_most_of_it() {
        let mut u = vec![
            said(0.0, 2.0, "hello"),
            said(2.0, 5.0, "hi there"),
            said(9.0, 10.0, "anyone?"),
        ];
        let turns = [turn(0, 0.0, 2.2), turn(1, 2.1, 4.0), turn(0, 4.0, 4.5)];
        assign_speakers(&mut u, &turns);
        assert_eq!(u[0].speaker, Some(0));
        assert_eq!(u[1].speaker, Some(1));
        assert_eq!(u[2].speaker, None);
    }

    #[test]
    fn webvtt_names_the_voices_and_escapes_the_text() {
        let mut u = vec![said(1.5, 62.25, "a <b> & c"), said(63.0, 64.0, "d")];
        u[0].speaker = Some(1);
        let text = webvtt(&u);
        assert_eq!(
            text,
            "WEBVTT\n\n00:00:01.500 --> 00:01:02.250\n<v Speaker 2>a &lt;b&gt; &amp; c\n\n\
             00:01:03.000 --> 00:01:04.000\nd\n"
        );
    }

    #[test]
    fn json_numbers_voices_from_one_and_unknown_as_zero() {
        let mut u = vec![said(0.0, 1.0, "yes"), said(1.0, 2.0, "no")];
        u[0].speaker = Some(0);
        let v: serde_json::Value = serde_json::from_str(&json(&u)).unwrap();
        assert_eq!(v[0]["speaker"], 1);
        assert_eq!(v[1]["speaker"], 0);
        assert_eq!(v[1]["text"], "no");
    }
}
