//! The recent input samples the analyses still need, addressed by absolute sample index.
//!
//! Every analysis looks a bounded distance back and ahead of its frame, and
//! the glottal-pulse search needs the whole voiced stretch it is working on;
//! everything older is released. Indices before the first sample read as
//! zero (a virtual silent past), so the first frames need no special case.

/// Samples of virtual silence before the first input sample.
pub(crate) const PAST: usize = 1024;

pub(crate) struct SampleHistory {
    buf: Vec<f32>,
    /// Absolute index of `buf[0]`; negative for the virtual past.
    start: i64,
}

impl SampleHistory {
    pub fn new() -> Self {
        Self {
            buf: vec![0.0; PAST],
            start: -(PAST as i64),
        }
    }

    /// One past the last absolute index held.
    pub fn end(&self) -> i64 {
        self.start + self.buf.len() as i64
    }

    /// Absolute index of the first sample held.
    #[cfg(test)]
    pub fn start(&self) -> i64 {
        self.start
    }

    /// Appends samples, mapping non-finite values to 0 and clamping to -1..1.
    pub fn push_sanitized(&mut self, pcm: &[f32]) {
        self.buf.reserve(pcm.len());
        self.buf.extend(pcm.iter().map(|&x| {
            if x.is_finite() {
                x.clamp(-1.0, 1.0)
            } else {
                0.0
            }
        }));
    }

    /// Appends `n` zeros (padding past the end of the input).
    pub fn push_zeros(&mut self, n: usize) {
        self.buf.resize(self.buf.len() + n, 0.0);
    }

    /// Everything held, with the position of absolute index `abs` in it.
    pub fn view(&self, abs: i64) -> (&[f32], usize) {
        (&self.buf, (abs - self.start) as usize)
    }

    /// Samples at absolute indices `from..to`, if all are held.
    pub fn slice(&self, from: i64, to: i64) -> Option<&[f32]> {
        if from < self.start || to > self.end() || from > to {
            return None;
        }
        Some(&self.buf[(from - self.start) as usize..(to - self.start) as usize])
    }

    /// Sample at absolute index `abs`, or 0 where nothing is held.
    pub fn get(&self, abs: i64) -> f32 {
        if abs < self.start {
            return 0.0;
        }
        self.buf
            .get((abs - self.start) as usize)
            .copied()
            .unwrap_or(0.0)
    }

    /// Lets samples before absolute index `abs` go. Memory is reclaimed in
    /// large steps so the copy is amortised.
    pub fn release_before(&mut self, abs: i64) {
        let dead = (abs - self.start).clamp(0, self.buf.len() as i64) as usize;
        if dead >= 16_384 && dead * 2 >= self.buf.len() {
            self.buf.drain(..dead);
            self.start += dead as i64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_zero_before_the_start_and_keeps_what_is_still_needed() {
        let mut h = SampleHistory::new();
        assert_eq!(h.get(-5), 0.0);
        h.push_sanitized(&[0.5, f32::NAN, 3.0, -f32::INFINITY]);
        assert_eq!(h.get(0), 0.5);
        assert_eq!(h.get(1), 0.0);
        assert_eq!(h.get(2), 1.0);
        assert_eq!(h.get(3), 0.0);
        let big: Vec<f32> = (0..40_000).map(|i| i as f32 / 40_000.0).collect();
        h.push_sanitized(&big);
        h.release_before(30_000);
        assert!(h.start() <= 30_000);
        assert_eq!(h.get(30_004), big[30_000]);
    }
}
