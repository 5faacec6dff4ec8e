//! A stream's words as they arrive: audio is held until a pause closes an utterance, then
//! that stretch is decoded as one Whisper window and its segments are final.
//!
//! Every decoding costs one pass of the encoder over a whole 30 s window, whatever the audio's
//! length, so a pause finalizes only once `min_seconds` of audio are held (a lone "yes" waits
//! for the next pause after it); `max_seconds` without a pause decodes anyway, keeps the
//! segments Whisper closed and holds the rest. Pauses are Silero VAD's (probability below
//! 0.35 for `pause_seconds`). The previous text prompts the next window, as in uploads, but
//! only its last `prompt_tokens` (64; uploads keep openai-whisper's 223).

use super::decode::Rng;
use super::{mel, DecodeOptions, Segment, Whisper};
use crate::{SileroVad, VoiceError, SAMPLE_RATE, VAD_FRAME_SAMPLES};

/// When a stream's audio is decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamParams {
    /// Silence that ends an utterance, s.
    pub pause_seconds: f64,
    /// Audio held before a pause may finalize it, s.
    pub min_seconds: f64,
    /// Audio held before it is decoded with or without a pause, s (at most 30).
    pub max_seconds: f64,
    /// Silence kept before speech when it starts, s.
    pub lead_seconds: f64,
    /// Tokens of the previous text that prompt the next window, at most. openai-whisper
    /// keeps 223 (half the decoder's positions); a stream keeps 64, about the 200 characters
    /// of committed text whisper_streaming prompts with (Machacek et al. 2023). Every window
    /// feeds its prompt through the decoder before its first word, so the prompt is a cost per
    /// window; and in a two-minute session the long prompt made Whisper stop timing its words
    /// (segments of 9 s and more) and repeat a greeting (BENCHMARKS.md, "A stream's prompt").
    pub prompt_tokens: usize,
    /// The decoding rules.
    pub decode: DecodeOptions,
}

impl Default for StreamParams {
    fn default() -> Self {
        Self {
            pause_seconds: 0.3,
            min_seconds: 5.0,
            max_seconds: 15.0,
            lead_seconds: 0.3,
            prompt_tokens: 64,
            decode: DecodeOptions::default(),
        }
    }
}

/// A stream's transcriber (one per stream; the model is shared).
pub struct StreamTranscriber<'w> {
    whisper: &'w Whisper,
    params: StreamParams,
    vad: SileroVad,
    probs: Vec<f32>,
    /// Held audio, from sample `base` of the stream.
    held: Vec<f32>,
    base: usize,
    /// Samples of the stream seen.
    seen: usize,
    /// Stream sample where the held audio's speech ended (None: no speech held).
    speech_end: Option<usize>,
    tokens: Vec<u32>,
    rng: Rng,
}

impl std::fmt::Debug for StreamTranscriber<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTranscriber")
            .field("params", &self.params)
            .field("held_s", &(self.held.len() as f64 / SAMPLE_RATE as f64))
            .finish_non_exhaustive()
    }
}

const SPEECH: f32 = 0.5;
const SILENCE: f32 = 0.35;

impl<'w> StreamTranscriber<'w> {
    /// A transcriber of a new stream.
    pub fn new(whisper: &'w Whisper, params: StreamParams) -> Result<Self, VoiceError> {
        let seed = params.decode.seed;
        Ok(Self {
            whisper,
            params,
            vad: SileroVad::new()?,
            probs: Vec::new(),
            held: Vec::new(),
            base: 0,
            seen: 0,
            speech_end: None,
            tokens: Vec::new(),
            rng: Rng::new(seed),
        })
    }

    fn secs(samples: usize) -> f64 {
        samples as f64 / SAMPLE_RATE as f64
    }

    fn samples(secs: f64) -> usize {
        (secs * SAMPLE_RATE as f64).round() as usize
    }

    /// Feeds the next samples (16 kHz mono); gives the segments finalized by them.
    pub fn push(&mut self, pcm: &[f32]) -> Result<Vec<Segment>, VoiceError> {
        let mut out = Vec::new();
        let first_frame = self.vad.frames();
        self.probs.clear();
        self.vad.push(pcm, &mut self.probs)?;
        self.held.extend_from_slice(pcm);
        self.seen += pcm.len();
        let probs = std::mem::take(&mut self.probs);
        for (i, &p) in probs.iter().enumerate() {
            let frame_end = (first_frame as usize + i + 1) * VAD_FRAME_SAMPLES;
            if p >= SPEECH {
                self.speech_end = Some(frame_end);
            } else if p < SILENCE {
                if let Some(end) = self.speech_end {
                    let quiet = Self::secs(frame_end.saturating_sub(end));
                    let held = Self::secs(end.saturating_sub(self.base));
                    if quiet >= self.params.pause_seconds && held >= self.params.min_seconds {
                        let cut = end + Self::samples(self.params.pause_seconds / 2.0);
                        out.extend(self.decode_until(cut, true)?);
                    }
                }
            }
        }
        self.probs = probs;
        if self.speech_end.is_none() {
            // Nothing said: hold only the lead-in.
            let lead = Self::samples(self.params.lead_seconds);
            if self.held.len() > lead {
                let drop = self.held.len() - lead;
                self.held.drain(..drop);
                self.base += drop;
            }
        }
        let max = Self::samples(self.params.max_seconds.min(30.0));
        while self.held.len() >= max {
            let cut = self.base + max;
            let before = self.base;
            out.extend(self.decode_until(cut, false)?);
            if self.base == before {
                break;
            }
        }
        Ok(out)
    }

    /// Decodes what is held (the end of the stream).
    pub fn finish(&mut self) -> Result<Vec<Segment>, VoiceError> {
        let mut out = Vec::new();
        self.probs.clear();
        self.vad.finish(&mut self.probs)?;
        while self.speech_end.is_some() && !self.held.is_empty() {
            let end = self.base + self.held.len();
            let before = self.base;
            out.extend(self.decode_until(end, true)?);
            if self.base == before {
                break;
            }
        }
        Ok(out)
    }

    /// Decodes the held audio up to stream sample `cut` as one window. With `whole`, every
    /// segment is final and the held audio is dropped up to `cut`; otherwise the audio after
    /// the last closed segment stays held.
    fn decode_until(&mut self, cut: usize, whole: bool) -> Result<Vec<Segment>, VoiceError> {
        let cut = cut.clamp(self.base, self.base + self.held.len());
        let len = cut - self.base;
        let window = &self.held[..len.min(super::WINDOW_SAMPLES)];
        let raw = mel::log_mel_raw(window);
        let frames = mel::normalize(&raw, mel::max_of(&raw));
        let opts = &self.params.decode;
        let prompt = if opts.condition_on_previous_text {
            self.tokens.as_slice()
        } else {
            &[]
        };
        let (whisper, rng) = (self.whisper, &mut self.rng);
        let result = crate::on_one_thread(|| {
            let audio = whisper.encode_frames(&frames)?;
            whisper
                .window_decoder()
                .decode_with_fallback(&audio, prompt, opts, rng)
                .map_err(super::model_err)
        })?;
        let offset = Self::secs(self.base);
        let silent = match (opts.no_speech_threshold, opts.logprob_threshold) {
            (Some(n), Some(l)) => result.no_speech_prob > n && result.avg_logprob <= l,
            (Some(n), None) => result.no_speech_prob > n,
            _ => false,
        };
        let (segments, advance) = if silent {
            (Vec::new(), frames.len())
        } else {
            self.whisper.split(&result, offset, frames.len())
        };
        let consumed = if whole {
            len
        } else {
            (advance * mel::HOP).clamp(1, len)
        };
        self.held.drain(..consumed);
        self.base += consumed;
        if self.speech_end.is_some_and(|e| e <= self.base) {
            self.speech_end = None;
        }
        for s in &segments {
            self.tokens.extend_from_slice(&s.tokens);
        }
        if !opts.condition_on_previous_text || result.temperature > 0.5 {
            self.tokens.clear();
        }
        let keep =
            (self.whisper.net().config.max_target_positions / 2 - 1).min(self.params.prompt_tokens);
        if self.tokens.len() > keep {
            self.tokens.drain(..self.tokens.len() - keep);
        }
        Ok(segments
            .into_iter()
            .filter(|s| !s.text.is_empty())
            .map(|mut s| {
                let limit = Self::secs(cut);
                s.end = s.end.min(limit);
                s.start = s.start.min(s.end);
                s
            })
            .collect())
    }

    /// Samples of the stream seen so far.
    pub fn seen(&self) -> usize {
        self.seen
    }
}
