//! Loading the networks ahead of the first analysis that needs them.
//!
//! Every network is loaded and optimized once per process on first use, and a first use costs
//! far more than a run: segmentation-3.0's plan takes about 0.6 s of one core to build where it
//! runs in 66 ms, and CAM++ needs one plan per input length. Without a warm-up the first
//! windows of the first sessions after a server starts wait for those plans (0.7-0.9 s each,
//! `BENCHMARKS.md`). A server calls [`warm_up`] as it starts; an embedding application may call
//! it at start-up too, or leave the cost to the first analysis.
//!
//! The transcriber is not warmed: it loads in about 0.9 s but holds some 430 MB, which a server
//! that only streams never needs. It loads on the first upload or realtime session that
//! transcribes.

use std::time::{Duration, Instant};

/// What [`warm_up`] made ready, and what it cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmedUp {
    /// Voice activity, segmentation and speaker embeddings (`attune_voice::warm_up`).
    pub voices: bool,
    /// Face detection and landmarks.
    pub faces: bool,
    /// Wall time taken.
    pub elapsed: Duration,
}

/// Loads the voice and face networks every default analysis runs (about 2.7 s of one core and
/// 60 MB). Blocks until done; callers that need a network meanwhile wait for the same load
/// rather than repeating it. Calling it again costs nothing.
pub fn warm_up() -> WarmedUp {
    let started = Instant::now();
    let voices = attune_voice::warm_up().is_ok();
    let faces = crate::visual::faces::warm_up();
    WarmedUp {
        voices,
        faces,
        elapsed: started.elapsed(),
    }
}
