//! F0 candidates per frame by Boersma's (1993) autocorrelation method, and the path through them.
//!
//! Boersma, P. (1993). "Accurate short-term analysis of the fundamental
//! frequency and the harmonics-to-noise ratio of a sampled sound." *IFA
//! Proceedings* 17, 97-110. This is the method behind Praat's
//! `Sound: To Pitch (ac)...`, reproduced here with Praat's standard settings
//! (pitch floor 75 Hz, ceiling 600 Hz, 3 periods per window, 15 candidates,
//! silence threshold 0.03, voicing threshold 0.45, octave cost 0.01, octave-jump
//! cost 0.35, voiced/unvoiced cost 0.14):
//!
//! 1. A Hann window of three floor periods (40 ms) around the frame centre,
//!    after removing the local mean; its autocorrelation via the FFT is divided
//!    by the autocorrelation of the window itself (the paper's key step, which
//!    undoes the window's taper and makes a periodic signal score near 1).
//! 2. Every local maximum above half the voicing threshold is a candidate:
//!    lag and strength by parabolic interpolation, the strongest two then
//!    refined to the maximum of the sinc interpolant (Praat refines all;
//!    the weaker ones never win the path; in frames too quiet for any voiced
//!    candidate to win, none is refined). The unvoiced candidate is always
//!    present.
//! 3. A Viterbi path through the candidates with the octave, octave-jump and
//!    voiced/unvoiced costs ([`PitchPath`]), decided as soon as all surviving
//!    paths agree so the result streams.

use std::collections::VecDeque;
use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};

use super::interp::{improve_maximum, DEPTH_REFINE};
use super::SAMPLE_RATE;

/// Lowest F0 searched, Hz (Praat's default pitch floor).
pub const PITCH_FLOOR_HZ: f64 = 75.0;
/// Highest F0 accepted as voiced, Hz (the ceiling the validation uses).
pub const PITCH_CEILING_HZ: f64 = 600.0;
/// Candidates kept per frame, the unvoiced one included.
pub(crate) const MAX_CANDIDATES: usize = 15;
const SILENCE_THRESHOLD: f64 = 0.03;
const VOICING_THRESHOLD: f64 = 0.45;
const OCTAVE_COST: f64 = 0.01;
const OCTAVE_JUMP_COST: f64 = 0.35;
const VOICED_UNVOICED_COST: f64 = 0.14;

/// Half the analysis window in samples: Praat rounds three floor periods
/// (640 samples) down to an even 638.
pub(crate) const HALF_WINDOW: usize = 319;
const WINDOW: usize = 2 * HALF_WINDOW;
/// Samples in the longest period (1 / floor).
pub(crate) const PERIOD: usize = 213;
const HALF_PERIOD: usize = PERIOD / 2 + 1;
/// Longest lag searched for maxima: a window holds three periods, plus two.
const MAX_LAG: usize = WINDOW / 3 + 2;
/// Longest lag kept for interpolation: half the window.
const INTERP_LAGS: usize = WINDOW / 2;
const FFT_LEN: usize = 1024;
/// Candidates refined on the sinc interpolant per frame.
const REFINED: usize = 2;

/// One F0 hypothesis for a frame: `frequency` 0 means "unvoiced".
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Candidate {
    /// Hz; 0 for the unvoiced candidate.
    pub frequency: f64,
    /// Normalised autocorrelation at the candidate's lag, 0..1.
    pub strength: f64,
}

impl Candidate {
    /// Whether the candidate counts as voiced (Praat: above 0, below the ceiling).
    pub fn is_voiced(&self) -> bool {
        self.frequency > 0.0 && self.frequency < PITCH_CEILING_HZ
    }
}

/// All candidates of one frame plus its relative peak amplitude.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FrameCandidates {
    /// Local peak over the running global peak, 0..1: drives the silence rule.
    pub intensity: f64,
    /// `candidates[0]` is always the unvoiced one.
    pub candidates: [Candidate; MAX_CANDIDATES],
    /// How many entries of `candidates` are in use.
    pub len: usize,
}

impl FrameCandidates {
    fn unvoiced(intensity: f64) -> Self {
        Self {
            intensity,
            candidates: [Candidate::default(); MAX_CANDIDATES],
            len: 1,
        }
    }

    fn slice(&self) -> &[Candidate] {
        &self.candidates[..self.len]
    }
}

/// Mean of the floor period on each side of the frame centre (between
/// `samples[centre - 1]` and `samples[centre]`), which the pitch and the
/// harmonicity analyses both subtract.
/// Four running sums rather than one, so the adds overlap: on 16-bit PCM
/// every partial sum is exact and the order cannot change the result;
/// elsewhere it moves the mean by rounding only.
pub(crate) fn local_mean(samples: &[f32], centre: usize) -> f64 {
    let part = &samples[centre - PERIOD..centre + PERIOD];
    let mut acc = [0.0f64; 4];
    let chunks = part.chunks_exact(4);
    let tail: f64 = chunks.remainder().iter().map(|&v| v as f64).sum();
    for c in chunks {
        for k in 0..4 {
            acc[k] += c[k] as f64;
        }
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3]) + tail) / (2 * PERIOD) as f64
}

/// Reusable buffers for the per-frame autocorrelation analysis.
pub(crate) struct AcAnalyzer {
    forward: Arc<dyn RealToComplex<f32>>,
    inverse: Arc<dyn ComplexToReal<f32>>,
    window: Vec<f32>,
    /// 1 / the window's own normalised autocorrelation, lags 0..=INTERP_LAGS.
    inv_window_r: Vec<f64>,
    frame: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    scratch_fwd: Vec<Complex<f32>>,
    scratch_inv: Vec<Complex<f32>>,
    /// Normalised autocorrelation at lags -INTERP_LAGS..=INTERP_LAGS.
    r: Vec<f64>,
    maxima: Vec<usize>,
}

impl AcAnalyzer {
    pub fn new() -> Self {
        let mut planner = RealFftPlanner::<f32>::new();
        let forward = planner.plan_fft_forward(FFT_LEN);
        let inverse = planner.plan_fft_inverse(FFT_LEN);
        let window: Vec<f32> = (1..=WINDOW)
            .map(|i| {
                (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / (WINDOW as f64 + 1.0)).cos())
                    as f32
            })
            .collect();
        let mut analyzer = Self {
            scratch_fwd: forward.make_scratch_vec(),
            scratch_inv: inverse.make_scratch_vec(),
            spectrum: forward.make_output_vec(),
            frame: vec![0.0; FFT_LEN],
            forward,
            inverse,
            window,
            inv_window_r: Vec::new(),
            r: vec![0.0; 2 * INTERP_LAGS + 1],
            maxima: Vec::with_capacity(64),
        };
        // The window's own normalised autocorrelation, by the same FFT route.
        analyzer.frame[..WINDOW].copy_from_slice(&analyzer.window);
        analyzer.frame[WINDOW..].fill(0.0);
        let ac = analyzer.autocorrelate();
        analyzer.inv_window_r = ac.iter().map(|&v| ac[0] / v).collect();
        analyzer
    }

    /// Autocorrelation of `self.frame` (zero-padded), lags 0..=INTERP_LAGS.
    fn autocorrelate(&mut self) -> Vec<f64> {
        self.power_spectrum_to_autocorrelation();
        self.frame[..=INTERP_LAGS]
            .iter()
            .map(|&v| v as f64)
            .collect()
    }

    /// Replaces `self.frame` by its circular autocorrelation (unnormalised).
    fn power_spectrum_to_autocorrelation(&mut self) {
        // Lengths are fixed at construction, so the FFT cannot fail.
        let _ = self.forward.process_with_scratch(
            &mut self.frame,
            &mut self.spectrum,
            &mut self.scratch_fwd,
        );
        for c in self.spectrum.iter_mut() {
            *c = Complex::new(c.norm_sqr(), 0.0);
        }
        let _ = self.inverse.process_with_scratch(
            &mut self.spectrum,
            &mut self.frame,
            &mut self.scratch_inv,
        );
    }

    /// Analyses the frame whose centre lies between `samples[centre - 1]` and
    /// `samples[centre]`. `samples` must hold `HALF_WINDOW` samples before and
    /// after `centre`; `mean` is its [`local_mean`] and `global_peak` the
    /// largest absolute sample so far.
    pub fn analyze(
        &mut self,
        samples: &[f32],
        centre: usize,
        mean: f64,
        global_peak: f64,
    ) -> FrameCandidates {
        let start = centre - HALF_WINDOW;
        let mean32 = mean as f32;
        for ((dst, &x), &w) in self.frame[..WINDOW]
            .iter_mut()
            .zip(&samples[start..start + WINDOW])
            .zip(&self.window)
        {
            *dst = (x - mean32) * w;
        }
        self.frame[WINDOW..].fill(0.0);

        let peak_lo = HALF_WINDOW - HALF_PERIOD; // 0-based start of the central period
        let peak_hi = (HALF_WINDOW + HALF_PERIOD).min(WINDOW);
        let local_peak = self.frame[peak_lo..peak_hi]
            .iter()
            .fold(0.0f32, |m, &v| m.max(v.abs())) as f64;
        let intensity = if global_peak <= 0.0 || local_peak >= global_peak {
            if local_peak > 0.0 {
                1.0
            } else {
                0.0
            }
        } else {
            local_peak / global_peak
        };
        if local_peak == 0.0 {
            return FrameCandidates::unvoiced(0.0);
        }
        // In a frame too quiet for any voiced candidate to win the path (see
        // `voiced_can_win`), the unvoiced candidate alone decides the same
        // path: no autocorrelation is needed.
        if !voiced_can_win(intensity) {
            return FrameCandidates::unvoiced(intensity);
        }

        self.power_spectrum_to_autocorrelation();
        let ac0 = self.frame[0] as f64;
        if ac0.is_nan() || ac0 <= 0.0 {
            return FrameCandidates::unvoiced(intensity);
        }
        let centre_lag = INTERP_LAGS;
        self.r[centre_lag] = 1.0;
        let inv_ac0 = 1.0 / ac0;
        let (below, above) = self.r.split_at_mut(centre_lag + 1);
        for ((up, &ac), &inv_w) in above
            .iter_mut()
            .zip(&self.frame[1..=INTERP_LAGS])
            .zip(&self.inv_window_r[1..])
        {
            *up = ac as f64 * inv_ac0 * inv_w;
        }
        for (down, &up) in below[..centre_lag].iter_mut().rev().zip(above.iter()) {
            *down = up;
        }

        let mut out = FrameCandidates::unvoiced(intensity);
        let rate = SAMPLE_RATE as f64;
        let r = &self.r;
        self.maxima.clear();
        let mut places = [0usize; MAX_CANDIDATES];
        for lag in 2..MAX_LAG.min(INTERP_LAGS) {
            let (prev, here, next) = (
                r[centre_lag + lag - 1],
                r[centre_lag + lag],
                r[centre_lag + lag + 1],
            );
            if !(here > 0.5 * VOICING_THRESHOLD && here > prev && here >= next) {
                continue;
            }
            let dr = 0.5 * (next - prev);
            let d2r = 2.0 * here - prev - next;
            let lag_est = lag as f64 + dr / d2r;
            let frequency = rate / lag_est;
            // Parabolic peak height; Praat's sinc estimate differs by far
            // less than a candidate's margin, and the strongest candidates
            // are refined on the sinc interpolant below anyway.
            let mut strength = here + 0.5 * dr * dr / d2r;
            if strength > 1.0 {
                strength = 1.0 / strength;
            }
            let place = if out.len < MAX_CANDIDATES {
                out.len += 1;
                Some(out.len - 1)
            } else {
                // Replace the weakest, favouring high frequencies so a perfectly
                // periodic signal does not lose its true period to its multiples.
                let mut weakest = 2.0;
                let mut weakest_place = None;
                for (i, c) in out.candidates.iter().enumerate().skip(1) {
                    let local = c.strength - OCTAVE_COST * (PITCH_FLOOR_HZ / c.frequency).log2();
                    if local < weakest {
                        weakest = local;
                        weakest_place = Some(i);
                    }
                }
                let mine = strength - OCTAVE_COST * (PITCH_FLOOR_HZ / frequency).log2();
                if mine <= weakest {
                    None
                } else {
                    weakest_place
                }
            };
            if let Some(p) = place {
                out.candidates[p] = Candidate {
                    frequency,
                    strength,
                };
                places[p] = lag;
            }
        }

        // Refine the strongest candidates (by Praat's candidate ranking); the
        // weaker ones keep their parabolic/sinc estimates, which differ from
        // the refined values by far less than they trail the strongest.
        let mut order: [usize; MAX_CANDIDATES] = std::array::from_fn(|i| i);
        let rank = |c: &Candidate| c.strength - OCTAVE_COST * (PITCH_FLOOR_HZ / c.frequency).log2();
        order[1..out.len]
            .sort_by(|&a, &b| rank(&out.candidates[b]).total_cmp(&rank(&out.candidates[a])));
        for &i in order[1..out.len].iter().take(REFINED) {
            let (x, mut y) = improve_maximum(r, centre_lag + places[i], DEPTH_REFINE);
            let lag = x - centre_lag as f64;
            if lag > 0.0 {
                out.candidates[i].frequency = rate / lag;
            }
            if y > 1.0 {
                y = 1.0 / y;
            }
            out.candidates[i].strength = y;
        }
        out
    }
}

/// Praat's local score of the unvoiced candidate in a frame whose local peak
/// is `intensity` times the global peak: the quieter, the higher.
fn unvoiced_strength(intensity: f64) -> f64 {
    VOICING_THRESHOLD + (2.0 - intensity / (SILENCE_THRESHOLD / (1.0 + VOICING_THRESHOLD))).max(0.0)
}

/// Whether a voiced candidate of a frame with this `intensity` can be on the
/// best path. A voiced candidate scores at most 1 locally and going through
/// the unvoiced one instead costs at most two voiced/unvoiced transitions,
/// so when the unvoiced score beats 1 by more than that, every path through
/// a voiced candidate of the frame has a better twin through the unvoiced
/// one, and no voiced candidate's strength or frequency can matter.
fn voiced_can_win(intensity: f64) -> bool {
    unvoiced_strength(intensity) <= 1.0 + 2.0 * VOICED_UNVOICED_COST + 1e-9
}

/// Praat's local score of a candidate: strength minus the octave cost for
/// voiced ones, a silence-dependent constant for the unvoiced one.
fn local_score(c: &Candidate, unvoiced_strength: f64) -> f64 {
    if c.is_voiced() {
        c.strength - OCTAVE_COST * (PITCH_CEILING_HZ / c.frequency).log2()
    } else {
        unvoiced_strength
    }
}

/// Transition cost between candidates given as log2 of their frequency
/// (`None` for unvoiced).
fn transition_cost(from: Option<f64>, to: Option<f64>) -> f64 {
    match (from, to) {
        (None, None) => 0.0,
        (Some(a), Some(b)) => OCTAVE_JUMP_COST * (a - b).abs(),
        _ => VOICED_UNVOICED_COST,
    }
}

fn log2_if_voiced(c: &Candidate) -> Option<f64> {
    c.is_voiced().then(|| c.frequency.log2())
}

#[derive(Clone, Copy)]
struct PendingFrame {
    cands: FrameCandidates,
    /// log2 of each candidate's frequency, `None` where unvoiced.
    log2f: [Option<f64>; MAX_CANDIDATES],
    local: [f64; MAX_CANDIDATES],
    /// Best cumulative score of a path ending in each candidate.
    delta: [f64; MAX_CANDIDATES],
    /// Best predecessor (candidate index in the previous pending frame).
    psi: [u8; MAX_CANDIDATES],
}

/// Frames the path may hold undecided before the best path so far is forced
/// (1 s): bounds the latency of a stream on a sustained vowel.
const MAX_UNDECIDED: usize = 100;

/// Streaming Viterbi over the per-frame candidates. A frame is decided as soon
/// as every surviving path passes through the same candidate there, which is
/// exactly the decision the whole-file Viterbi would make (no later frame can
/// reach the discarded alternatives); after [`MAX_UNDECIDED`] frames without
/// agreement the best path so far is taken and later frames are re-scored
/// from it.
pub(crate) struct PitchPath {
    pending: VecDeque<PendingFrame>,
    /// The candidate chosen for the last decided frame (log2 F0, `None` for
    /// unvoiced), anchoring the next.
    anchor: Option<Option<f64>>,
}

/// Fills `delta`/`psi` of `frame` from `prev`, or from the anchor when there
/// is no previous pending frame.
fn score(prev: Option<&PendingFrame>, anchor: Option<Option<f64>>, frame: &mut PendingFrame) {
    let n = frame.cands.len;
    match prev {
        Some(prev) => {
            for j in 0..n {
                let to = frame.log2f[j];
                let mut best = f64::NEG_INFINITY;
                let mut place = 0u8;
                for i in 0..prev.cands.len {
                    let v = prev.delta[i] - transition_cost(prev.log2f[i], to);
                    if v > best {
                        best = v;
                        place = i as u8;
                    }
                }
                frame.delta[j] = best + frame.local[j];
                frame.psi[j] = place;
            }
            // Scores only matter relative to each other: keep them small.
            let top = frame.delta[..n]
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            if top.is_finite() {
                for d in &mut frame.delta[..n] {
                    *d -= top;
                }
            }
        }
        None => {
            for j in 0..n {
                let cost = anchor.map_or(0.0, |a| transition_cost(a, frame.log2f[j]));
                frame.delta[j] = frame.local[j] - cost;
            }
        }
    }
}

impl PitchPath {
    pub fn new() -> Self {
        Self {
            pending: VecDeque::with_capacity(MAX_UNDECIDED + 2),
            anchor: None,
        }
    }

    /// Adds the next frame; pushes the candidates of newly decided frames (in
    /// order) onto `decided`.
    pub fn push(&mut self, cands: FrameCandidates, decided: &mut Vec<Candidate>) {
        let unvoiced_strength = unvoiced_strength(cands.intensity);
        let mut frame = PendingFrame {
            cands,
            log2f: [None; MAX_CANDIDATES],
            local: [0.0; MAX_CANDIDATES],
            delta: [0.0; MAX_CANDIDATES],
            psi: [0; MAX_CANDIDATES],
        };
        for (i, c) in frame.cands.slice().iter().enumerate() {
            frame.local[i] = local_score(c, unvoiced_strength);
            frame.log2f[i] = log2_if_voiced(c);
        }
        score(self.pending.back(), self.anchor, &mut frame);
        self.pending.push_back(frame);
        self.decide_converged(decided);
        if self.pending.len() > MAX_UNDECIDED {
            self.force_oldest(decided);
        }
    }

    fn decide_converged(&mut self, decided: &mut Vec<Candidate>) {
        let len = self.pending.len();
        if len < 2 {
            return;
        }
        let newest = &self.pending[len - 1];
        let mut states: u32 = (1u32 << newest.cands.len) - 1;
        // Walk back until all paths share one candidate.
        let mut j = len - 1;
        loop {
            let frame = &self.pending[j];
            let mut prev_states = 0u32;
            let mut bits = states;
            while bits != 0 {
                let s = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                prev_states |= 1 << frame.psi[s];
            }
            states = prev_states;
            j -= 1;
            if states.count_ones() == 1 {
                let state = states.trailing_zeros() as usize;
                self.emit_through(j, state, decided);
                return;
            }
            if j == 0 {
                return;
            }
        }
    }

    /// Decides pending frames `0..=last` along the path ending in candidate
    /// `state` of frame `last`, and drops them.
    fn emit_through(&mut self, last: usize, state: usize, decided: &mut Vec<Candidate>) {
        let start = decided.len();
        let mut s = state;
        let mut k = last;
        decided.resize(start + last + 1, Candidate::default());
        loop {
            let frame = &self.pending[k];
            decided[start + k] = frame.cands.candidates[s];
            if k == 0 {
                break;
            }
            s = frame.psi[s] as usize;
            k -= 1;
        }
        self.anchor = Some(log2_if_voiced(&decided[start + last]));
        self.pending.drain(..=last);
    }

    fn best_end_state(&self) -> usize {
        match self.pending.back() {
            Some(f) => {
                let mut best = 0;
                for i in 1..f.cands.len {
                    if f.delta[i] > f.delta[best] {
                        best = i;
                    }
                }
                best
            }
            None => 0,
        }
    }

    /// Takes the oldest pending frame from the best path so far, then
    /// re-scores the rest so every surviving path descends from it.
    fn force_oldest(&mut self, decided: &mut Vec<Candidate>) {
        let mut s = self.best_end_state();
        for k in (1..self.pending.len()).rev() {
            s = self.pending[k].psi[s] as usize;
        }
        self.emit_through(0, s, decided);
        let frames = self.pending.make_contiguous();
        for k in 0..frames.len() {
            let (before, rest) = frames.split_at_mut(k);
            score(before.last(), self.anchor, &mut rest[0]);
        }
    }

    /// Decides every remaining frame along the best path (end of input).
    pub fn finish(&mut self, decided: &mut Vec<Candidate>) {
        if self.pending.is_empty() {
            return;
        }
        let s = self.best_end_state();
        let last = self.pending.len() - 1;
        self.emit_through(last, s, decided);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(f0: f64, seconds: f64) -> Vec<f32> {
        let n = (seconds * SAMPLE_RATE as f64) as usize;
        (0..n)
            .map(|i| {
                let t = i as f64 / SAMPLE_RATE as f64;
                (0..5)
                    .map(|h| {
                        (2.0 * std::f64::consts::PI * f0 * (h + 1) as f64 * t).sin()
                            / (h + 1) as f64
                    })
                    .sum::<f64>() as f32
                    * 0.3
            })
            .collect()
    }

    #[test]
    fn strongest_candidate_of_a_harmonic_tone_is_its_f0() {
        let x = tone(200.0, 0.2);
        let mut a = AcAnalyzer::new();
        let c = a.analyze(&x, 1600, local_mean(&x, 1600), 0.6);
        let best = c.slice()[1..]
            .iter()
            .max_by(|a, b| a.strength.total_cmp(&b.strength))
            .copied()
            .unwrap_or_default();
        assert!((best.frequency - 200.0).abs() < 0.5, "{best:?}");
        assert!(best.strength > 0.95);
    }

    #[test]
    fn digital_silence_has_only_the_unvoiced_candidate() {
        let x = vec![0.0f32; 4000];
        let mut a = AcAnalyzer::new();
        let c = a.analyze(&x, 2000, local_mean(&x, 2000), 0.0);
        assert_eq!(c.len, 1);
        assert_eq!(c.intensity, 0.0);
    }

    #[test]
    fn a_tone_far_below_the_loudest_sample_has_only_the_unvoiced_candidate() {
        // A clear 200 Hz tone whose peak is 1 % of the loudest sample so far:
        // no voiced candidate could be on the path, so none is offered.
        let x = tone(200.0, 0.2);
        let mut a = AcAnalyzer::new();
        let quiet = a.analyze(&x, 1600, local_mean(&x, 1600), 30.0);
        assert_eq!(quiet.len, 1);
        assert!(quiet.intensity > 0.0 && !voiced_can_win(quiet.intensity));
        // The same tone at 20 % of the loudest sample keeps its candidates.
        let louder = a.analyze(&x, 1600, local_mean(&x, 1600), 1.5);
        assert!(voiced_can_win(louder.intensity));
        assert!(louder.slice()[1..]
            .iter()
            .any(|c| (c.frequency - 200.0).abs() < 0.5));
    }

    #[test]
    fn local_mean_is_the_mean_of_a_floor_period_each_side() {
        let x: Vec<f32> = (0..1000)
            .map(|i| ((i * 37) % 101) as f32 / 32768.0)
            .collect();
        let plain = x[500 - PERIOD..500 + PERIOD]
            .iter()
            .map(|&v| v as f64)
            .sum::<f64>()
            / (2 * PERIOD) as f64;
        assert_eq!(local_mean(&x, 500), plain);
    }
}
