//! How strongly a displacement series oscillates in the head-gesture band: the nod and shake
//! scores.
//!
//! Method: the frame-to-frame displacements of one axis are summed into a position track,
//! which is detrended (least-squares line, so a slow pan or drift is not a gesture). A sinusoid
//! is fitted at each frequency of the band (a direct Fourier sum at the frames' own times, so
//! an uneven frame rate or a missing pair does not matter) and the best-fitting one taken. The
//! axis score is the product of three shares in `0..=1`:
//!
//! - *periodicity*: the fraction of the track's variance that sinusoid explains (1 for a pure
//!   oscillation, near 0 for jitter or a single jump);
//! - *amplitude*: `A / (A + A0)` with `A` the sinusoid's amplitude in percent of the frame
//!   width and `A0` = [`HALF_SCORE_AMPLITUDE`], so that sensor noise and compression wobble
//!   score near 0;
//! - *direction*: `A² / (A² + B²)`, `B` being the other axis's best in-band amplitude, so a
//!   nod (vertical) does not also count as a shake, and diagonal motion counts half for each.

use std::f64::consts::TAU;

/// The gesture band in Hz: head nods and shakes repeat about 1.5 to 5 times a second.
pub(crate) const BAND_HZ: (f64, f64) = (1.5, 5.0);
/// The amplitude (percent of the frame width) at which the amplitude share is 0.5.
pub(crate) const HALF_SCORE_AMPLITUDE: f64 = 0.5;
/// Fewer displacement samples than this in a window give no score.
pub(crate) const MIN_SAMPLES: usize = 8;
/// Frequency step of the search, Hz.
const STEP_HZ: f64 = 0.05;

/// The best in-band sinusoid of one axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BandFit {
    /// Its amplitude, in the unit of the displacements.
    pub(crate) amplitude: f64,
    /// Share of the detrended track's variance it explains, `0..=1`.
    pub(crate) periodicity: f64,
}

/// Fits the band to one axis: `samples` are `(time s, displacement since the previous
/// sample)`. `None` with too few samples, a span shorter than one period of the band's lowest
/// frequency, or a sampling rate too low for the band.
pub(crate) fn band_fit(samples: &[(f64, f64)]) -> Option<BandFit> {
    if samples.len() < MIN_SAMPLES {
        return None;
    }
    let (first, last) = (samples.first()?.0, samples.last()?.0);
    let span = last - first;
    if span.is_nan() || span * BAND_HZ.0 < 1.0 {
        return None;
    }
    // Highest frequency the sampling resolves (90% of Nyquist).
    let rate = (samples.len() - 1) as f64 / span;
    let top = BAND_HZ.1.min(0.45 * rate);
    if top < BAND_HZ.0 {
        return None;
    }
    let mut position = 0.0;
    let track: Vec<(f64, f64)> = samples
        .iter()
        .map(|&(t, d)| {
            position += d;
            (t - first, position)
        })
        .collect();
    let detrended = detrend(&track);
    let n = detrended.len() as f64;
    let variance = detrended.iter().map(|(_, p)| p * p).sum::<f64>() / n;
    let mut best = BandFit {
        amplitude: 0.0,
        periodicity: 0.0,
    };
    let steps = ((top - BAND_HZ.0) / STEP_HZ).floor() as usize;
    for k in 0..=steps {
        let omega = TAU * (BAND_HZ.0 + k as f64 * STEP_HZ);
        let (re, im) = detrended.iter().fold((0.0, 0.0), |(re, im), &(t, p)| {
            (re + p * (omega * t).cos(), im - p * (omega * t).sin())
        });
        let amplitude = 2.0 * (re * re + im * im).sqrt() / n;
        if amplitude > best.amplitude {
            best.amplitude = amplitude;
        }
    }
    best.periodicity = if variance > 0.0 {
        (best.amplitude * best.amplitude / 2.0 / variance).min(1.0)
    } else {
        0.0
    };
    Some(best)
}

/// The gesture score of an axis with fit `this`, against the other axis's fit `other`.
pub(crate) fn score(this: BandFit, other: Option<BandFit>) -> f64 {
    let a = this.amplitude;
    let b = other.map_or(0.0, |o| o.amplitude);
    let amplitude = a / (a + HALF_SCORE_AMPLITUDE);
    let direction = if a > 0.0 {
        a * a / (a * a + b * b)
    } else {
        0.0
    };
    (this.periodicity * amplitude * direction).clamp(0.0, 1.0)
}

/// `track` minus its least-squares line.
fn detrend(track: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let n = track.len() as f64;
    let (mt, mp) = track
        .iter()
        .fold((0.0, 0.0), |(a, b), &(t, p)| (a + t / n, b + p / n));
    let (cov, var) = track.iter().fold((0.0, 0.0), |(c, v), &(t, p)| {
        (c + (t - mt) * (p - mp), v + (t - mt) * (t - mt))
    });
    let slope = if var > 0.0 { cov / var } else { 0.0 };
    track
        .iter()
        .map(|&(t, p)| (t, p - mp - slope * (t - mt)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Displacements of a position `f(t)` sampled at `fps` for `seconds`.
    fn steps(fps: f64, seconds: f64, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        let n = (fps * seconds) as usize;
        (1..=n)
            .map(|k| {
                let t = k as f64 / fps;
                (t, f(t) - f(t - 1.0 / fps))
            })
            .collect()
    }

    #[test]
    fn a_sinusoid_in_the_band_is_found_with_its_amplitude() {
        let fit = band_fit(&steps(30.0, 5.0, |t| 2.0 * (TAU * 2.5 * t).sin())).unwrap();
        assert!((fit.amplitude - 2.0).abs() < 0.2, "{fit:?}");
        assert!(fit.periodicity > 0.9, "{fit:?}");
    }

    #[test]
    fn drift_and_a_single_jump_are_not_periodic() {
        let drift = band_fit(&steps(30.0, 5.0, |t| 4.0 * t)).unwrap();
        assert!(drift.amplitude < 0.05, "{drift:?}");
        let jump = band_fit(&steps(30.0, 5.0, |t| if t > 2.0 { 3.0 } else { 0.0 })).unwrap();
        assert!(jump.periodicity < 0.35, "{jump:?}");
    }

    #[test]
    fn too_short_or_too_sparse_gives_no_fit() {
        assert!(band_fit(&steps(30.0, 0.2, |t| t)).is_none());
        assert!(band_fit(&steps(2.0, 5.0, |t| t)).is_none());
    }

    #[test]
    fn the_dominant_axis_takes_the_score() {
        let strong = BandFit {
            amplitude: 2.0,
            periodicity: 0.9,
        };
        let weak = BandFit {
            amplitude: 0.1,
            periodicity: 0.5,
        };
        assert!(score(strong, Some(weak)) > 0.7);
        assert!(score(weak, Some(strong)) < 0.05);
    }
}
