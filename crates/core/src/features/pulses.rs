//! Glottal pulses by waveform cross-correlation, and jitter and shimmer over them.
//!
//! The pulse marks follow Praat's `Sound & Pitch: To PointProcess (cc)` (the
//! procedure behind `To PointProcess (periodic, cc)`): in each voiced stretch
//! of the F0 path, start at the largest absolute sample within half a period
//! of the middle, then step one period at a time to the left and to the right,
//! placing each next mark where the one-period waveform correlates best with
//! the current one (searched between 0.8 and 1.25 periods away, refined by
//! parabolic interpolation), and keep marks whose correlation and amplitude
//! clear Praat's thresholds.
//!
//! The voice-quality measures are Praat's (Boersma's *Voice* manual pages):
//!
//! - jitter (local) = mean |T(i) - T(i-1)| over consecutive periods / mean
//!   period, a ratio (0.01 = 1 %), with periods limited to 0.1-20 ms and
//!   consecutive periods differing by at most a factor 1.3;
//! - shimmer (local, dB) = mean |20 log10(A(i) / A(i-1))| over consecutive
//!   pulses, A being the Hann-windowed RMS over 20 % of the periods on either
//!   side of the pulse, pairs differing by at most a factor 1.6.

use serde::{Deserialize, Serialize};

use super::history::SampleHistory;
use super::SAMPLE_RATE;

/// Shortest period counted, s (Praat's standard 0.1 ms).
pub const PERIOD_FLOOR_S: f64 = 0.0001;
/// Longest period counted, s (Praat's standard 20 ms).
pub const PERIOD_CEILING_S: f64 = 0.02;
/// Largest ratio between consecutive periods for jitter and shimmer.
pub const MAX_PERIOD_FACTOR: f64 = 1.3;
/// Largest ratio between consecutive amplitudes for shimmer.
pub const MAX_AMPLITUDE_FACTOR: f64 = 1.6;

/// One glottal pulse mark.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pulse {
    /// Time of the mark, s from the start of the input.
    pub time_s: f64,
    /// Hann-windowed RMS amplitude around the mark (full scale 1.0), present
    /// when both neighbouring periods are valid periods.
    pub amplitude: Option<f32>,
}

fn dx() -> f64 {
    1.0 / SAMPLE_RATE as f64
}

/// Time of absolute sample `n` (its centre), s.
fn sample_time(n: i64) -> f64 {
    (n as f64 + 0.5) * dx()
}

fn low_index(t: f64) -> i64 {
    (t * SAMPLE_RATE as f64 - 0.5).floor() as i64
}

fn high_index(t: f64) -> i64 {
    (t * SAMPLE_RATE as f64 - 0.5).ceil() as i64
}

fn nearest_index(t: f64) -> i64 {
    (t * SAMPLE_RATE as f64).floor() as i64
}

/// Time of the largest absolute sample in `[tmin, tmax]`, refined by a parabola.
fn find_extremum(h: &SampleHistory, tmin: f64, tmax: f64, n_samples: i64) -> f64 {
    let imin = low_index(tmin).max(0);
    let imax = high_index(tmax).min(n_samples - 1);
    let n = imax - imin + 1;
    if n <= 0 {
        return 0.5 * (tmin + tmax);
    }
    if n == 1 {
        return sample_time(imin);
    }
    let (mut lo, mut hi) = (h.get(imin), h.get(imin));
    let (mut ilo, mut ihi) = (imin, imin);
    for i in imin + 1..=imax {
        let v = h.get(i);
        if v < lo {
            lo = v;
            ilo = i;
        }
        if v > hi {
            hi = v;
            ihi = i;
        }
    }
    if lo == hi {
        return 0.5 * (sample_time(imin) + sample_time(imax));
    }
    let i = if lo.abs() > hi.abs() { ilo } else { ihi };
    if i == imin || i == imax {
        return sample_time(i);
    }
    let (l, m, r) = (h.get(i - 1) as f64, h.get(i) as f64, h.get(i + 1) as f64);
    let denom = 2.0 * m - l - r;
    let offset = if denom != 0.0 {
        0.5 * (r - l) / denom
    } else {
        0.0
    };
    sample_time(i) + offset * dx()
}

struct Correlation {
    value: f64,
    time: Option<f64>,
    peak: f64,
}

/// Where between `tmin2` and `tmax2` the one-period waveform best resembles
/// the one around `t1` (Praat's `Sound_findMaximumCorrelation`).
fn find_maximum_correlation(
    h: &SampleHistory,
    n_samples: i64,
    t1: f64,
    window: f64,
    tmin2: f64,
    tmax2: f64,
) -> Correlation {
    let half = 0.5 * window;
    let ileft1 = nearest_index(t1 - half);
    let iright1 = nearest_index(t1 + half);
    let ileft2min = low_index(tmin2 - half);
    let ileft2max = high_index(tmax2 - half);
    let mut best = -1.0f64;
    let (mut r1_best, mut r3_best, mut ir) = (0.0, 0.0, 0.0);
    let mut peak = 0.0f64;
    let (mut r2, mut r3) = (0.0f64, 0.0f64);
    let len = (iright1 - ileft1 + 1).max(0);
    // Every sample inside the input and held: plain slices.
    let whole = |from: i64, to: i64| {
        (from >= 0 && to <= n_samples)
            .then(|| h.slice(from, to))
            .flatten()
    };
    let fast = match (
        whole(ileft1, ileft1 + len),
        whole(ileft2min, ileft2max + len),
    ) {
        (Some(a1), Some(span)) if len > 0 => Some((a1, span)),
        _ => None,
    };
    let norm1_fast = fast.map_or(0.0, |(a1, _)| {
        a1.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>()
    });
    // Running energy of the sliding window, for the fast path.
    let mut norm2_fast = fast.map_or(0.0, |(_, span)| {
        span[..len as usize]
            .iter()
            .map(|&v| (v as f64) * (v as f64))
            .sum::<f64>()
    });
    let mut peak_window: Option<usize> = None;
    for (m, ileft2) in (ileft2min..=ileft2max).enumerate() {
        let (norm1, norm2, product, local_peak) = match fast {
            Some((a1, span)) => {
                if m > 0 {
                    let (out, inn) = (span[m - 1] as f64, span[m - 1 + len as usize] as f64);
                    norm2_fast = (norm2_fast + inn * inn - out * out).max(0.0);
                }
                let product = dot(a1, &span[m..m + len as usize]);
                // The peak is only needed for the winning window: found below.
                (norm1_fast, norm2_fast, product, 0.0)
            }
            None => slow_window_stats(h, n_samples, ileft1, iright1, ileft2),
        };
        let r1 = r2;
        r2 = r3;
        r3 = if norm1 == 0.0 || norm2 <= 0.0 {
            0.0
        } else {
            product / (norm1 * norm2).sqrt()
        };
        if r2 > best && r2 >= r1 && r2 >= r3 {
            r1_best = r1;
            best = r2;
            r3_best = r3;
            ir = (ileft2 - 1) as f64;
            // Praat records the peak of the window just computed (one past
            // the best): kept as it is.
            peak = local_peak;
            peak_window = Some(m);
        }
    }
    if let (Some((_, span)), Some(m)) = (fast, peak_window) {
        peak = span[m..m + len as usize]
            .iter()
            .fold(0.0f32, |p, &v| p.max(v.abs())) as f64;
    }
    let mut time = None;
    if best > -1.0 {
        let mut interpolated = None;
        let d2r = (best - r1_best) + (best - r3_best);
        if d2r != 0.0 {
            let dr = 0.5 * (r3_best - r1_best);
            interpolated = Some(best + 0.5 * dr * dr / d2r);
            ir += dr / d2r;
        }
        let peak_time = t1 + (ir - ileft1 as f64) * dx();
        if peak_time >= tmin2 && peak_time <= tmax2 {
            time = Some(peak_time);
            if let Some(v) = interpolated {
                best = v;
            }
        } else {
            let middle = ((tmin2 - t1) * (tmax2 - t1)).max(0.0).sqrt();
            time = Some(if tmin2 < t1 { t1 - middle } else { t1 + middle });
            if r3 > best {
                best = r3;
            }
        }
    }
    Correlation {
        value: best,
        time,
        peak,
    }
}

/// Dot product of two equally long slices (eight running sums, so it
/// vectorises).
fn dot(a: &[f32], w: &[f32]) -> f64 {
    let mut acc = [0.0f32; 8];
    let chunks = a.len() / 8 * 8;
    for (xa, xw) in a[..chunks].chunks_exact(8).zip(w[..chunks].chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += xa[k] * xw[k];
        }
    }
    let mut p: f64 = acc.iter().map(|&v| v as f64).sum();
    for (&va, &vw) in a[chunks..].iter().zip(&w[chunks..]) {
        p += (va as f64) * (vw as f64);
    }
    p
}

/// Energies, dot product and peak of the windows sample by sample, skipping
/// samples outside the input (near its start and end).
fn slow_window_stats(
    h: &SampleHistory,
    n_samples: i64,
    ileft1: i64,
    iright1: i64,
    ileft2: i64,
) -> (f64, f64, f64, f64) {
    let in_range = |i: i64| i >= 0 && i < n_samples;
    let (mut norm1, mut norm2, mut product, mut local_peak) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (k, i1) in (ileft1..=iright1).enumerate() {
        let i2 = ileft2 + k as i64;
        if !in_range(i1) || !in_range(i2) {
            continue;
        }
        let (a1, a2) = (h.get(i1) as f64, h.get(i2) as f64);
        norm1 += a1 * a1;
        norm2 += a2 * a2;
        product += a1 * a2;
        local_peak = local_peak.max(a2.abs());
    }
    (norm1, norm2, product, local_peak)
}

/// Hann-windowed RMS over `[t - left, t + right]` (Praat's
/// `Sound_getHannWindowedRms`), `None` with fewer than 3 samples.
fn hann_windowed_rms(
    h: &SampleHistory,
    t: f64,
    left: f64,
    right: f64,
    n_samples: i64,
) -> Option<f64> {
    let imin = high_index(t - left).max(0);
    let imax = low_index(t + right).min(n_samples - 1);
    if imax - imin + 1 < 3 {
        return None;
    }
    let (mut sum, mut wsum) = (0.0f64, 0.0f64);
    for i in imin..=imax {
        let ti = sample_time(i);
        let width = if ti < t { left } else { right };
        let phase = (ti - t) / width;
        let w = 0.5 + 0.5 * (std::f64::consts::PI * phase).cos();
        let v = h.get(i) as f64 * w;
        sum += v * v;
        wsum += w * w;
    }
    if wsum > 0.0 {
        Some((sum / wsum).sqrt())
    } else {
        None
    }
}

fn is_valid_pair(p1: f64, p2: f64) -> bool {
    let factor = if p1 > p2 { p1 / p2 } else { p2 / p1 };
    (PERIOD_FLOOR_S..=PERIOD_CEILING_S).contains(&p1)
        && (PERIOD_FLOOR_S..=PERIOD_CEILING_S).contains(&p2)
        && factor <= MAX_PERIOD_FACTOR
}

/// Places pulses voiced stretch by voiced stretch.
pub(crate) struct PulseTracker {
    /// The last mark added while stepping right, so stepping left from the
    /// next stretch does not mark the same short gap twice.
    added_right: f64,
}

impl PulseTracker {
    pub fn new() -> Self {
        Self {
            added_right: f64::NEG_INFINITY,
        }
    }

    /// Marks the pulses of the voiced stretch `[tleft, tright]` (s) and appends
    /// them, in time order, to `pulses`. `f0_at(t)` is the F0 path in Hz,
    /// linearly interpolated, `None` where the nearest frame is unvoiced.
    /// `n_samples` is the length of the input so far (samples past it do not
    /// exist); `global_peak` the largest absolute sample so far.
    #[allow(clippy::too_many_arguments)] // each input is a distinct piece of the analysis state
    pub fn process(
        &mut self,
        h: &SampleHistory,
        n_samples: i64,
        f0_at: impl Fn(f64) -> Option<f64>,
        tleft: f64,
        tright: f64,
        global_peak: f64,
        pulses: &mut Vec<Pulse>,
    ) {
        let tmiddle = 0.5 * (tleft + tright);
        let Some(f0_middle) = f0_at(tmiddle) else {
            return;
        };
        let first = find_extremum(
            h,
            tmiddle - 0.5 / f0_middle,
            tmiddle + 0.5 / f0_middle,
            n_samples,
        );
        let mut left_marks = Vec::new();
        let mut right_marks = Vec::new();

        let mut t = first;
        // Each step moves at least 0.8 of a period of at most 600 Hz, so the
        // loops end; the bound guards against a pathological F0 path.
        for _ in 0..100_000 {
            let Some(f0) = f0_at(t) else { break };
            let c =
                find_maximum_correlation(h, n_samples, t, 1.0 / f0, t - 1.25 / f0, t - 0.8 / f0);
            t = match c.time {
                Some(found) if c.value > -1.0 => found,
                _ => t - 1.0 / f0,
            };
            if !t.is_finite() {
                break;
            }
            if t < tleft {
                if c.value > 0.7
                    && c.peak > 0.023333 * global_peak
                    && t - self.added_right > 0.8 / f0
                {
                    left_marks.push(t);
                }
                break;
            }
            if c.value > 0.3
                && (c.peak == 0.0 || c.peak > 0.01 * global_peak)
                && t - self.added_right > 0.8 / f0
            {
                left_marks.push(t);
            }
        }

        let mut t = first;
        for _ in 0..100_000 {
            let Some(f0) = f0_at(t) else { break };
            let c =
                find_maximum_correlation(h, n_samples, t, 1.0 / f0, t + 0.8 / f0, t + 1.25 / f0);
            t = match c.time {
                Some(found) if c.value > -1.0 => found,
                _ => t + 1.0 / f0,
            };
            if !t.is_finite() {
                break;
            }
            if t > tright {
                if c.value > 0.7 && c.peak > 0.023333 * global_peak {
                    right_marks.push(t);
                    self.added_right = t;
                }
                break;
            }
            if c.value > 0.3 && (c.peak == 0.0 || c.peak > 0.01 * global_peak) {
                right_marks.push(t);
                self.added_right = t;
            }
        }

        let before = pulses.len();
        let mut marks: Vec<f64> = left_marks.into_iter().rev().collect();
        marks.push(first);
        marks.extend(right_marks);
        for t in marks {
            // Keep the sequence strictly increasing (a point process holds each
            // time once).
            if pulses.last().is_none_or(|p| t > p.time_s) {
                pulses.push(Pulse {
                    time_s: t,
                    amplitude: None,
                });
            }
        }
        // Amplitudes need both neighbours: from the previous stretch's last
        // mark (its right neighbour just arrived) to this one's second-last.
        let from = before.saturating_sub(1).max(1);
        for i in from..pulses.len().saturating_sub(1) {
            let p1 = pulses[i].time_s - pulses[i - 1].time_s;
            let p2 = pulses[i + 1].time_s - pulses[i].time_s;
            if is_valid_pair(p1, p2) {
                pulses[i].amplitude =
                    hann_windowed_rms(h, pulses[i].time_s, 0.2 * p1, 0.2 * p2, n_samples)
                        .filter(|&a| a > 0.0)
                        .map(|a| a as f32);
            }
        }
    }
}

/// Whether interval `i` (from pulse `i` to `i + 1`) counts as a period:
/// within the period limits and not differing by more than the factor from
/// both of its neighbours (Praat's `PointProcess_isPeriod`).
fn is_period(t: &[f64], i: usize) -> bool {
    if i + 1 >= t.len() {
        return false;
    }
    let interval = t[i + 1] - t[i];
    if !(PERIOD_FLOOR_S..=PERIOD_CEILING_S).contains(&interval) {
        return false;
    }
    let factor = |other: f64| {
        if other > 0.0 {
            let f = interval / other;
            Some(if f < 1.0 { 1.0 / f } else { f })
        } else {
            None
        }
    };
    let previous = if i >= 1 {
        factor(t[i] - t[i - 1])
    } else {
        None
    };
    let next = if i + 2 < t.len() {
        factor(t[i + 2] - t[i + 1])
    } else {
        None
    };
    match (previous, next) {
        (Some(p), Some(n)) => !(p > MAX_PERIOD_FACTOR && n > MAX_PERIOD_FACTOR),
        _ => true,
    }
}

/// Sums behind jitter (local) over a run of pulses; combine spans by adding.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct JitterParts {
    pub abs_diff_sum: f64,
    pub pairs: usize,
    pub period_sum: f64,
    pub periods: usize,
}

impl JitterParts {
    pub fn of(pulses: &[Pulse]) -> Self {
        let t: Vec<f64> = pulses.iter().map(|p| p.time_s).collect();
        let mut parts = Self::default();
        for i in 1..t.len().saturating_sub(1) {
            let (p1, p2) = (t[i] - t[i - 1], t[i + 1] - t[i]);
            if is_valid_pair(p1, p2) {
                parts.abs_diff_sum += (p1 - p2).abs();
                parts.pairs += 1;
            }
        }
        for i in 0..t.len().saturating_sub(1) {
            if is_period(&t, i) {
                parts.period_sum += t[i + 1] - t[i];
                parts.periods += 1;
            }
        }
        parts
    }

    /// Jitter (local) as a ratio, if at least one pair and one period count.
    pub fn jitter(&self) -> Option<f64> {
        if self.pairs == 0 || self.periods == 0 {
            return None;
        }
        let mean_period = self.period_sum / self.periods as f64;
        Some(self.abs_diff_sum / self.pairs as f64 / mean_period)
    }
}

/// Shimmer (local, dB) over the pulses of a span, if any pair counts.
pub(crate) fn shimmer_local_db(pulses: &[Pulse]) -> Option<f64> {
    // The amplitude tier: inner pulses with valid neighbouring periods.
    let mut tier: Vec<(f64, f64)> = Vec::with_capacity(pulses.len());
    for i in 1..pulses.len().saturating_sub(1) {
        let p1 = pulses[i].time_s - pulses[i - 1].time_s;
        let p2 = pulses[i + 1].time_s - pulses[i].time_s;
        if let (true, Some(a)) = (is_valid_pair(p1, p2), pulses[i].amplitude) {
            tier.push((pulses[i].time_s, a as f64));
        }
    }
    let (mut sum, mut n) = (0.0, 0usize);
    for w in tier.windows(2) {
        let p = w[1].0 - w[0].0;
        if !(PERIOD_FLOOR_S..=PERIOD_CEILING_S).contains(&p) {
            continue;
        }
        let (a1, a2) = (w[0].1, w[1].1);
        let factor = if a1 > a2 { a1 / a2 } else { a2 / a1 };
        if factor <= MAX_AMPLITUDE_FACTOR {
            sum += (a1 / a2).log10().abs();
            n += 1;
        }
    }
    if n == 0 {
        None
    } else {
        Some(20.0 * sum / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(times: &[f64]) -> Vec<Pulse> {
        times
            .iter()
            .map(|&t| Pulse {
                time_s: t,
                amplitude: Some(0.5),
            })
            .collect()
    }

    #[test]
    fn jitter_of_alternating_periods_is_their_difference_over_the_mean() {
        // Periods 9.9 ms and 10.1 ms alternating: |diff| 0.2 ms, mean 10 ms.
        let mut t = vec![0.0];
        for i in 0..50 {
            let p = if i % 2 == 0 { 0.0099 } else { 0.0101 };
            t.push(t[t.len() - 1] + p);
        }
        let j = JitterParts::of(&marks(&t)).jitter().unwrap_or(0.0);
        assert!((j - 0.02).abs() < 1e-9, "{j}");
    }

    #[test]
    fn periods_outside_the_limits_do_not_count() {
        let t = [0.0, 0.01, 0.02, 0.1, 0.11, 0.12];
        let parts = JitterParts::of(&marks(&t));
        assert_eq!(parts.pairs, 2);
        assert_eq!(parts.jitter(), Some(0.0));
    }

    #[test]
    fn shimmer_of_alternating_amplitudes_is_their_db_ratio() {
        let pulses: Vec<Pulse> = (0..40)
            .map(|i| Pulse {
                time_s: i as f64 * 0.005,
                amplitude: Some(if i % 2 == 0 { 1.0 } else { 0.8 }),
            })
            .collect();
        let s = shimmer_local_db(&pulses).unwrap_or(0.0);
        let expected = 20.0 * (1.0f64 / 0.8).log10();
        assert!((s - expected).abs() < 1e-6, "{s} vs {expected}");
    }
}
