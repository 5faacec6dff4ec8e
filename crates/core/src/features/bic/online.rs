//! Online speaker attribution for streams: the whole-file Gaussian/BIC
//! chain re-run over a bounded recent history, its clusters mapped to the
//! speaker ids already given.
//!
//! A stream hears each moment once, and the speaker of a unit is final when
//! the unit closes (`FeatureExtractor::settled_s` waits for nothing else), so
//! there is no look-ahead: each unit is labelled from what was heard up to
//! its end.
//!
//! - **History.** The voiced frames of the last [`OnlineParams::history_s`]
//!   seconds, as blocks of at most [`DiarizeParams::block_frames`] voiced
//!   frames inside their unit (sufficient statistics of MFCC 1-13 + F0, the
//!   whole-file frame vector), each with the speaker id it was given. The
//!   pooled within-unit covariance is a running sum over the whole stream
//!   (one matrix).
//! - **Re-clustering.** When a unit closes and at least
//!   [`OnlineParams::every_s`] of media have passed since the last time, the
//!   history and the new unit are labelled by the whole-file chain
//!   ([`super::label_blocks`]: BIC clustering, Viterbi resegmentation, second
//!   clustering, timbre merge, islands). The new clusters are matched one to
//!   one to the ids already given, largest overlap (voiced frames) first, so
//!   "speaker 2" stays speaker 2; a cluster matching no id founds a new one.
//!   The history's own labels do not change (they were final); the new
//!   unit's blocks take their clusters' ids, and the cluster models are kept.
//! - **Between re-clusterings** each new unit's blocks are labelled by a
//!   Viterbi pass over them with the kept models, starting from the speaker
//!   of the speech before (a change costs [`DiarizeParams::switch_penalty`]).
//!
//! A unit whose blocks get different speakers is split where they change.
//! Decisions happen at unit ends, which are fixed media times, so the labels
//! do not depend on how the stream was cut into chunks.

use std::collections::VecDeque;

use super::gauss::{Model, Stats, D};
use super::{label_blocks, pooled_covariance, Block, DiarizeParams};
use crate::features::spectral::TIMBRE_DIMS;
use crate::features::{FrameFeatures, SpeechUnit, FRAME_SECONDS, MIN_UNIT_VOICED_FRAMES};

/// The settings of the online attribution ([`Default`] is what streams use).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnlineParams {
    /// The whole-file chain's settings, used on the history.
    pub diarize: DiarizeParams,
    /// Media seconds of history re-clustered (blocks ending earlier are let
    /// go); bounds memory and CPU.
    pub history_s: f64,
    /// Most blocks held, whatever their time (a second bound on memory).
    pub max_blocks: usize,
    /// Labels are decided for the units starting before each multiple of
    /// this many seconds, the stream's window length, once every unit
    /// starting before it has closed.
    pub commit_s: f64,
    /// Whether a unit whose blocks get different speakers is split there
    /// (otherwise it takes the speaker of most of its voiced frames).
    pub split_units: bool,
    /// Least voiced speech, seconds, for a cluster that matches no speaker
    /// already given to found a new one (smaller ones go to the nearest).
    pub min_new_s: f64,
}

impl Default for OnlineParams {
    fn default() -> Self {
        Self {
            // Less history than a whole file: a lower BIC penalty finds a
            // second voice sooner, a dearer speaker change keeps the
            // shorter, noisier models from flickering, and a wider timbre
            // merge (still under the closest real pair's 0.50) keeps one
            // voice one speaker (chosen on c01-c08, docs/EVALUATION.md).
            diarize: DiarizeParams {
                lambda: 0.5,
                recluster_lambda: 1.75,
                switch_penalty: 200.0,
                timbre_merge: 0.45,
                ..DiarizeParams::default()
            },
            history_s: 30.0,
            max_blocks: 128,
            commit_s: 5.0,
            split_units: false,
            min_new_s: 0.0,
        }
    }
}

/// Runs of one speaker inside a unit: (first voiced frame, last voiced
/// frame, speaker id), in order.
pub(crate) type Runs = Vec<(u64, u64, u8)>;

/// A closed unit whose speaker is not decided yet, with its blocks.
#[derive(Debug, Clone)]
struct Pending {
    unit: SpeechUnit,
    blocks: Vec<Block>,
}

/// Online speaker attribution (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct OnlineDiarizer {
    params: OnlineParams,
    /// Blocks whose speaker is decided, oldest first, with that id.
    held: VecDeque<(Block, u8)>,
    /// Closed units waiting for the next decision, in order.
    pending: Vec<Pending>,
    /// Blocks of the unit in progress.
    open: Vec<Block>,
    /// Units closed so far (numbers the blocks' units).
    units: usize,
    /// Summed within-unit scatter and its frame count, whole stream.
    scatter: Box<[f64; D * D]>,
    scatter_n: f64,
    /// Speakers the last decision's clusters stood for.
    speakers: usize,
    next_id: u8,
    /// Next decision point, frames.
    next_commit: u64,
    /// Speaker of the last labelled block.
    last_id: Option<u8>,
}

impl OnlineDiarizer {
    pub fn new(params: OnlineParams) -> Self {
        Self {
            params,
            held: VecDeque::new(),
            pending: Vec::new(),
            open: Vec::new(),
            units: 0,
            scatter: Box::new([0.0; D * D]),
            scatter_n: 0.0,
            speakers: 0,
            next_id: 0,
            next_commit: Self::commit_frames(&params),
            last_id: None,
        }
    }

    fn commit_frames(params: &OnlineParams) -> u64 {
        ((params.commit_s / FRAME_SECONDS).round() as u64).max(1)
    }

    /// Whether units are split where their blocks' speakers change.
    pub fn splits_units(&self) -> bool {
        self.params.split_units
    }

    /// Speakers the last decision held (at least 1 once anyone spoke).
    pub fn count(&self) -> usize {
        self.speakers.max(usize::from(self.last_id.is_some()))
    }

    /// Start of the first closed unit whose speaker is not decided yet.
    pub fn first_pending_start(&self) -> Option<u64> {
        self.pending.first().map(|p| p.unit.start_frame)
    }

    /// Feeds final frame `k` of the unit in progress (after the unit that
    /// closed before it, if any, was passed to
    /// [`close_unit`](Self::close_unit)).
    pub fn push_frame(&mut self, k: u64, f0: Option<f32>, timbre: &[f32; TIMBRE_DIMS]) {
        let Some(f0) = f0 else {
            return;
        };
        let mut x = [0.0; D];
        for (x, t) in x.iter_mut().zip(timbre) {
            *x = f64::from(*t);
        }
        x[TIMBRE_DIMS] = f64::from(f0) * self.params.diarize.f0_weight;
        let block_len = self.params.diarize.block_frames.max(2);
        match self.open.last_mut() {
            Some(b) if b.len() < block_len => b.push(k, &x),
            _ => {
                let mut b = Block::new(self.units, k);
                b.push(k, &x);
                self.open.push(b);
            }
        }
    }

    /// The unit in progress closed: it waits for the next decision.
    pub fn close_unit(&mut self, unit: SpeechUnit) {
        let mut blocks = std::mem::take(&mut self.open);
        self.units += 1;
        let block_len = self.params.diarize.block_frames.max(2);
        // A short tail joins the block before it, as in the whole file.
        if blocks.len() >= 2 && blocks[blocks.len() - 1].len() < block_len / 3 {
            let tail = blocks.pop().expect("two blocks");
            blocks.last_mut().expect("one block").extend(&tail);
        }
        let mut all = Stats::zero();
        for b in &blocks {
            all.add(&b.stats);
        }
        for (s, c) in self.scatter.iter_mut().zip(&all.scatter()) {
            *s += c;
        }
        self.scatter_n += all.n;
        self.pending.push(Pending { unit, blocks });
    }

    /// Decides the speakers of the pending units that are due: at every
    /// multiple of [`OnlineParams::commit_s`] once the frames before it are
    /// final (`final_end`: one past the last final frame) and no unit
    /// starting before it is open (`open_start`), the units starting before
    /// it; everything at the end of input (`finished`). Returns each decided
    /// unit with its runs of one speaker (first voiced frame, last voiced
    /// frame, id), in order.
    pub fn commit(
        &mut self,
        final_end: u64,
        open_start: Option<u64>,
        finished: bool,
    ) -> Vec<(SpeechUnit, Runs)> {
        let mut out = Vec::new();
        loop {
            let at = self.next_commit;
            let due = finished || (final_end >= at && open_start.is_none_or(|s| s >= at));
            if !due {
                return out;
            }
            let n = if finished {
                self.pending.len()
            } else {
                self.pending.partition_point(|p| p.unit.start_frame < at)
            };
            if n > 0 {
                self.decide(n, &mut out);
            }
            if finished {
                return out;
            }
            self.next_commit += Self::commit_frames(&self.params);
        }
    }

    /// Labels the first `n` pending units from a clustering of the history
    /// and every pending unit.
    fn decide(&mut self, n: usize, out: &mut Vec<(SpeechUnit, Runs)>) {
        let newest = self.pending.last().map_or(0, |p| p.unit.end_frame);
        let oldest = newest.saturating_sub((self.params.history_s / FRAME_SECONDS) as u64);
        let fresh: usize = self.pending.iter().map(|p| p.blocks.len()).sum();
        while self.held.front().is_some_and(|(b, _)| b.last < oldest)
            || self.held.len() + fresh > self.params.max_blocks.max(fresh)
        {
            self.held.pop_front();
        }
        let old = self.held.len();
        let all: Vec<Block> = self
            .held
            .iter()
            .map(|(b, _)| b)
            .chain(self.pending.iter().flat_map(|p| &p.blocks))
            .cloned()
            .collect();
        let ids = self.cluster_ids(&all, old);
        let mut next = old;
        for p in self.pending.drain(..n) {
            let mut runs: Runs = Vec::new();
            for b in p.blocks {
                let id = ids
                    .as_ref()
                    .map_or(self.last_id.unwrap_or(0), |ids| ids[next]);
                next += 1;
                match runs.last_mut() {
                    Some(r) if r.2 == id => r.1 = b.last,
                    _ => runs.push((b.first, b.last, id)),
                }
                self.held.push_back((b, id));
                self.last_id = Some(id);
            }
            out.push((p.unit, runs));
        }
    }

    /// Clusters `all` (the `old` decided blocks first) and gives every
    /// block of a cluster one id: the id the decided blocks of the cluster
    /// mostly hold (one cluster per id, largest overlap first), else a new
    /// one. `None` when no model could be built.
    fn cluster_ids(&mut self, all: &[Block], old: usize) -> Option<Vec<u8>> {
        // Judged units' statistics, in time order, as the clustering seeds.
        let mut judged: Vec<Stats> = Vec::new();
        let mut i = 0;
        while i < all.len() {
            let mut s = all[i].stats.clone();
            let mut j = i + 1;
            while j < all.len() && all[j].unit == all[i].unit {
                s.add(&all[j].stats);
                j += 1;
            }
            if s.n >= f64::from(MIN_UNIT_VOICED_FRAMES) {
                judged.push(s);
            }
            i = j;
        }
        let pooled = pooled_covariance(&self.scatter, self.scatter_n);
        let mut labels = label_blocks(all, judged, &pooled, &self.params.diarize)?;
        let clusters = labels.iter().copied().max().map_or(0, |m| m + 1);

        // Overlap of every cluster with the ids given, in voiced frames.
        let mut overlap: Vec<(f64, usize, u8)> = Vec::new();
        for ((b, id), &l) in self.held.iter().zip(&labels[..old]) {
            match overlap.iter_mut().find(|o| o.1 == l && o.2 == *id) {
                Some(o) => o.0 += b.stats.n,
                None => overlap.push((b.stats.n, l, *id)),
            }
        }
        overlap.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut id_of: Vec<Option<u8>> = vec![None; clusters];
        let mut taken: Vec<u8> = Vec::new();
        for &(_, l, id) in &overlap {
            if id_of[l].is_none() && !taken.contains(&id) {
                id_of[l] = Some(id);
                taken.push(id);
            }
        }
        let mut stats = vec![Stats::zero(); clusters];
        for (b, &l) in all.iter().zip(&labels) {
            stats[l].add(&b.stats);
        }
        // A small cluster that matches no id is not yet a voice: its
        // blocks go to the cluster whose model fits them best.
        let min_new = self.params.min_new_s / FRAME_SECONDS;
        let tau = self.params.diarize.shrink_frames.max(1.0);
        let keep: Vec<usize> = (0..clusters)
            .filter(|&l| stats[l].n > 0.0 && (id_of[l].is_some() || stats[l].n >= min_new))
            .collect();
        if keep.len() < (0..clusters).filter(|&l| stats[l].n > 0.0).count() && !keep.is_empty() {
            let models: Vec<(usize, Model)> = keep
                .iter()
                .filter_map(|&l| Model::new(&stats[l], &pooled, tau).map(|m| (l, m)))
                .collect();
            for (b, l) in all.iter().zip(labels.iter_mut()) {
                if keep.contains(l) {
                    continue;
                }
                if let Some((best, _)) = models
                    .iter()
                    .map(|(k, m)| (*k, m.log_likelihood(&b.stats)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                {
                    *l = best;
                }
            }
        }
        let mut ids = Vec::with_capacity(all.len());
        let mut used: Vec<u8> = Vec::new();
        for &l in &labels {
            let id = match id_of[l] {
                Some(id) => id,
                None => {
                    let id = self.fresh_id(&taken);
                    taken.push(id);
                    id_of[l] = Some(id);
                    id
                }
            };
            if !used.contains(&id) {
                used.push(id);
            }
            ids.push(id);
        }
        self.speakers = used.len();
        Some(ids)
    }

    /// A speaker id not given before (or, once 255 were, the lowest not in
    /// `taken`).
    fn fresh_id(&mut self, taken: &[u8]) -> u8 {
        if self.next_id < u8::MAX {
            self.next_id += 1;
            return self.next_id - 1;
        }
        (0..u8::MAX).find(|i| !taken.contains(i)).unwrap_or(0)
    }

    /// The speaker of most voiced frames of `runs` (earliest on a tie).
    pub fn main_speaker(features: &FrameFeatures, runs: &[(u64, u64, u8)]) -> Option<u8> {
        let mut ids: Vec<(usize, u8)> = Vec::new();
        for &(first, last, id) in runs {
            let n = (first..=last)
                .filter(|&k| features.frame(k).is_some_and(|f| f.is_voiced()))
                .count();
            match ids.iter_mut().find(|e| e.1 == id) {
                Some(e) => e.0 += n,
                None => ids.push((n, id)),
            }
        }
        let mut best: Option<(usize, u8)> = None;
        for &(n, id) in &ids {
            if best.is_none_or(|b| n > b.0) {
                best = Some((n, id));
            }
        }
        best.map(|b| b.1)
    }
}
