//! Speaker embeddings from CAM++ (3D-Speaker): 192 numbers that place a stretch of one voice
//! so that the same voice lands near itself whatever is said.
//!
//! Input is Kaldi filterbank frames ([`crate::fbank`]) of one speaker, mean-subtracted over the
//! stretch, as CAM++ was trained. tract runs a network of a fixed input length several times
//! faster than one of a symbolic length, so plans are built for a few lengths
//! ([`EMBED_LENGTHS`], once per process each, on first use or by [`warm_up`]) and a stretch is
//! cut to the longest of them it covers, around its middle.

use crate::fbank::{FbankFrame, FBANK_BINS};
use crate::net;
use crate::VoiceError;
use std::sync::{Arc, OnceLock};
use tract_onnx::prelude::*;

/// Dimensions of an embedding.
pub const EMBEDDING_DIM: usize = 192;
/// Input lengths, in filterbank frames (10 ms each), that the network is run at.
pub const EMBED_LENGTHS: [usize; 5] = [50, 100, 150, 200, 300];

static MODEL: &[u8] = include_bytes!("../../../models/campplus_cn_en_common.onnx");

/// A unit-length speaker embedding.
pub type Embedding = [f32; EMBEDDING_DIM];

fn parsed() -> Result<&'static InferenceModel, VoiceError> {
    static PARSED: OnceLock<Result<InferenceModel, String>> = OnceLock::new();
    PARSED
        .get_or_init(|| net::parse(MODEL).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| VoiceError::Model(e.clone()))
}

fn plan(frames: usize) -> Result<Arc<TypedRunnableModel>, VoiceError> {
    static PLANS: [OnceLock<Result<Arc<TypedRunnableModel>, String>>; EMBED_LENGTHS.len()] =
        [const { OnceLock::new() }; EMBED_LENGTHS.len()];
    let slot = EMBED_LENGTHS
        .iter()
        .position(|&l| l == frames)
        .ok_or_else(|| net::model_err(format!("no plan for {frames} frames")))?;
    // A caller that arrives while another builds this length waits for that plan.
    PLANS[slot]
        .get_or_init(|| {
            let model = parsed().map_err(|e| e.to_string())?.clone();
            net::plan(model, &[&[1, frames, FBANK_BINS]]).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(VoiceError::Model)
}

/// Builds the plans of every length an embedding capped at `cap` frames can be run at, so
/// that no caller waits for one (each takes about half a second of one core).
pub fn warm_up(cap: usize) -> Result<(), VoiceError> {
    for &l in EMBED_LENGTHS.iter().filter(|&&l| l <= cap) {
        plan(l)?;
    }
    Ok(())
}

/// The length a stretch of `available` frames is run at: the longest of [`EMBED_LENGTHS`] not
/// over `min(available, cap)`, or `None` under the shortest.
pub fn embed_length(available: usize, cap: usize) -> Option<usize> {
    let n = available.min(cap);
    EMBED_LENGTHS.iter().rev().copied().find(|&l| l <= n)
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
        let used = &frames[start..start + len];
        let mut mean = [0.0f64; FBANK_BINS];
        for f in used {
            for (m, v) in mean.iter_mut().zip(f) {
                *m += *v as f64;
            }
        }
        let mut input = Vec::with_capacity(len * FBANK_BINS);
        for f in used {
            input.extend(
                f.iter()
                    .zip(&mean)
                    .map(|(v, m)| v - (m / len as f64) as f32),
            );
        }
        let plan = plan(len)?;
        let out = net::run(&plan, vec![(&[1, len, FBANK_BINS], &input)])?;
        let raw = out
            .first()
            .filter(|o| o.len() == EMBEDDING_DIM)
            .ok_or_else(|| net::model_err("embedding of unexpected shape"))?;
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
