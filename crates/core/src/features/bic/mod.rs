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
use super::{FrameFeatures, SpeechUnit};

mod cluster;
mod gauss;

use cluster::{cluster, linear_cluster};
use gauss::{Model, Stats, D};

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

/// Relabels every unit (and voiced segment) of a whole recording with
/// Gaussian voice models (BIC clustering and a Viterbi resegmentation, see
/// the module docs) and [`DiarizeParams::default`]; units may be split where
/// the speaker changes inside one. Units already forgotten are not seen;
/// call it on the output of [`super::extract`].
pub fn diarize(features: &mut FrameFeatures) {
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
