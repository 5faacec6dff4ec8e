//! Speaker embeddings from CAM++ (3D-Speaker): 192 numbers that place a stretch of one voice
//! so that the same voice lands near itself whatever is said.
//!
//! Input is Kaldi filterbank frames ([`crate::fbank`]) of one speaker, mean-subtracted over the
//! stretch, as CAM++ was trained. The network is computed here (`campp.rs`) from the
//! committed ONNX file's weights, read once per process. A stretch is cut to the longest of a
//! few lengths ([`EMBED_LENGTHS`]) it covers, around its middle: the lengths tract once needed
//! plans for, kept so that the same audio gives the same embeddings (and turns) as before.

use crate::campp::CamPlus;
use crate::fbank::{FbankFrame, FBANK_BINS};
use crate::net;
use crate::VoiceError;
use std::sync::OnceLock;

/// Dimensions of an embedding.
pub const EMBEDDING_DIM: usize = crate::campp::DIM;
/// Input lengths, in filterbank frames (10 ms each), that stretches are cut to.
pub const EMBED_LENGTHS: [usize; 5] = [50, 100, 150, 200, 300];

static MODEL: &[u8] = include_bytes!("../../../models/campplus_cn_en_common.onnx");

/// A unit-length speaker embedding.
pub type Embedding = [f32; EMBEDDING_DIM];

/// The network's weights, read once per process.
pub(crate) fn network() -> Result<&'static CamPlus, VoiceError> {
    static NET: OnceLock<Result<CamPlus, String>> = OnceLock::new();
    NET.get_or_init(|| CamPlus::from_onnx(MODEL).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| VoiceError::Model(e.clone()))
}

/// tract's run of the same ONNX graph at one input length: the reference the unit tests hold
/// [`SpeakerEmbedder`] to and `examples/voice_cost` times it beside. Not used to embed.
pub struct TractCamPlus {
    plan: std::sync::Arc<tract_onnx::prelude::TypedRunnableModel>,
    frames: usize,
}

impl TractCamPlus {
    /// Parses and optimizes the graph for inputs of `frames` frames (about half a second).
    pub fn new(frames: usize) -> Result<Self, VoiceError> {
        let plan = net::plan(net::parse(MODEL)?, &[&[1, frames, FBANK_BINS]])?;
        Ok(Self { plan, frames })
    }

    /// The raw embedding of `input` (`frames x 80`, row-major, already mean-subtracted).
    pub fn run(&self, input: &[f32]) -> Result<Vec<f32>, VoiceError> {
        if input.len() != self.frames * FBANK_BINS {
            return Err(net::model_err("input of another length than the plan's"));
        }
        let shape = [1, self.frames, FBANK_BINS];
        let out = net::run(&self.plan, vec![(&shape, input)])?;
        out.into_iter()
            .next()
            .ok_or_else(|| net::model_err("no output"))
    }
}

/// The length a stretch of `available` frames is run at: the longest of [`EMBED_LENGTHS`] not
/// over `min(available, cap)`, or `None` under the shortest.
pub fn embed_length(available: usize, cap: usize) -> Option<usize> {
    let n = available.min(cap);
    EMBED_LENGTHS.iter().rev().copied().find(|&l| l <= n)
}

/// `frames` as CAM++ reads them: row-major `frames x 80`, each bin's mean over the stretch
/// subtracted.
pub fn mean_subtracted(frames: &[FbankFrame]) -> Vec<f32> {
    let mut mean = [0.0f64; FBANK_BINS];
    for f in frames {
        for (m, v) in mean.iter_mut().zip(f) {
            *m += *v as f64;
        }
    }
    let n = frames.len().max(1) as f64;
    let mut input = Vec::with_capacity(frames.len() * FBANK_BINS);
    for f in frames {
        input.extend(f.iter().zip(&mean).map(|(v, m)| v - (m / n) as f32));
    }
    input
}

/// Speaker embeddings of filterbank stretches.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpeakerEmbedder;

impl SpeakerEmbedder {
    /// Embeds `frames` (one speaker's filterbank frames, in order; they need not be
    /// contiguous in time): the middle [`embed_length`]`(frames.len(), cap)` frames, mean-
    /// subtracted, through CAM++, scaled to unit length. `None` when there are fewer frames
    /// than the shortest length.
    pub fn embed(
        &self,
        frames: &[FbankFrame],
        cap: usize,
    ) -> Result<Option<Embedding>, VoiceError> {
        let Some(len) = embed_length(frames.len(), cap) else {
            return Ok(None);
        };
        let start = (frames.len() - len) / 2;
        let input = mean_subtracted(&frames[start..start + len]);
        let raw = network()?.forward(&input);
        let norm = raw.iter().map(|v| v * v).sum::<f32>().sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return Err(net::model_err("embedding of zero or non-finite length"));
        }
        let mut e = [0.0f32; EMBEDDING_DIM];
        for (d, v) in e.iter_mut().zip(raw) {
            *d = v / norm;
        }
        Ok(Some(e))
    }
}

/// Cosine similarity of two unit-length embeddings.
pub fn cosine(a: &Embedding, b: &Embedding) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
