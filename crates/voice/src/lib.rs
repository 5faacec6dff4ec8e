//! Voices from PCM, in-process: voice activity, who speaks when (with overlap), and speaker
//! embeddings, for the analyzer's speaker turns.
//!
//! "PCM in, frames, turns and vectors out": the crate reads 16 kHz mono samples in -1..1 and
//! knows nothing of media, sessions or signals. Three networks, each converted once from a
//! registry package by `models/convert_voice.sh` and embedded with `include_bytes!` (sources,
//! licences and the conversions in `models/README.md`), run in-process, computed here from
//! their ONNX files' weights (`silero`, `pyannet`, `campp`: a matrix product per convolution,
//! the LSTM's recurrence on the widest vectors; a half to a third of tract's cost for the same
//! graphs, which the unit tests keep as a second reference):
//!
//! - [`SileroVad`]: Silero VAD v6, a speech probability per 32 ms frame, streaming;
//! - [`Segmenter`]: pyannote segmentation-3.0, up to three local speakers per 10 s chunk, with
//!   overlap;
//! - [`SpeakerEmbedder`]: CAM++, a 192-d embedding of one voice from its [`fbank`] frames.
//!
//! Each network is loaded and optimized once per process, on first use (or ahead of it by
//! [`warm_up`]), and shared by every caller. The parity tests (`tests/parity.rs`) compare each
//! stage with its reference implementation on committed audio.
//!
//! Words come from [`whisper`]: Whisper tiny.en in candle (read from `models/` at run time,
//! not embedded), decoded by openai-whisper's rules, for whole recordings and for streams; and
//! the language they are in from Whisper base's language identification
//! ([`whisper::LanguageIdentifier`]).
//!
//! [`diarize()`] gives a whole recording's speaker turns; [`OnlineDiarizer`] gives them as a
//! stream arrives, with speaker numbers that never change:
//!
//! ```
//! // Two synthetic voices taking turns (16 kHz mono 16-bit WAV; the samples follow the header).
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/speech/two_voices.wav");
//! let bytes = std::fs::read(path).unwrap();
//! let pcm: Vec<f32> = bytes[44..]
//!     .chunks_exact(2)
//!     .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
//!     .collect();
//!
//! let whole = attune_voice::diarize(&pcm).unwrap();
//! assert_eq!(whole.speakers, 2);
//! let first = whole.turns[0];
//! assert_eq!(first.speaker, 0);
//! assert!(first.start < 1.0);
//!
//! // The same audio as a stream, in 0.1 s chunks.
//! let mut online = attune_voice::OnlineDiarizer::new(Default::default()).unwrap();
//! let mut turns = Vec::new();
//! for chunk in pcm.chunks(1600) {
//!     turns.extend(online.push(chunk).unwrap());
//! }
//! turns.extend(online.finish().unwrap());
//! assert_eq!(online.speakers(), 2);
//! assert!(turns.iter().any(|t| t.speaker == 1));
//! ```
#![forbid(unsafe_code)]

mod campp;
pub mod diarize;
pub mod embed;
pub mod fbank;
mod layers;
mod matmul;
mod net;
pub mod online;
mod pyannet;
pub mod segment;
mod silero;
pub mod threads;
pub mod vad;
pub mod whisper;

pub use diarize::{
    bridge_gaps, diarize, diarize_given_vad, diarize_with, Diarization, DiarizeParams,
    LocalEmbedding, SpeakerTurn,
};
pub use embed::{cosine, Embedding, SpeakerEmbedder, EMBEDDING_DIM};
pub use online::{OnlineDiarizer, OnlineParams};
pub use segment::{ChunkActivity, Segmenter};
pub use threads::on_one_thread;
pub use vad::{speech_probabilities, SileroVad, SpeechRule, VAD_FRAME_SAMPLES, VAD_FRAME_SECONDS};

#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

/// Sample rate of every input, Hz.
pub const SAMPLE_RATE: u32 = 16_000;

/// Reads the weights of every network [`diarize()`] and [`OnlineDiarizer`] run (Silero VAD,
/// segmentation-3.0, CAM++), so that the first stretch of audio to need one does not wait for
/// it (a fraction of a second of one core in all). A server calls it as it starts; a caller
/// that needs a network while this runs waits for the same weights rather than reading them
/// twice.
pub fn warm_up() -> Result<(), VoiceError> {
    vad::network()?;
    segment::network()?;
    embed::network().map(|_| ())
}

/// Why a network could not be loaded or run.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum VoiceError {
    /// The inference engine failed: a broken embedded model or an engine bug, never bad audio.
    #[error("voice model failed: {0}")]
    Model(String),
}

#[cfg(test)]
mod tests {
    #[test]
    fn warm_up_loads_every_network_the_default_settings_run() {
        super::warm_up().expect("the embedded networks load");
        // Every length an embedding can be cut to with the default cap is ready: embedding
        // stretches of each length works.
        let frames = vec![[0.1f32; crate::fbank::FBANK_BINS]; 220];
        for &len in crate::embed::EMBED_LENGTHS.iter().filter(|&&l| l <= 200) {
            let e = crate::SpeakerEmbedder.embed(&frames[..len], 200).unwrap();
            assert!(e.is_some(), "no embedding at {len} frames");
        }
    }
}
