//! Who speaks in a 10 s chunk: pyannote segmentation-3.0, up to three local speakers per chunk
//! with at most two at once, frame by frame (every 270 samples, 16.9 ms).
//!
//! The network answers with a "powerset": for each frame, the log-probability of each of the
//! seven sets of local speakers that can be active (none; 1; 2; 3; 1 and 2; 1 and 3; 2 and 3).
//! Local speakers are numbered per chunk only: speaker 1 of one chunk and speaker 1 of the next
//! need not be the same person (the embeddings and clustering of [`crate::diarize()`] say who is
//! who).

use crate::net;
use crate::pyannet::PyanNet;
use crate::VoiceError;
use std::sync::{Arc, OnceLock};
use tract_onnx::prelude::*;

/// Samples per chunk (10 s at 16 kHz); a shorter input is zero-padded.
pub const CHUNK_SAMPLES: usize = 160_000;
/// Frames per chunk.
pub const CHUNK_FRAMES: usize = 589;
/// Samples between frames.
pub const FRAME_STEP_SAMPLES: usize = 270;
/// Samples each frame sees (its receptive field).
pub const FRAME_SPAN_SAMPLES: usize = 991;
/// Local speakers per chunk.
pub const LOCAL_SPEAKERS: usize = 3;
/// The powerset classes: which local speakers each one holds.
pub const CLASSES: [&[usize]; 7] = [&[], &[0], &[1], &[2], &[0, 1], &[0, 2], &[1, 2]];

static MODEL: &[u8] = include_bytes!("../../../models/segmentation-3.0.onnx");

/// The network's weights, read from the embedded ONNX file once per process
/// ([`crate::pyannet`] computes it).
pub(crate) fn network() -> Result<&'static PyanNet, VoiceError> {
    static NET: OnceLock<Result<PyanNet, String>> = OnceLock::new();
    NET.get_or_init(|| PyanNet::from_onnx(MODEL).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| VoiceError::Model(e.clone()))
}

/// tract's plan of the same ONNX graph (built on first use): what ran the network before
/// [`crate::pyannet`], kept as its second reference ([`Segmenter::run_in_tract`]).
pub(crate) fn tract_plan() -> Result<&'static Arc<TypedRunnableModel>, VoiceError> {
    static PLAN: OnceLock<Result<Arc<TypedRunnableModel>, String>> = OnceLock::new();
    PLAN.get_or_init(|| {
        net::parse(MODEL)
            .and_then(|m| net::plan(m, &[&[1, 1, CHUNK_SAMPLES]]))
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| VoiceError::Model(e.clone()))
}

/// Time of frame `i`'s centre from the chunk's start, s.
pub fn frame_centre_s(i: usize) -> f64 {
    (i * FRAME_STEP_SAMPLES) as f64 / crate::SAMPLE_RATE as f64
        + FRAME_SPAN_SAMPLES as f64 / 2.0 / crate::SAMPLE_RATE as f64
}

/// The network's answer for one chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkActivity {
    /// Per frame, the log-probability of each powerset class ([`CLASSES`]).
    pub log_probs: Vec<[f32; 7]>,
}

impl ChunkActivity {
    /// The most likely class of frame `i`.
    pub fn class(&self, i: usize) -> usize {
        let row = &self.log_probs[i];
        (0..7)
            .max_by(|&a, &b| row[a].total_cmp(&row[b]))
            .unwrap_or(0)
    }

    /// Whether local speaker `k` is in frame `i`'s most likely class.
    pub fn active(&self, i: usize, k: usize) -> bool {
        CLASSES[self.class(i)].contains(&k)
    }

    /// Number of local speakers in frame `i`'s most likely class.
    pub fn count(&self, i: usize) -> usize {
        CLASSES[self.class(i)].len()
    }

    /// Probability that local speaker `k` speaks in frame `i` (the classes holding it summed).
    pub fn probability(&self, i: usize, k: usize) -> f32 {
        let row = &self.log_probs[i];
        CLASSES
            .iter()
            .zip(row)
            .filter(|(c, _)| c.contains(&k))
            .map(|(_, lp)| lp.exp())
            .sum()
    }
}

/// Runs segmentation-3.0 on chunks of 10 s.
#[derive(Debug, Clone, Copy)]
pub struct Segmenter(());

impl Segmenter {
    /// Loads the network on first use in the process (shared after).
    pub fn new() -> Result<Self, VoiceError> {
        network()?;
        Ok(Segmenter(()))
    }

    /// The activity of one chunk: `samples` (16 kHz mono, at most [`CHUNK_SAMPLES`]; shorter
    /// input is zero-padded, longer is cut).
    pub fn run(&self, samples: &[f32]) -> Result<ChunkActivity, VoiceError> {
        let mut input = vec![0.0f32; CHUNK_SAMPLES];
        for (d, &s) in input.iter_mut().zip(samples) {
            *d = if s.is_finite() {
                s.clamp(-1.0, 1.0)
            } else {
                0.0
            };
        }
        let log_probs = network()?.forward(&input);
        Ok(ChunkActivity { log_probs })
    }

    /// The same chunk through tract's run of the same ONNX graph, which the analysis used
    /// before this crate computed the network itself: a reference for comparisons and
    /// benchmarks (`voice_cost`), about twice the CPU of [`Segmenter::run`]. Its plan is built
    /// on the first call.
    pub fn run_in_tract(&self, samples: &[f32]) -> Result<ChunkActivity, VoiceError> {
        let mut input = vec![0.0f32; CHUNK_SAMPLES];
        for (d, &s) in input.iter_mut().zip(samples) {
            *d = if s.is_finite() {
                s.clamp(-1.0, 1.0)
            } else {
                0.0
            };
        }
        let out = net::run(tract_plan()?, vec![(&[1, 1, CHUNK_SAMPLES], &input)])?;
        let flat = out
            .first()
            .filter(|o| o.len() == CHUNK_FRAMES * 7)
            .ok_or_else(|| net::model_err("segmentation output of unexpected shape"))?;
        let log_probs = flat
            .chunks_exact(7)
            .map(|c| <[f32; 7]>::try_from(c).expect("chunks of 7"))
            .collect();
        Ok(ChunkActivity { log_probs })
    }
}
