//! Voice activity from the `earshot` neural detector, resampled onto the 10 ms frame grid.
//!
//! `earshot` (pure Rust, weights compiled in) scores consecutive 256-sample
//! (16 ms) blocks at 16 kHz with a probability of voice in 0..1. A frame takes
//! the score of the block that contains its centre.

use earshot::Detector;

/// Samples per `earshot` block.
pub(crate) const BLOCK: usize = 256;
/// Probability at or above which a frame counts as speech (earshot's
/// recommended default).
pub const VAD_THRESHOLD: f32 = 0.5;

/// `v.round()` for |v| < 2^23, without a library call (so the loop
/// vectorises): the fraction left by truncation is exact.
fn round_half_away(v: f32) -> i32 {
    let whole = v as i32;
    let fraction = v - whole as f32;
    if fraction >= 0.5 {
        whole + 1
    } else if fraction <= -0.5 {
        whole - 1
    } else {
        whole
    }
}

/// Streaming wrapper: blocks are scored strictly in order.
pub(crate) struct Vad {
    detector: Box<Detector>,
    scores: Vec<f32>,
    /// Absolute index of the block `scores[0]` belongs to.
    first_block: u64,
    block: [i16; BLOCK],
}

impl Vad {
    pub fn new() -> Self {
        Self {
            detector: Detector::default_boxed(),
            scores: Vec::new(),
            first_block: 0,
            block: [0; BLOCK],
        }
    }

    /// Blocks scored so far (absolute count).
    pub fn blocks_done(&self) -> u64 {
        self.first_block + self.scores.len() as u64
    }

    /// Scores the next block; `samples` must be exactly one block, already
    /// sanitised to finite values in -1..1.
    pub fn score_block(&mut self, samples: &[f32]) {
        // The i16 path avoids the f32 path's debug-only range assertion and is
        // what the network was trained on.
        for (dst, &x) in self.block.iter_mut().zip(samples) {
            *dst = round_half_away(x * 32767.0) as i16;
        }
        let p = self.detector.predict_i16(&self.block);
        self.scores.push(if p.is_finite() {
            p.clamp(0.0, 1.0)
        } else {
            0.0
        });
    }

    /// Score of absolute block `b` (0 if it was already dropped or never scored).
    pub fn score(&self, b: u64) -> f32 {
        b.checked_sub(self.first_block)
            .and_then(|i| self.scores.get(i as usize))
            .copied()
            .unwrap_or(0.0)
    }

    /// Forgets scores of blocks before `b`.
    pub fn drop_before(&mut self, b: u64) {
        if b > self.first_block {
            let n = ((b - self.first_block) as usize).min(self.scores.len());
            self.scores.drain(..n);
            self.first_block += n as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_the_standard_library_on_the_sample_range() {
        let mut v = -32767.0f32;
        while v <= 32767.0 {
            for x in [v, v + 0.25, v + 0.5, v + 0.49999997, v - 0.5, v.next_up()] {
                if x.abs() <= 32767.0 {
                    assert_eq!(round_half_away(x), x.round() as i32, "{x}");
                }
            }
            v += 0.5;
        }
    }
}
