//! Whole-file speaker diarization by Gaussian voice models: BIC agglomerative clustering of speech units, then a Viterbi resegmentation of short blocks.
//!
//! The classic pipeline of LIUM/ALIZE-style systems (Meignier & Merlin 2010,
//! *CMU SPUD Workshop*; Chen & Gopalakrishnan 1998, *DARPA BNTU Workshop*),
//! cut to what a 10 ms frame stream already gives and kept to a few
//! milliseconds per minute of audio:
//!
//! - **Frame vector.** MFCC 1-13 and F0 (semitones) of every voiced frame:
//!   the spectral envelope and the pitch register, together, so one full
//!   covariance also holds how they move together for one voice.
//! - **Models.** A full-covariance Gaussian per segment or cluster, from its
//!   sufficient statistics (count, sum, sum of outer products: merging two
//!   is adding them). The covariance is shrunk towards the file's pooled
//!   within-unit covariance with the weight of [`DiarizeParams::shrink_frames`]
//!   frames, so a 1 s unit still has a usable model.
//! - **Clustering.** Speech units (at most 1 s, from
//!   `features/speakers.rs`) start as one cluster each; the pair with the
//!   lowest delta-BIC (Chen & Gopalakrishnan 1998: the log-likelihood gain
//!   of two models over one, minus `lambda` times half the parameter count
//!   times the log of the frame count) merges, until every pair's delta-BIC
//!   is positive and at most [`super::MAX_SPEAKERS`] clusters remain.
//! - **Resegmentation.** Each unit is cut into blocks of at most
//!   [`DiarizeParams::block_frames`] voiced frames; a Viterbi pass over all
//!   blocks in time order picks each block's speaker by its log-likelihood
//!   under the cluster models, paying [`DiarizeParams::switch_penalty`] per
//!   speaker change (turns last seconds, a block a quarter of one); the
//!   models are re-estimated from the result and the pass repeated. A unit
//!   whose blocks go to different speakers is split there, so turn changes
//!   without a pause are found to within a block.
//! - **One voice, several registers.** Clusters close in spectral envelope
//!   without pitch and tilt (`timbre_distance`) and less than a register
//!   apart merge, and short runs inside another speaker's continuous speech
//!   join it: a voice whose pitch and rate move with its state (stress)
//!   stays one speaker, so its own baseline sees the change.

use super::spectral::TIMBRE_DIMS;
use super::{FrameFeatures, SpeechUnit, MAX_SPEAKERS};

/// Dimensions of the frame vector: MFCC 1-13 and F0.
const D: usize = TIMBRE_DIMS + 1;
/// Free parameters of one full-covariance Gaussian.
const PARAMS: f64 = (D + D * (D + 1) / 2) as f64;

/// The tunable settings of [`diarize_with`]; [`Default`] is what
/// [`super::diarize`] uses (the BIC and resegmentation settings chosen on
/// the synthetic conversations c01-c08; the timbre merge and island length
/// on the cluster distances listed in `docs/EVALUATION.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiarizeParams {
    /// BIC penalty weight of the agglomerative clustering (1 is the
    /// textbook criterion; higher merges more).
    pub lambda: f64,
    /// BIC penalty weight of the linear clustering of neighbouring units
    /// before it (raised automatically on long files to bound the cost).
    pub linear_lambda: f64,
    /// Weight of the pooled covariance in every model, in frames.
    pub shrink_frames: f64,
    /// Longest resegmentation block, voiced frames.
    pub block_frames: usize,
    /// Log-likelihood (nats) a speaker change costs in the Viterbi pass.
    pub switch_penalty: f64,
    /// Viterbi passes (each re-estimates the models from the previous one).
    pub passes: usize,
    /// Scale of the F0 dimension (0 leaves pitch out; the Gaussians are
    /// otherwise scale-free, so only 0 and not-0 differ).
    pub f0_weight: f64,
    /// BIC penalty weight of a second clustering of the resegmented
    /// clusters, followed by another resegmentation (0: none).
    pub recluster_lambda: f64,
    /// Clusters whose timbre distance (`timbre_distance`) is under this
    /// are one voice and merge, last (0: none).
    pub timbre_merge: f64,
    /// Clusters with less voiced speech than this, seconds, merge into the
    /// cluster nearest in timbre, last (0: none).
    pub min_cluster_s: f64,
    /// A run of one speaker's blocks shorter than this, seconds of voiced
    /// speech, without a pause inside it or on one of its sides, between two
    /// runs of one other speaker, is given to that speaker (0: none).
    pub island_s: f64,
}

impl Default for DiarizeParams {
    fn default() -> Self {
        Self {
            lambda: 1.0,
            linear_lambda: 0.0,
            shrink_frames: 50.0,
            block_frames: 25,
            switch_penalty: 100.0,
            passes: 2,
            f0_weight: 1.0,
            recluster_lambda: 3.0,
            timbre_merge: 0.4,
            min_cluster_s: 0.0,
            island_s: 0.5,
        }
    }
}

/// Sufficient statistics of a set of frame vectors.
#[derive(Debug, Clone)]
struct Stats {
    n: f64,
    sum: [f64; D],
    /// Sum of outer products, full (symmetric) matrix, row-major.
    outer: [f64; D * D],
}

impl Stats {
    fn zero() -> Self {
        Self {
            n: 0.0,
            sum: [0.0; D],
            outer: [0.0; D * D],
        }
    }

    fn push(&mut self, x: &[f64; D]) {
        self.n += 1.0;
        for i in 0..D {
            self.sum[i] += x[i];
            // Upper triangle only; mirrored when a covariance is made.
            for j in i..D {
                self.outer[i * D + j] += x[i] * x[j];
            }
        }
    }

    fn add(&mut self, o: &Stats) {
        self.n += o.n;
        for (a, b) in self.sum.iter_mut().zip(&o.sum) {
            *a += b;
        }
        for (a, b) in self.outer.iter_mut().zip(&o.outer) {
            *a += b;
        }
    }

    fn mean(&self) -> [f64; D] {
        let mut m = [0.0; D];
        if self.n > 0.0 {
            for (m, s) in m.iter_mut().zip(&self.sum) {
                *m = s / self.n;
            }
        }
        m
    }

    /// Scatter about the mean (upper triangle filled, mirrored).
    fn scatter(&self) -> [f64; D * D] {
        let m = self.mean();
        let mut c = [0.0; D * D];
        for i in 0..D {
            for j in i..D {
                let v = self.outer[i * D + j] - self.n * m[i] * m[j];
                c[i * D + j] = v;
                c[j * D + i] = v;
            }
        }
        c
    }

    /// Covariance shrunk towards `prior` with the weight of `tau` frames.
    fn covariance(&self, prior: &[f64; D * D], tau: f64) -> [f64; D * D] {
        let mut c = self.scatter();
        let w = self.n + tau;
        for (c, p) in c.iter_mut().zip(prior) {
            *c = (*c + tau * p) / w;
        }
        c
    }
}

/// Cholesky factor (lower, row-major) of a symmetric positive definite
/// matrix; `None` when it is not positive definite.
fn cholesky(a: &[f64; D * D]) -> Option<[f64; D * D]> {
    let mut l = [0.0; D * D];
    for i in 0..D {
        for j in 0..=i {
            let mut s = a[i * D + j];
            for k in 0..j {
                s -= l[i * D + k] * l[j * D + k];
            }
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return None;
                }
                l[i * D + i] = s.sqrt();
            } else {
                l[i * D + j] = s / l[j * D + j];
            }
        }
    }
    Some(l)
}

fn log_det(l: &[f64; D * D]) -> f64 {
    (0..D).map(|i| 2.0 * l[i * D + i].ln()).sum()
}

/// Inverse of `L L^T` from its Cholesky factor.
fn inverse(l: &[f64; D * D]) -> [f64; D * D] {
    // Columns of L^-1 by forward substitution, then (L^-1)^T L^-1.
    let mut li = [0.0; D * D];
    for c in 0..D {
        for i in c..D {
            let mut s = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                s -= l[i * D + k] * li[k * D + c];
            }
            li[i * D + c] = s / l[i * D + i];
        }
    }
    let mut inv = [0.0; D * D];
    for i in 0..D {
        for j in i..D {
            let s: f64 = (j..D).map(|k| li[k * D + i] * li[k * D + j]).sum();
            inv[i * D + j] = s;
            inv[j * D + i] = s;
        }
    }
    inv
}

/// `n log|Sigma|` of a model (what delta-BIC compares); a degenerate
/// covariance counts as infinitely good so nothing merges into it blindly.
fn n_log_det(s: &Stats, prior: &[f64; D * D], tau: f64) -> f64 {
    cholesky(&s.covariance(prior, tau)).map_or(f64::NEG_INFINITY, |l| s.n * log_det(&l))
}

/// A cluster model for the Viterbi pass.
struct Model {
    mean: [f64; D],
    inv: [f64; D * D],
    /// `log|2 pi Sigma|`.
    log_norm: f64,
}

impl Model {
    fn new(s: &Stats, prior: &[f64; D * D], tau: f64) -> Option<Model> {
        let l = cholesky(&s.covariance(prior, tau))?;
        Some(Model {
            mean: s.mean(),
            inv: inverse(&l),
            log_norm: log_det(&l) + D as f64 * (2.0 * std::f64::consts::PI).ln(),
        })
    }

    /// Summed log-likelihood of the frames behind `s`.
    fn log_likelihood(&self, s: &Stats) -> f64 {
        let m = s.mean();
        let c = s.scatter();
        let mut trace = 0.0;
        let mut quad = 0.0;
        for i in 0..D {
            let di = m[i] - self.mean[i];
            for j in 0..D {
                let p = self.inv[i * D + j];
                trace += p * c[i * D + j];
                quad += p * di * (m[j] - self.mean[j]);
            }
        }
        -0.5 * (s.n * self.log_norm + trace + s.n * quad)
    }
}

/// A stretch of voiced frames inside one unit.
struct Block {
    unit: usize,
    /// Absolute indices of its voiced frames.
    frames: Vec<u64>,
    stats: Stats,
}

fn frame_vector(features: &FrameFeatures, k: u64, f0_weight: f64) -> Option<[f64; D]> {
    let f = features.frame(k)?;
    let f0 = f.f0_semitones?;
    let mut x = [0.0; D];
    for (x, t) in x.iter_mut().zip(&f.timbre) {
        *x = f64::from(*t);
    }
    x[TIMBRE_DIMS] = f64::from(f0) * f0_weight;
    Some(x)
}

/// Relabels the units of a whole recording with [`DiarizeParams::default`];
/// see the module docs.
pub(crate) fn diarize(features: &mut FrameFeatures) {
    diarize_with(features, &DiarizeParams::default());
}

/// Whole-file diarization with explicit settings (for evaluation and
/// tuning): relabels, and where a speaker changes inside a unit splits,
/// the speech units of `features`, then the voiced segments. Units whose
/// frames were already forgotten keep their labels.
pub fn diarize_with(features: &mut FrameFeatures, params: &DiarizeParams) {
    let block_len = params.block_frames.max(2);
    let tau = params.shrink_frames.max(1.0);
    // Blocks of every unit whose frames are held.
    let mut blocks: Vec<Block> = Vec::new();
    let mut unit_stats: Vec<Option<Stats>> = vec![None; features.speech_units.len()];
    for (ui, u) in features.speech_units.iter().enumerate() {
        if u.start_frame < features.first_index || u.end_frame > features.end_index() {
            continue;
        }
        let first_block = blocks.len();
        let mut all = Stats::zero();
        let mut current: Option<Block> = None;
        for k in u.start_frame..u.end_frame {
            let Some(x) = frame_vector(features, k, params.f0_weight) else {
                continue;
            };
            all.push(&x);
            let b = current.get_or_insert_with(|| Block {
                unit: ui,
                frames: Vec::with_capacity(block_len),
                stats: Stats::zero(),
            });
            b.frames.push(k);
            b.stats.push(&x);
            if b.frames.len() >= block_len {
                blocks.extend(current.take());
            }
        }
        if let Some(b) = current {
            // A short tail joins the block before it in the same unit.
            if b.frames.len() < block_len / 3 && blocks.len() > first_block {
                let last = blocks.last_mut().expect("a block of this unit");
                last.frames.extend(b.frames);
                last.stats.add(&b.stats);
            } else {
                blocks.push(b);
            }
        }
        if all.n > 0.0 {
            unit_stats[ui] = Some(all);
        }
    }
    if blocks.is_empty() {
        return;
    }
    // Pooled within-unit covariance: how one voice varies over a second.
    let mut pooled = [0.0; D * D];
    let mut pooled_n = 0.0;
    for s in unit_stats.iter().flatten() {
        for (p, c) in pooled.iter_mut().zip(&s.scatter()) {
            *p += c;
        }
        pooled_n += s.n;
    }
    for (i, p) in pooled.iter_mut().enumerate() {
        *p /= pooled_n.max(1.0);
        // A floor on the diagonal keeps a constant dimension (a silent
        // mel band on a telephone line) from making it singular.
        if i % (D + 1) == 0 {
            *p = p.max(1e-3);
        }
    }

    let judged: Vec<usize> = (0..features.speech_units.len())
        .filter(|&i| unit_stats[i].is_some() && features.speech_units[i].is_judged())
        .collect();
    let seeds: Vec<Stats> = if judged.is_empty() {
        // Nothing long enough to cluster: one speaker.
        let mut all = Stats::zero();
        for s in unit_stats.iter().flatten() {
            all.add(s);
        }
        vec![all]
    } else {
        let units: Vec<Stats> = judged
            .iter()
            .map(|&i| unit_stats[i].clone().expect("judged units have stats"))
            .collect();
        let segments = linear_cluster(units, &pooled, tau, params.linear_lambda);
        cluster(segments, &pooled, tau, params.lambda)
    };

    // Resegmentation.
    let mut models: Vec<Model> = seeds
        .iter()
        .filter_map(|s| Model::new(s, &pooled, tau))
        .collect();
    if models.is_empty() {
        return;
    }
    let mut labels = resegment(&blocks, &mut models, &pooled, tau, params);
    if params.recluster_lambda > 0.0 && models.len() > 1 {
        let mut grouped = vec![Stats::zero(); models.len()];
        for (b, &l) in blocks.iter().zip(&labels) {
            grouped[l].add(&b.stats);
        }
        grouped.retain(|s| s.n > 0.0);
        let merged = cluster(grouped, &pooled, tau, params.recluster_lambda);
        models = merged
            .iter()
            .filter_map(|s| Model::new(s, &pooled, tau))
            .collect();
        if models.is_empty() {
            return;
        }
        labels = resegment(&blocks, &mut models, &pooled, tau, params);
    }
    if params.timbre_merge > 0.0 || params.min_cluster_s > 0.0 {
        labels = merge_by_timbre(&blocks, &labels, &pooled, params);
    }
    if params.island_s > 0.0 {
        absorb_islands(&blocks, &mut labels, params.island_s);
    }
    rebuild_units(features, &blocks, &labels);
    super::speakers::relabel_segments(features);
}

/// Longest silence between two blocks that still counts as "no pause",
/// frames (a pause is at least 0.15 s, `summary::MIN_PAUSE_S`).
const ISLAND_JOIN_FRAMES: u64 = 15;

/// Gives short runs of one speaker inside another speaker's continuous
/// speech to the surrounding speaker: a voice does not hand over and take
/// back the floor within a fraction of a second without a pause, but a
/// voice's own stressed or raised syllables can sit nearer another model.
fn absorb_islands(blocks: &[Block], labels: &mut [usize], island_s: f64) {
    let max_frames = (island_s / super::FRAME_SECONDS) as usize;
    let joined = |a: &Block, b: &Block| -> bool {
        match (a.frames.last(), b.frames.first()) {
            (Some(&end), Some(&start)) => start.saturating_sub(end) <= ISLAND_JOIN_FRAMES,
            _ => false,
        }
    };
    let mut start = 0;
    while start < blocks.len() {
        let mut end = start + 1;
        while end < blocks.len() && labels[end] == labels[start] {
            end += 1;
        }
        // Run [start, end) of one label.
        if start > 0 && end < blocks.len() && labels[start - 1] == labels[end] {
            let frames: usize = blocks[start..end].iter().map(|b| b.frames.len()).sum();
            // Joined to the surrounding speech on at least one side: a
            // fragment that takes over without a pause or hands back without one.
            let continuous = joined(&blocks[start - 1], &blocks[start])
                || joined(&blocks[end - 1], &blocks[end]);
            let continuous =
                continuous && (start..end - 1).all(|i| joined(&blocks[i], &blocks[i + 1]));
            if frames < max_frames && continuous {
                let around = labels[end];
                for l in &mut labels[start..end] {
                    *l = around;
                }
            }
        }
        start = end;
    }
}

/// First frame-vector dimension of the timbre distance: MFCC 2 (index 1).
/// MFCC 1, the spectral tilt, moves with vocal effort (Sundberg & Nordenberg
/// 2006: louder voice, flatter spectrum), so it reads behaviour, not voice.
const TIMBRE_FIRST: usize = 1;

/// Largest difference of mean F0 between two clusters that
/// [`DiarizeParams::timbre_merge`] may join, semitones: raised pitch under
/// arousal moves a voice by a few semitones (+5 for espeak-ng's `-p 80`
/// stressed speech here; Scherer 2003 reports increases of that order), the
/// registers of men's and women's voices lie about an octave apart.
const MAX_MERGE_F0_ST: f64 = 8.0;

/// Distance between two clusters' mean spectral envelopes, MFCC 2-13 without
/// pitch, in units of the pooled within-unit standard deviation (root mean
/// square over the dimensions). Pitch and tilt are left out: they carry the
/// speaker's state as much as the speaker (raised pitch under stress,
/// Scherer 2003), so a voice whose register moves stays near itself, while
/// two voices of one register still differ in their envelope (formants).
pub(crate) fn timbre_distance(a: &[f64], b: &[f64], pooled_var: &[f64]) -> f64 {
    let dims = TIMBRE_DIMS - TIMBRE_FIRST;
    let sum: f64 = (TIMBRE_FIRST..TIMBRE_DIMS)
        .map(|i| (a[i] - b[i]).powi(2) / pooled_var[i].max(1e-9))
        .sum();
    (sum / dims as f64).sqrt()
}

/// Merges clusters closer in timbre than [`DiarizeParams::timbre_merge`],
/// closest pair first, then clusters with under
/// [`DiarizeParams::min_cluster_s`] of voiced speech into their nearest;
/// returns the blocks' new labels.
fn merge_by_timbre(
    blocks: &[Block],
    labels: &[usize],
    pooled: &[f64; D * D],
    params: &DiarizeParams,
) -> Vec<usize> {
    let k = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut stats = vec![Stats::zero(); k];
    for (b, &l) in blocks.iter().zip(labels) {
        stats[l].add(&b.stats);
    }
    let pooled_var: Vec<f64> = (0..D).map(|i| pooled[i * D + i]).collect();
    // target[l]: the cluster label l has merged into.
    let mut target: Vec<usize> = (0..k).collect();
    let mut alive: Vec<bool> = stats.iter().map(|s| s.n > 0.0).collect();
    let min_frames = params.min_cluster_s / super::FRAME_SECONDS;
    loop {
        let live: Vec<usize> = (0..k).filter(|&i| alive[i]).collect();
        if live.len() < 2 {
            break;
        }
        let means: Vec<[f64; D]> = stats.iter().map(Stats::mean).collect();
        let nearest = |i: usize| -> (usize, f64) {
            live.iter()
                .filter(|&&j| j != i)
                .map(|&j| (j, timbre_distance(&means[i], &means[j], &pooled_var)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((i, f64::INFINITY))
        };
        // Pairs a register apart never merge by timbre: a band-limited line
        // (telephone) squeezes the envelopes of a man and a woman together.
        let same_register = |i: usize, j: usize| -> bool {
            params.f0_weight == 0.0
                || ((means[i][TIMBRE_DIMS] - means[j][TIMBRE_DIMS]) / params.f0_weight).abs()
                    < MAX_MERGE_F0_ST
        };
        let closest = live
            .iter()
            .flat_map(|&i| live.iter().map(move |&j| (i, j)))
            .filter(|&(i, j)| i < j && same_register(i, j))
            .map(|(i, j)| (i, j, timbre_distance(&means[i], &means[j], &pooled_var)))
            .min_by(|a, b| a.2.total_cmp(&b.2));
        let small = live
            .iter()
            .copied()
            .filter(|&i| stats[i].n < min_frames)
            .min_by(|&a, &b| stats[a].n.total_cmp(&stats[b].n));
        let (gone, keep) = match (closest, small) {
            (Some((i, j, d)), _) if d < params.timbre_merge => (j, i),
            (_, Some(i)) => (i, nearest(i).0),
            _ => break,
        };
        let g = std::mem::replace(&mut stats[gone], Stats::zero());
        stats[keep].add(&g);
        alive[gone] = false;
        for t in &mut target {
            if *t == gone {
                *t = keep;
            }
        }
    }
    labels.iter().map(|&l| target[l]).collect()
}

/// Viterbi passes over the blocks, re-estimating `models` between them;
/// returns the labels of the last pass (indices into `models`).
fn resegment(
    blocks: &[Block],
    models: &mut Vec<Model>,
    prior: &[f64; D * D],
    tau: f64,
    params: &DiarizeParams,
) -> Vec<usize> {
    let passes = params.passes.max(1);
    let mut labels = viterbi(blocks, models, params.switch_penalty);
    for _ in 1..passes {
        let mut fresh = vec![Stats::zero(); models.len()];
        for (b, &l) in blocks.iter().zip(&labels) {
            fresh[l].add(&b.stats);
        }
        let next: Vec<Model> = fresh
            .iter()
            .filter(|s| s.n > 0.0)
            .filter_map(|s| Model::new(s, prior, tau))
            .collect();
        if next.is_empty() {
            break;
        }
        *models = next;
        labels = viterbi(blocks, models, params.switch_penalty);
    }
    labels
}

/// `n log|Sigma|` of the union of `a` and `b`, without building it.
fn merged_n_log_det(a: &Stats, b: &Stats, prior: &[f64; D * D], tau: f64) -> f64 {
    let n = a.n + b.n;
    if n <= 0.0 {
        return 0.0;
    }
    let mut mean = [0.0; D];
    for (m, (x, y)) in mean.iter_mut().zip(a.sum.iter().zip(&b.sum)) {
        *m = (x + y) / n;
    }
    let w = n + tau;
    let mut c = [0.0; D * D];
    for i in 0..D {
        for j in i..D {
            let v = (a.outer[i * D + j] + b.outer[i * D + j] - n * mean[i] * mean[j]
                + tau * prior[i * D + j])
                / w;
            c[i * D + j] = v;
            c[j * D + i] = v;
        }
    }
    cholesky(&c).map_or(f64::NEG_INFINITY, |l| n * log_det(&l))
}

/// Delta-BIC of merging `a` and `b` (negative: one model is better),
/// given their own `n log|Sigma|`.
fn delta_bic(
    a: &Stats,
    b: &Stats,
    own: (f64, f64),
    prior: &[f64; D * D],
    tau: f64,
    lambda: f64,
) -> f64 {
    let merged = merged_n_log_det(a, b, prior, tau);
    0.5 * (merged - own.0 - own.1) - lambda * 0.5 * PARAMS * (a.n + b.n).ln()
}

/// Linear clustering: runs of neighbouring segments merge while delta-BIC
/// says one voice (a turn holds many units). Cheap, and it bounds the
/// agglomerative step: `lambda` grows until at most [`MAX_SEEDS`] remain.
fn linear_cluster(stats: Vec<Stats>, prior: &[f64; D * D], tau: f64, lambda: f64) -> Vec<Stats> {
    let mut lambda = lambda;
    let mut out = stats;
    loop {
        let mut merged: Vec<Stats> = Vec::with_capacity(out.len());
        let mut own_last = 0.0;
        for s in out {
            let own = n_log_det(&s, prior, tau);
            match merged.last_mut() {
                Some(last) if delta_bic(last, &s, (own_last, own), prior, tau, lambda) < 0.0 => {
                    last.add(&s);
                    own_last = n_log_det(last, prior, tau);
                }
                _ => {
                    merged.push(s);
                    own_last = own;
                }
            }
        }
        out = merged;
        if out.len() <= MAX_SEEDS || lambda > 1e3 {
            return out;
        }
        lambda = if lambda < 0.25 { 0.25 } else { lambda * 1.5 };
    }
}

/// Most segments the agglomerative step starts from (its cost is quadratic).
const MAX_SEEDS: usize = 160;

/// Agglomerative clustering by delta-BIC; returns the cluster statistics.
fn cluster(mut stats: Vec<Stats>, prior: &[f64; D * D], tau: f64, lambda: f64) -> Vec<Stats> {
    let n = stats.len();
    let mut alive = vec![true; n];
    let mut own: Vec<f64> = stats.iter().map(|s| n_log_det(s, prior, tau)).collect();
    // Full matrix of pair deltas: each merge recomputes one row, O(n) BIC
    // evaluations, and finding the next pair reads the matrix.
    let mut dist = vec![f64::INFINITY; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let d = delta_bic(&stats[i], &stats[j], (own[i], own[j]), prior, tau, lambda);
            dist[i * n + j] = d;
            dist[j * n + i] = d;
        }
    }
    let row_min = |dist: &[f64], alive: &[bool], i: usize| -> (usize, f64) {
        let mut best = (i, f64::INFINITY);
        for j in 0..n {
            if j != i && alive[j] && dist[i * n + j] < best.1 {
                best = (j, dist[i * n + j]);
            }
        }
        best
    };
    let mut nearest: Vec<(usize, f64)> = (0..n).map(|i| row_min(&dist, &alive, i)).collect();
    let mut count = n;
    while count > 1 {
        let Some((i, (j, d))) = (0..n)
            .filter(|&i| alive[i])
            .map(|i| (i, nearest[i]))
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
        else {
            break;
        };
        if (d > 0.0 || !d.is_finite()) && count <= MAX_SPEAKERS {
            break;
        }
        let (keep, gone) = (i.min(j), i.max(j));
        let g = std::mem::replace(&mut stats[gone], Stats::zero());
        stats[keep].add(&g);
        alive[gone] = false;
        own[keep] = n_log_det(&stats[keep], prior, tau);
        count -= 1;
        for k in 0..n {
            if alive[k] && k != keep {
                let d = delta_bic(
                    &stats[k],
                    &stats[keep],
                    (own[k], own[keep]),
                    prior,
                    tau,
                    lambda,
                );
                dist[k * n + keep] = d;
                dist[keep * n + k] = d;
            }
        }
        for k in 0..n {
            if !alive[k] {
                continue;
            }
            if k == keep || nearest[k].0 == keep || nearest[k].0 == gone {
                nearest[k] = row_min(&dist, &alive, k);
            } else if dist[k * n + keep] < nearest[k].1 {
                nearest[k] = (keep, dist[k * n + keep]);
            }
        }
    }
    stats
        .into_iter()
        .zip(alive)
        .filter_map(|(s, a)| a.then_some(s))
        .collect()
}

/// Best speaker sequence over the blocks, one change costing `penalty`.
fn viterbi(blocks: &[Block], models: &[Model], penalty: f64) -> Vec<usize> {
    let k = models.len();
    let mut score: Vec<f64> = vec![0.0; k];
    let mut back: Vec<usize> = Vec::with_capacity(blocks.len() * k);
    let mut next = vec![0.0; k];
    for b in blocks {
        let (best_prev, best_score) = score
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or((0, 0.0), |(i, &s)| (i, s));
        for s in 0..k {
            let (from, base) = if score[s] >= best_score - penalty {
                (s, score[s])
            } else {
                (best_prev, best_score - penalty)
            };
            back.push(from);
            next[s] = base + models[s].log_likelihood(&b.stats);
        }
        std::mem::swap(&mut score, &mut next);
    }
    let mut state = score
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i);
    let mut labels = vec![0; blocks.len()];
    for t in (0..blocks.len()).rev() {
        labels[t] = state;
        state = back[t * k + state];
    }
    labels
}

/// Replaces the units behind `blocks` by runs of one label, numbered by
/// first appearance.
fn rebuild_units(features: &mut FrameFeatures, blocks: &[Block], labels: &[usize]) {
    let mut order: Vec<usize> = Vec::new();
    let mut id_of = |l: usize| -> u8 {
        let pos = order.iter().position(|&o| o == l).unwrap_or_else(|| {
            order.push(l);
            order.len() - 1
        });
        pos as u8
    };
    let old = std::mem::take(&mut features.speech_units);
    let mut out: Vec<SpeechUnit> = Vec::with_capacity(old.len());
    let mut b = 0;
    for (ui, u) in old.into_iter().enumerate() {
        if b >= blocks.len() || blocks[b].unit != ui {
            out.push(u);
            continue;
        }
        // Runs of consecutive blocks of this unit with one label.
        let mut run: Vec<u64> = Vec::new();
        let mut run_label = labels[b];
        while b < blocks.len() && blocks[b].unit == ui {
            if labels[b] != run_label && !run.is_empty() {
                out.push(unit_of(features, &run, id_of(run_label)));
                run.clear();
            }
            run_label = labels[b];
            run.extend(&blocks[b].frames);
            b += 1;
        }
        if !run.is_empty() {
            out.push(unit_of(features, &run, id_of(run_label)));
        }
    }
    features.speech_units = out;
}

fn unit_of(features: &FrameFeatures, voiced: &[u64], speaker: u8) -> SpeechUnit {
    let mut timbre_sum = [0.0f64; TIMBRE_DIMS];
    let mut f0: Vec<f32> = Vec::with_capacity(voiced.len());
    for &k in voiced {
        if let Some(f) = features.frame(k) {
            for (s, t) in timbre_sum.iter_mut().zip(&f.timbre) {
                *s += f64::from(*t);
            }
            f0.extend(f.f0_semitones);
        }
    }
    let n = voiced.len().max(1) as f64;
    let mut timbre = [0.0f32; TIMBRE_DIMS];
    for (t, s) in timbre.iter_mut().zip(&timbre_sum) {
        *t = (s / n) as f32;
    }
    SpeechUnit {
        start_frame: voiced.first().copied().unwrap_or(0),
        end_frame: voiced.last().map_or(0, |k| k + 1),
        voiced_frames: voiced.len() as u32,
        f0_semitones: super::summary::median(&mut f0).unwrap_or(f32::NAN),
        timbre,
        speaker: Some(speaker),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random frame vectors around `centre`.
    fn seed(centre: f64, salt: u64) -> Stats {
        let mut state = salt
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut s = Stats::zero();
        for _ in 0..30 {
            let mut x = [0.0; D];
            for v in &mut x {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *v = centre + ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 4.0;
            }
            s.push(&x);
        }
        s
    }

    #[test]
    fn linear_clustering_of_a_long_file_ends_within_the_seed_cap() {
        // Alternating voices never merge at lambda 0: the lambda must grow
        // (a lambda of 0 once never grew, and a long upload spun forever).
        let seeds: Vec<Stats> = (0..600)
            .map(|k| seed(if k % 2 == 0 { 0.0 } else { 20.0 }, k))
            .collect();
        let mut prior = [0.0; D * D];
        for i in 0..D {
            prior[i * D + i] = 1.0;
        }
        let out = linear_cluster(seeds, &prior, 50.0, 0.0);
        assert!(!out.is_empty() && out.len() <= MAX_SEEDS, "{}", out.len());
        let clusters = cluster(out, &prior, 50.0, 1.0);
        assert!(clusters.len() <= MAX_SPEAKERS);
    }

    #[test]
    fn two_separated_voices_cluster_into_two() {
        let seeds: Vec<Stats> = (0..40)
            .map(|k| seed(if k % 3 == 0 { 0.0 } else { 20.0 }, k))
            .collect();
        let mut prior = [0.0; D * D];
        for i in 0..D {
            prior[i * D + i] = 1.0;
        }
        let clusters = cluster(seeds, &prior, 50.0, 1.0);
        assert_eq!(clusters.len(), 2);
        let mut sizes: Vec<f64> = clusters.iter().map(|c| c.n).collect();
        sizes.sort_by(f64::total_cmp);
        assert_eq!(sizes, vec![14.0 * 30.0, 26.0 * 30.0]);
    }

    #[test]
    fn cholesky_inverse_and_log_det_agree_with_a_diagonal_matrix() {
        let mut a = [0.0; D * D];
        for i in 0..D {
            a[i * D + i] = (i + 1) as f64;
        }
        a[1] = 0.5;
        a[D] = 0.5;
        let l = cholesky(&a).expect("positive definite");
        let inv = inverse(&l);
        for i in 0..D {
            for j in 0..D {
                let p: f64 = (0..D).map(|k| a[i * D + k] * inv[k * D + j]).sum();
                assert!((p - if i == j { 1.0 } else { 0.0 }).abs() < 1e-9);
            }
        }
        let expected: f64 = (1..=D).map(|i| (i as f64).ln()).sum::<f64>() + (1.75f64 / 2.0).ln();
        assert!((log_det(&l) - expected).abs() < 1e-9);
    }
}
