//! Vocal arousal: how activated a voice sounds, read from five measures of the
//! eGeMAPS family by two small logistic models fitted on real speech.
//!
//! The measures are those that stay put when the microphone's gain changes
//! and that do not depend on who is speaking as much as on how (mean pitch,
//! which is mostly the speaker's sex and size, is left to the speaker's own
//! baseline; absolute loudness is the microphone's):
//!
//! | Measure | Unit | Raised arousal |
//! |---|---|---|
//! | articulation rate | syllables/s | faster |
//! | harmonics-to-noise ratio | dB | lower (pressed, noisy phonation) |
//! | alpha ratio (50-1000 Hz over 1-5 kHz) | dB | higher (flatter spectrum: vocal effort) |
//! | spectral tilt 500-1500 Hz (least-squares slope of the log spectrum) | dB/kHz | flatter fall |
//! | loudness dynamics (5th-95th percentile) | dB | wider |
//!
//! (Scherer 2003; Banse & Scherer 1996; Eyben et al. 2016 for the eGeMAPS
//! definitions.) The spectral slope 0-500 Hz, which separates EmoDB's
//! emotions as well, is left out: a telephone band's 300 Hz high-pass puts it
//! at about +90 dB/kHz against +7 for neutral speech, three spreads, and read
//! a calm telephone call as aroused. `high` is the probability that a window is high-arousal
//! speech (anger, fear, joy) rather than neutral, bored or sad; `low` that it
//! is low-arousal (boredom, sadness) rather than neutral or aroused. Both are
//! fitted by `cargo run --release -p attune-core --example affect_fit` on
//! EmoDB (`../shared/data/real/emodb`, 10 actors) with leave-one-speaker-out
//! figures printed beside the weights, and committed as data in
//! `crates/core/data/arousal.json`. The arousal score is `logit(high) -
//! logit(low)`: above 0 more aroused than not.
//!
//! Every reading keeps each measure's contribution (weight times the distance
//! from neutral speech in spreads), so a rationale quotes the measures that
//! moved the score, in their units, against the norm of neutral speech.

// The standardization and the Newton steps index several vectors at once;
// index loops read as the algebra does.
#![allow(clippy::needless_range_loop)]

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

use super::features::{AudioMeasures, SpeakerMeasures};

/// The measures the models read, in the order of every vector here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Articulation rate, syllable nuclei per second of speech.
    Rate,
    /// Harmonics-to-noise ratio, dB.
    Hnr,
    /// Alpha ratio (1-5 kHz over 50-1000 Hz), dB: read by the low model only.
    Alpha,
    /// Alpha ratio inside the telephone band (1-3 kHz over 400-1000 Hz), dB: read by the high
    /// model only, which judges a voice against neutral speech, so a telephone line's cut
    /// below 300 Hz must not move it (the low model reads a voice against its own usual
    /// measures, where a constant line cancels).
    AlphaBand,
    /// Spectral tilt 500-1500 Hz (least-squares slope, level-free), dB/kHz.
    SlopeHigh,
    /// Loudness dynamics (5th-95th percentile range of speech frames), dB.
    LoudnessRange,
}

/// How many measures the models read.
pub const MEASURES: usize = 6;

impl Measure {
    /// Every measure, in vector order.
    pub const ALL: [Measure; MEASURES] = [
        Measure::Rate,
        Measure::Hnr,
        Measure::Alpha,
        Measure::AlphaBand,
        Measure::SlopeHigh,
        Measure::LoudnessRange,
    ];

    /// Whether the high (`true`) or low (`false`) model reads the measure.
    pub const fn read_by(self, high: bool) -> bool {
        match self {
            Measure::Alpha => !high,
            Measure::AlphaBand => high,
            _ => true,
        }
    }

    /// The measure's key in `arousal.json`.
    pub const fn key(self) -> &'static str {
        match self {
            Measure::Rate => "articulation_rate",
            Measure::Hnr => "hnr",
            Measure::Alpha => "alpha_ratio",
            Measure::AlphaBand => "alpha_band",
            Measure::SlopeHigh => "tilt_500_1500",
            Measure::LoudnessRange => "loudness_range",
        }
    }

    /// The measure in words, as rationales name it.
    pub const fn words(self) -> &'static str {
        match self {
            Measure::Rate => "articulation rate",
            Measure::Hnr => "harmonics-to-noise ratio",
            Measure::Alpha => "alpha ratio (high over low spectrum)",
            Measure::AlphaBand => "alpha ratio 0.4-3 kHz (high over low spectrum)",
            Measure::SlopeHigh => "spectral tilt 500-1500 Hz",
            Measure::LoudnessRange => "loudness dynamics",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Measure::Rate => " syll/s",
            Measure::Hnr | Measure::Alpha | Measure::AlphaBand | Measure::LoudnessRange => " dB",
            Measure::SlopeHigh => " dB/kHz",
        }
    }

    /// The measure's value in a window, in its unit.
    pub fn of(self, a: &AudioMeasures) -> Option<f64> {
        let v = match self {
            Measure::Rate => a.speech_rate,
            Measure::Hnr => a.hnr,
            Measure::Alpha => a.alpha_ratio,
            Measure::AlphaBand => a.alpha_band,
            // The spectral module measures dB/Hz; rationales read dB/kHz.
            Measure::SlopeHigh => a.tilt_500_1500.map(|s| s * 1000.0),
            Measure::LoudnessRange => a.loudness_range,
        };
        v.filter(|v| v.is_finite())
    }

    /// The measure of one voice in a window with several.
    pub fn of_speaker(self, p: &SpeakerMeasures) -> Option<f64> {
        let v = match self {
            Measure::Rate => p.speech_rate,
            Measure::Hnr => p.hnr,
            Measure::Alpha => p.alpha_ratio,
            Measure::AlphaBand => p.alpha_band,
            Measure::SlopeHigh => p.tilt_500_1500.map(|s| s * 1000.0),
            Measure::LoudnessRange => p.loudness_range,
        };
        v.filter(|v| v.is_finite())
    }

    fn quote(self, value: f64, norm: f64, adapted: bool) -> String {
        let digits = match self {
            Measure::Rate | Measure::SlopeHigh => 1,
            _ => 0,
        };
        let reference = if adapted {
            "this voice's usual"
        } else {
            "neutral speech"
        };
        format!(
            "{} {value:.digits$}{} ({reference} {norm:.digits$})",
            self.words(),
            self.unit()
        )
    }
}

/// A fitted logistic model over the standardized measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Logistic {
    /// One weight per standardized measure, in [`Measure::ALL`] order.
    pub weights: Vec<f64>,
    /// The intercept.
    pub bias: f64,
}

impl Logistic {
    /// The log-odds of `z` (standardized measures).
    pub fn logit(&self, z: &[f64]) -> f64 {
        self.bias + self.weights.iter().zip(z).map(|(w, x)| w * x).sum::<f64>()
    }
}

/// The arousal class of a training window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// High-arousal speech (anger, fear, joy).
    High,
    /// Neutral speech: neither model's positive class.
    Neutral,
    /// Low-arousal speech (boredom, sadness).
    Low,
}

/// The two models with the statistics they read against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArousalModel {
    /// Measure keys, in vector order (checked against [`Measure::ALL`]).
    pub measures: Vec<String>,
    /// Mean of each measure over the training windows (standardization).
    pub mean: Vec<f64>,
    /// Standard deviation of each measure over the training windows.
    pub sd: Vec<f64>,
    /// Mean of each measure over the neutral training windows: the norm
    /// rationales quote.
    pub neutral: Vec<f64>,
    /// High arousal against the rest.
    pub high: Logistic,
    /// Low arousal against the rest.
    pub low: Logistic,
    /// Where the weights come from (data set, windows, fitting).
    pub source: String,
}

/// What the models read in one window.
#[derive(Debug, Clone, PartialEq)]
pub struct ArousalReading {
    /// Probability of high-arousal speech.
    pub high: f64,
    /// Probability of low-arousal speech.
    pub low: f64,
    /// `logit(high) - logit(low)`.
    pub score: f64,
    /// The measures, in their units.
    pub values: [f64; MEASURES],
    /// What each measure was judged against, in its unit: neutral speech,
    /// moved by the conversation's [`Adaptation`] when one applied.
    pub center: [f64; MEASURES],
    /// Whether an adaptation moved the center.
    pub adapted: bool,
}

/// Readings of a voice before its own measures re-centre the models.
pub const ADAPT_AFTER_READINGS: f64 = 3.0;
/// Pseudo-readings of the population norm in the re-centring: the shift is
/// `n / (n + ADAPT_PRIOR)` of the way to the conversation's mean.
pub const ADAPT_PRIOR: f64 = 2.0;
/// Largest re-centring, in spreads of each measure.
pub const ADAPT_MAX_SD: f64 = 2.5;

/// One voice's running mean of the measures: its microphone and speaking
/// style (a far-field or telephone channel, spontaneous against read speech)
/// move the absolute measures as much as arousal does, so after
/// [`ADAPT_AFTER_READINGS`] readings of the voice each measure is also judged
/// from neutral speech moved toward the voice's own mean (at most
/// [`ADAPT_MAX_SD`] spreads, shrunk by [`ADAPT_PRIOR`]): the reading against
/// "this voice's usual". Per voice, not per conversation: the people of a
/// call each have their own microphone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Adaptation {
    n: f64,
    sum: [f64; MEASURES],
}

impl Adaptation {
    /// Folds a voice reading's measures in.
    pub fn observe(&mut self, values: &[f64; MEASURES]) {
        self.n += 1.0;
        for (s, v) in self.sum.iter_mut().zip(values) {
            *s += v;
        }
    }

    /// The shift of each measure's center for `model`, or `None` while too
    /// little has been heard.
    pub fn shift(&self, model: &ArousalModel) -> Option<[f64; MEASURES]> {
        if self.n < ADAPT_AFTER_READINGS {
            return None;
        }
        let weight = self.n / (self.n + ADAPT_PRIOR);
        let mut out = [0.0; MEASURES];
        for i in 0..MEASURES {
            let cap = ADAPT_MAX_SD * model.sd[i];
            out[i] = ((self.sum[i] / self.n - model.neutral[i]) * weight).clamp(-cap, cap);
        }
        Some(out)
    }
}

/// Speech a window needs before its arousal is read, seconds.
pub const MIN_SPEECH_S: f64 = 1.0;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x.clamp(-40.0, 40.0)).exp())
}

impl ArousalModel {
    /// The committed model (`crates/core/data/arousal.json`).
    pub fn shipped() -> &'static ArousalModel {
        static MODEL: OnceLock<ArousalModel> = OnceLock::new();
        MODEL.get_or_init(|| {
            let model: ArousalModel = serde_json::from_str(include_str!("../../data/arousal.json"))
                .expect("the committed arousal.json parses");
            assert!(
                model.is_consistent(),
                "arousal.json does not fit Measure::ALL"
            );
            model
        })
    }

    /// Whether every vector has one entry per measure, in order, and every
    /// spread is positive.
    pub fn is_consistent(&self) -> bool {
        let keys: Vec<&str> = Measure::ALL.iter().map(|m| m.key()).collect();
        self.measures == keys
            && [
                &self.mean,
                &self.sd,
                &self.neutral,
                &self.high.weights,
                &self.low.weights,
            ]
            .iter()
            .all(|v| v.len() == MEASURES && v.iter().all(|x| x.is_finite()))
            && self.sd.iter().all(|s| *s > 0.0)
    }

    /// The measures of a window that one voice spoke in for at least
    /// [`MIN_SPEECH_S`], or `None` (several voices pool into nobody's voice;
    /// a missing measure leaves nothing to read).
    pub fn measures_of(a: &AudioMeasures) -> Option<[f64; MEASURES]> {
        if a.absent || a.speech_seconds < MIN_SPEECH_S || a.speakers >= 2 {
            return None;
        }
        let mut out = [0.0; MEASURES];
        for (slot, m) in out.iter_mut().zip(Measure::ALL) {
            *slot = m.of(a)?;
        }
        Some(out)
    }

    /// The measures of one voice in a window with several, when it spoke
    /// for at least [`MIN_SPEECH_S`].
    pub fn measures_of_speaker(p: &SpeakerMeasures) -> Option<[f64; MEASURES]> {
        if p.speech_seconds < MIN_SPEECH_S {
            return None;
        }
        let mut out = [0.0; MEASURES];
        for (slot, m) in out.iter_mut().zip(Measure::ALL) {
            *slot = m.of_speaker(p)?;
        }
        Some(out)
    }

    /// Every voice's reading in a window: the window's own measures when one
    /// voice spoke, else each voice's from its own frames.
    pub fn read_voices(
        &self,
        a: &AudioMeasures,
        voice: Option<u32>,
        shift: Option<[f64; MEASURES]>,
    ) -> Vec<(Option<u32>, ArousalReading)> {
        if a.absent {
            return Vec::new();
        }
        if a.speakers >= 2 {
            a.per_speaker
                .iter()
                .filter_map(|p| {
                    let v = Self::measures_of_speaker(p)?;
                    Some((Some(p.speaker), self.read_shifted(v, shift)))
                })
                .collect()
        } else {
            Self::measures_of(a)
                .map(|v| (voice, self.read_shifted(v, shift)))
                .into_iter()
                .collect()
        }
    }

    fn standardize(&self, values: &[f64; MEASURES]) -> [f64; MEASURES] {
        let mut z = [0.0; MEASURES];
        for i in 0..MEASURES {
            z[i] = (values[i] - self.mean[i]) / self.sd[i];
        }
        z
    }

    /// Reads measured values against neutral speech.
    pub fn read_values(&self, values: [f64; MEASURES]) -> ArousalReading {
        self.read_shifted(values, None)
    }

    /// Reads measured values against neutral speech moved by `shift` (a
    /// conversation's [`Adaptation`]).
    pub fn read_shifted(
        &self,
        values: [f64; MEASURES],
        shift: Option<[f64; MEASURES]>,
    ) -> ArousalReading {
        let s = shift.unwrap_or([0.0; MEASURES]);
        let mut moved = values;
        let mut center = [0.0; MEASURES];
        for i in 0..MEASURES {
            moved[i] -= s[i];
            center[i] = self.neutral[i] + s[i];
        }
        let z = self.standardize(&moved);
        let (h, l) = (self.high.logit(&z), self.low.logit(&z));
        ArousalReading {
            high: sigmoid(h),
            low: sigmoid(l),
            score: h - l,
            values,
            center,
            adapted: shift.is_some(),
        }
    }

    /// Reads a window (see [`ArousalModel::measures_of`]).
    pub fn read(&self, a: &AudioMeasures) -> Option<ArousalReading> {
        Self::measures_of(a).map(|v| self.read_values(v))
    }

    /// The measures that pushed a reading toward high (`toward_high`) or low
    /// arousal most, strongest first: each with its contribution in log-odds
    /// against neutral speech, quoted in words and units. At most `n`, and
    /// only those that pushed that way by at least 0.25.
    pub fn reasons(
        &self,
        reading: &ArousalReading,
        toward_high: bool,
        n: usize,
    ) -> Vec<(f64, String)> {
        let model = if toward_high { &self.high } else { &self.low };
        let mut parts: Vec<(f64, String)> = Measure::ALL
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let c = model.weights[i] * (reading.values[i] - reading.center[i]) / self.sd[i];
                (
                    c,
                    m.quote(reading.values[i], reading.center[i], reading.adapted),
                )
            })
            .filter(|(c, _)| *c >= 0.25)
            .collect();
        parts.sort_by(|a, b| b.0.total_cmp(&a.0));
        parts.truncate(n);
        parts
    }

    /// Fits both models on labelled windows' measures (L2-penalized
    /// logistic regression, Newton's method, `l2` on the standardized
    /// weights; the intercept is not penalized).
    pub fn fit(samples: &[([f64; MEASURES], Class)], l2: f64, source: String) -> ArousalModel {
        let n = samples.len().max(1) as f64;
        let mut mean = vec![0.0; MEASURES];
        let mut sd = vec![0.0; MEASURES];
        let mut neutral = vec![0.0; MEASURES];
        let neutrals = samples.iter().filter(|(_, c)| *c == Class::Neutral).count();
        for (x, c) in samples {
            for i in 0..MEASURES {
                mean[i] += x[i] / n;
                if *c == Class::Neutral {
                    neutral[i] += x[i] / neutrals as f64;
                }
            }
        }
        for (x, _) in samples {
            for i in 0..MEASURES {
                sd[i] += (x[i] - mean[i]).powi(2) / n;
            }
        }
        for s in &mut sd {
            *s = s.sqrt().max(1e-9);
        }
        let z: Vec<Vec<f64>> = samples
            .iter()
            .map(|(x, _)| (0..MEASURES).map(|i| (x[i] - mean[i]) / sd[i]).collect())
            .collect();
        let high: Vec<bool> = samples.iter().map(|(_, c)| *c == Class::High).collect();
        let low: Vec<bool> = samples.iter().map(|(_, c)| *c == Class::Low).collect();
        // A measure a model does not read is a column of zeros to it: the penalty holds its
        // weight at 0.
        let only = |for_high: bool| -> Vec<Vec<f64>> {
            z.iter()
                .map(|row| {
                    row.iter()
                        .zip(Measure::ALL)
                        .map(|(v, m)| if m.read_by(for_high) { *v } else { 0.0 })
                        .collect()
                })
                .collect()
        };
        ArousalModel {
            measures: Measure::ALL.iter().map(|m| m.key().to_owned()).collect(),
            mean,
            sd,
            neutral,
            high: fit_logistic(&only(true), &high, l2),
            low: fit_logistic(&only(false), &low, l2),
            source,
        }
    }
}

/// L2-penalized logistic regression by Newton's method (at most 100 steps).
pub fn fit_logistic(x: &[Vec<f64>], y: &[bool], l2: f64) -> Logistic {
    let d = x.first().map_or(0, Vec::len);
    let mut w = vec![0.0; d + 1]; // weights, then the bias
    for _ in 0..100 {
        let mut g = vec![0.0; d + 1];
        let mut h = vec![vec![0.0; d + 1]; d + 1];
        for (row, &t) in x.iter().zip(y) {
            let xi = |i: usize| if i < d { row[i] } else { 1.0 };
            let z = (0..=d).map(|i| w[i] * xi(i)).sum::<f64>();
            let p = sigmoid(z);
            let r = p - f64::from(u8::from(t));
            for i in 0..=d {
                g[i] += r * xi(i);
                for j in 0..=d {
                    h[i][j] += p * (1.0 - p) * xi(i) * xi(j);
                }
            }
        }
        for i in 0..d {
            g[i] += l2 * w[i];
            h[i][i] += l2;
        }
        h[d][d] += 1e-9;
        let Some(step) = solve(h, g) else { break };
        let mut largest = 0.0f64;
        for (wi, s) in w.iter_mut().zip(&step) {
            *wi -= s;
            largest = largest.max(s.abs());
        }
        if largest < 1e-8 {
            break;
        }
    }
    let bias = w.pop().unwrap_or(0.0);
    Logistic { weights: w, bias }
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let pivot = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[pivot][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, pivot);
        b.swap(c, pivot);
        for r in 0..n {
            if r != c {
                let f = a[r][c] / a[c][c];
                for k in c..n {
                    a[r][k] -= f * a[c][k];
                }
                b[r] -= f * b[c];
            }
        }
    }
    Some((0..n).map(|i| b[i] / a[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logistic_regression_separates_a_shifted_class() {
        // One informative measure, one noise measure.
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..200 {
            let t = i % 2 == 0;
            let noise = ((i * 37) % 17) as f64 / 17.0 - 0.5;
            let other = ((i * 53) % 23) as f64 / 23.0 - 0.5;
            x.push(vec![if t { 1.0 } else { -1.0 } + noise, other * 2.0]);
            y.push(t);
        }
        let m = fit_logistic(&x, &y, 1.0);
        assert!(m.weights[0] > 2.0, "{m:?}");
        assert!(m.weights[0].abs() > 3.0 * m.weights[1].abs(), "{m:?}");
        let right = x
            .iter()
            .zip(&y)
            .filter(|(r, &t)| (m.logit(r) > 0.0) == t)
            .count();
        assert!(right >= 190, "{right}/200");
    }

    #[test]
    fn the_shipped_model_reads_an_effortful_fast_voice_as_aroused_and_a_slow_breathy_one_as_low() {
        let m = ArousalModel::shipped();
        let at = |k: f64| {
            let mut v = [0.0; MEASURES];
            for i in 0..MEASURES {
                // k spreads along the high model's direction from neutral speech.
                v[i] = m.neutral[i] + k * m.sd[i] * m.high.weights[i].signum();
            }
            v
        };
        let aroused = m.read_values(at(1.5));
        let calm = m.read_values(at(-1.5));
        assert!(aroused.high > 0.8 && aroused.score > 0.0, "{aroused:?}");
        assert!(calm.high < 0.2 && calm.score < aroused.score, "{calm:?}");
        let reasons = m.reasons(&aroused, true, 3);
        assert!(!reasons.is_empty() && reasons.len() <= 3);
        assert!(reasons[0].1.contains("neutral speech"), "{reasons:?}");
    }

    #[test]
    fn several_voices_or_too_little_speech_are_not_read() {
        let a = AudioMeasures {
            speech_seconds: 3.0,
            speakers: 1,
            speech_rate: Some(5.0),
            hnr: Some(10.0),
            alpha_ratio: Some(-12.0),
            alpha_band: Some(-12.0),
            slope_0_500: Some(0.02),
            tilt_500_1500: Some(-0.01),
            loudness_range: Some(30.0),
            ..AudioMeasures::default()
        };
        assert!(ArousalModel::measures_of(&a).is_some());
        let two = AudioMeasures {
            speakers: 2,
            ..a.clone()
        };
        assert!(ArousalModel::measures_of(&two).is_none());
        let short = AudioMeasures {
            speech_seconds: 0.5,
            ..a.clone()
        };
        assert!(ArousalModel::measures_of(&short).is_none());
        let missing = AudioMeasures { hnr: None, ..a };
        assert!(ArousalModel::measures_of(&missing).is_none());
    }
}
