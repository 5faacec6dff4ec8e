//! Voices from PCM, in-process: voice activity, who speaks when (with overlap), and speaker
//! embeddings, for the analyzer's speaker turns.
//!
//! "PCM in, frames, turns and vectors out": the crate reads 16 kHz mono samples in -1..1 and
//! knows nothing of media, sessions or signals. Three networks, each converted once from a
//! registry package by `models/convert_voice.sh` and embedded with `include_bytes!` (sources,
//! licences and the conversions in `models/README.md`), run on tract:
//!
//! - [`SileroVad`]: Silero VAD v6, a speech probability per 32 ms frame, streaming;
//! - [`Segmenter`]: pyannote segmentation-3.0, up to three local speakers per 10 s chunk, with
//!   overlap;
//! - [`SpeakerEmbedder`]: CAM++, a 192-d embedding of one voice from its [`fbank`] frames.
//!
//! Each network is loaded and optimized once per process, on first use, and shared by every
//! caller. The parity tests (`tests/parity.rs`) compare each stage with its reference
//! implementation on committed audio.
#![forbid(unsafe_code)]

pub mod diarize;
pub mod embed;
pub mod fbank;
mod net;
pub mod online;
pub mod segment;
pub mod vad;

pub use diarize::{
    bridge_gaps, diarize, diarize_with, Diarization, DiarizeParams, LocalEmbedding, SpeakerTurn,
};
pub use embed::{cosine, Embedding, SpeakerEmbedder, EMBEDDING_DIM};
pub use online::{OnlineDiarizer, OnlineParams};
pub use segment::{ChunkActivity, Segmenter};
pub use vad::{speech_probabilities, SileroVad, SpeechRule, VAD_FRAME_SAMPLES, VAD_FRAME_SECONDS};

/// Sample rate of every input, Hz.
pub const SAMPLE_RATE: u32 = 16_000;

/// Why a network could not be loaded or run.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum VoiceError {
    /// The inference engine failed: a broken embedded model or an engine bug, never bad audio.
    #[error("voice model failed: {0}")]
    Model(String),
}
