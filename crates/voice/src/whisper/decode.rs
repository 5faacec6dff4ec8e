//! One 30 s window to tokens, by openai-whisper's rules (`whisper/decoding.py`): the start
//! sequence (after the previous text as a prompt), then tokens one at a time, greedy at
//! temperature 0 and sampled above it, through its logit filters (no blank or end at the
//! start, no "non-speech" symbols, timestamps in pairs that never go back, at most 1 s for
//! the first); the probability of "no speech" read at the start token; and the fallback to
//! higher temperatures when the text repeats itself (gzip compression ratio above 2.4) or is
//! improbable (mean log-probability below -1), unless the window is silence.

use super::model::{DecoderState, WhisperNet};
use super::tokenizer::Tokenizer;
use candle_core::{Result, Tensor};

/// How windows are decoded: openai-whisper's `transcribe` defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeOptions {
    /// Temperatures tried in turn until a decoding passes the guards.
    pub temperatures: Vec<f32>,
    /// Above this gzip compression ratio a decoding is repetitive: retry hotter.
    pub compression_ratio_threshold: Option<f32>,
    /// Below this mean log-probability a decoding is improbable: retry hotter.
    pub logprob_threshold: Option<f32>,
    /// Above this probability of no speech (with an improbable decoding) a window is silent.
    pub no_speech_threshold: Option<f32>,
    /// Whether the previous windows' text prompts the next.
    pub condition_on_previous_text: bool,
    /// The latest time the first timestamp may name, s.
    pub max_initial_timestamp: f32,
    /// Seed of the sampling above temperature 0 (decodings are reproducible).
    pub seed: u64,
    /// The output projection in f32 rather than 8-bit (slower; what the reference computes).
    pub exact: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            temperatures: vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
            compression_ratio_threshold: Some(2.4),
            logprob_threshold: Some(-1.0),
            no_speech_threshold: Some(0.6),
            condition_on_previous_text: true,
            max_initial_timestamp: 1.0,
            seed: 0x5EED,
            exact: false,
        }
    }
}

/// One window's decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowDecoding {
    /// The sampled tokens, timestamps included, without the start sequence and the end.
    pub tokens: Vec<u32>,
    /// Their text.
    pub text: String,
    /// Mean log-probability of the tokens (the end counted in the length).
    pub avg_logprob: f32,
    /// Probability of the no-speech token at the start.
    pub no_speech_prob: f32,
    /// Length of the text over its zlib-compressed length.
    pub compression_ratio: f32,
    /// The temperature it was sampled at.
    pub temperature: f32,
}

/// zlib's compression ratio of `text`, as openai-whisper's `compression_ratio`.
pub fn compression_ratio(text: &str) -> f32 {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(bytes, 6);
    bytes.len() as f32 / compressed.len() as f32
}

/// A small reproducible generator (SplitMix64) for sampling.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&x| ((x - max) as f64).exp()).sum();
    let lse = max + sum.ln() as f32;
    logits.iter().map(|&x| x - lse).collect()
}

/// The window decoder's fixed parts: the model, its tokens and the suppressed set.
pub struct WindowDecoder<'a> {
    net: &'a WhisperNet,
    tok: &'a Tokenizer,
    /// Ids never sampled.
    suppress: Vec<u32>,
    /// The start sequence (`<|startoftranscript|>`, and language and task when multilingual).
    sot_sequence: Vec<u32>,
}

impl<'a> WindowDecoder<'a> {
    /// A decoder for `net` with `tok`.
    pub fn new(net: &'a WhisperNet, tok: &'a Tokenizer, sot_sequence: Vec<u32>) -> Self {
        let s = tok.specials;
        let mut suppress = net.config.suppress_tokens.clone();
        suppress.extend([
            s.transcribe,
            s.translate,
            s.sot,
            s.sot_prev,
            s.sot_lm,
            s.no_speech,
        ]);
        suppress.sort_unstable();
        suppress.dedup();
        Self {
            net,
            tok,
            suppress,
            sot_sequence,
        }
    }

    /// The tokens fed before sampling: the prompt (at most 223 tokens after
    /// `<|startofprev|>`), then the start sequence.
    pub fn initial_tokens(&self, prompt: &[u32]) -> Vec<u32> {
        let mut tokens = Vec::new();
        if !prompt.is_empty() {
            let keep = self.net.config.max_target_positions / 2 - 1;
            tokens.push(self.tok.specials.sot_prev);
            tokens.extend_from_slice(&prompt[prompt.len().saturating_sub(keep)..]);
        }
        tokens.extend_from_slice(&self.sot_sequence);
        tokens
    }

    /// openai-whisper's logit filters, in its order, on the logits of the next token after
    /// `sampled` (the tokens sampled so far in this window). Gives the log-probabilities of
    /// the filtered logits when the last rule (text masked where timestamps are likelier)
    /// left them as they were, as it computes them on the way; `None` when it masked.
    pub fn filter(
        &self,
        logits: &mut [f32],
        sampled: &[u32],
        options: &DecodeOptions,
    ) -> Option<Vec<f32>> {
        let s = self.tok.specials;
        let neg = f32::NEG_INFINITY;
        let tb = s.timestamp_begin as usize;
        // SuppressBlank.
        if sampled.is_empty() {
            logits[s.space as usize] = neg;
            logits[s.eot as usize] = neg;
        }
        // SuppressTokens.
        for &t in &self.suppress {
            if let Some(l) = logits.get_mut(t as usize) {
                *l = neg;
            }
        }
        // ApplyTimestampRules.
        logits[s.no_timestamps as usize] = neg;
        let is_ts = |t: u32| t >= s.timestamp_begin;
        let last_ts = sampled.last().is_some_and(|&t| is_ts(t));
        let penultimate_ts = sampled.len() < 2 || is_ts(sampled[sampled.len() - 2]);
        if last_ts {
            if penultimate_ts {
                logits[tb..].iter_mut().for_each(|l| *l = neg);
            } else {
                logits[..s.eot as usize].iter_mut().for_each(|l| *l = neg);
            }
        }
        if let Some(&last) = sampled.iter().rev().find(|&&t| is_ts(t)) {
            let bound = if last_ts && !penultimate_ts {
                last
            } else {
                last + 1
            };
            let end = (bound as usize).min(logits.len());
            logits[tb..end].iter_mut().for_each(|l| *l = neg);
        }
        if sampled.is_empty() {
            logits[..tb].iter_mut().for_each(|l| *l = neg);
            let max_index = (options.max_initial_timestamp / 0.02).round() as usize;
            let last_allowed = tb + max_index;
            if last_allowed + 1 < logits.len() {
                logits[last_allowed + 1..].iter_mut().for_each(|l| *l = neg);
            }
        }
        let logprobs = log_softmax(logits);
        let ts_max = logprobs[tb..]
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        let ts_lse = if ts_max == f32::NEG_INFINITY {
            ts_max
        } else {
            ts_max
                + logprobs[tb..]
                    .iter()
                    .map(|&x| ((x - ts_max) as f64).exp())
                    .sum::<f64>()
                    .ln() as f32
        };
        let text_max = logprobs[..tb]
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        if ts_lse > text_max {
            logits[..tb].iter_mut().for_each(|l| *l = neg);
            None
        } else {
            Some(logprobs)
        }
    }

    fn logits_row(t: &Tensor, row: usize) -> Result<Vec<f32>> {
        t.get(row)?.to_vec1::<f32>()
    }

    /// Decodes one window's encoder output at one temperature.
    pub fn decode(
        &self,
        audio: &Tensor,
        prompt: &[u32],
        temperature: f32,
        options: &DecodeOptions,
        rng: &mut Rng,
    ) -> Result<WindowDecoding> {
        let start = self.net.start(audio)?;
        self.decode_from(&start, prompt, temperature, options, rng)
    }

    /// [`WindowDecoder::decode`] from a fresh decoder state of the window
    /// ([`WhisperNet::start`]: its cross-attention keys and values, which every temperature
    /// of a window shares).
    fn decode_from(
        &self,
        start: &DecoderState,
        prompt: &[u32],
        temperature: f32,
        options: &DecodeOptions,
        rng: &mut Rng,
    ) -> Result<WindowDecoding> {
        let s = self.tok.specials;
        let initial = self.initial_tokens(prompt);
        let sot_index = initial.iter().position(|&t| t == s.sot).unwrap_or(0);
        let mut state: DecoderState = start.clone();
        let keep = initial.len() - sot_index;
        let first = self
            .net
            .step_with(&mut state, &initial, keep, options.exact)?;
        let no_speech_prob = {
            let row = Self::logits_row(&first, 0)?;
            log_softmax(&row)[s.no_speech as usize].exp()
        };
        let mut logits = Self::logits_row(&first, keep - 1)?;
        let sample_len = self.net.config.max_target_positions / 2;
        let room = self
            .net
            .config
            .max_target_positions
            .saturating_sub(initial.len());
        let mut sampled: Vec<u32> = Vec::new();
        let mut sum_logprob = 0f64;
        let mut ended = false;
        for _ in 0..sample_len.min(room) {
            let logprobs = self.filter(&mut logits, &sampled, options);
            let next = if temperature <= 0.0 {
                argmax(&logits)
            } else {
                sample(&logits, temperature, rng)
            };
            let logprobs = logprobs.unwrap_or_else(|| log_softmax(&logits));
            sum_logprob += logprobs[next as usize] as f64;
            if next == s.eot {
                ended = true;
                break;
            }
            sampled.push(next);
            if sampled.len() == sample_len.min(room) {
                break;
            }
            let out = self.net.step_with(&mut state, &[next], 1, options.exact)?;
            logits = Self::logits_row(&out, 0)?;
        }
        let _ = ended;
        let text = self.tok.decode(&sampled).trim().to_string();
        Ok(WindowDecoding {
            avg_logprob: (sum_logprob / (sampled.len() + 1) as f64) as f32,
            compression_ratio: compression_ratio(&text),
            tokens: sampled,
            text,
            no_speech_prob,
            temperature,
        })
    }

    /// Decodes at each temperature in turn until the guards pass (openai-whisper's
    /// `decode_with_fallback`).
    pub fn decode_with_fallback(
        &self,
        audio: &Tensor,
        prompt: &[u32],
        options: &DecodeOptions,
        rng: &mut Rng,
    ) -> Result<WindowDecoding> {
        let start = self.net.start(audio)?;
        let mut result = None;
        for &t in &options.temperatures {
            let r = self.decode_from(&start, prompt, t, options, rng)?;
            let mut fallback = false;
            if let Some(c) = options.compression_ratio_threshold {
                fallback |= r.compression_ratio > c;
            }
            if let Some(l) = options.logprob_threshold {
                fallback |= r.avg_logprob < l;
            }
            if let (Some(n), Some(l)) = (options.no_speech_threshold, options.logprob_threshold) {
                if r.no_speech_prob > n && r.avg_logprob < l {
                    fallback = false; // silence
                }
            }
            result = Some(r);
            if !fallback {
                break;
            }
        }
        match result {
            Some(r) => Ok(r),
            None => self.decode_from(&start, prompt, 0.0, options, rng),
        }
    }
}

fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    best as u32
}

fn sample(logits: &[f32], temperature: f32, rng: &mut Rng) -> u32 {
    let scaled: Vec<f32> = logits.iter().map(|&x| x / temperature).collect();
    let lp = log_softmax(&scaled);
    let mut u = rng.next_f64();
    for (i, &l) in lp.iter().enumerate() {
        let p = (l as f64).exp();
        if u < p {
            return i as u32;
        }
        u -= p;
    }
    argmax(logits)
}
