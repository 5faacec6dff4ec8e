//! Who speaks when, as a live stream is heard: speaker turns labelled every few seconds from
//! the last 10 s of audio, with speaker numbers that never change once given.
//!
//! The incremental pattern of diart (Coria et al. 2021, "Overlap-aware low-latency online
//! speaker diarization based on end-to-end local segmentation", ASRU), kept cheap:
//!
//! - every [`OnlineParams::step_s`] of audio, segmentation-3.0 reads the last 10 s (zeros before
//!   the stream's start) and the newest `step_s` of it is labelled;
//! - a local speaker who also spoke in the part of the chunk already labelled keeps the
//!   speaker those frames were given ("stitching": no embedding needed, and a voice whose
//!   register moves stays itself as long as the segmentation follows it);
//! - a local speaker who did not (a new voice, or one back after a silence) is embedded
//!   (CAM++ on its clean speech in the chunk) and takes the most alike known speaker whose
//!   centroid is at least [`OnlineParams::assign_similarity`] alike; when none is, it founds a
//!   new speaker only with at least [`OnlineParams::found_speech_s`] of clean speech and no
//!   known speaker more than [`OnlineParams::found_similarity`] alike, else it takes the most
//!   alike one anyway (a voice heard briefly is more often a known one heard badly than a new
//!   person);
//! - a speaker's centroid is the mean of the embeddings given to it.
//!
//! Two local speakers of one chunk never take the same speaker, so overlapped speech is two
//! people.

use crate::diarize::{SpeakerTurn, GRID_S};
use crate::embed::{cosine, Embedding, SpeakerEmbedder, EMBEDDING_DIM};
use crate::fbank::{fbank, FbankFrame, FBANK_HOP, FBANK_WINDOW};
use crate::segment::{
    frame_centre_s, Segmenter, CHUNK_FRAMES, CHUNK_SAMPLES, FRAME_STEP_SAMPLES, LOCAL_SPEAKERS,
};
use crate::vad::SileroVad;
use crate::{VoiceError, SAMPLE_RATE};

const SEG_STEP_S: f64 = FRAME_STEP_SAMPLES as f64 / SAMPLE_RATE as f64;
const CHUNK_S: f64 = CHUNK_SAMPLES as f64 / SAMPLE_RATE as f64;

/// The settings of [`OnlineDiarizer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnlineParams {
    /// Seconds of new audio per step (labels arrive this often, for the newest `step_s`).
    pub step_s: f64,
    /// Most filterbank frames one embedding reads.
    pub embed_cap_frames: usize,
    /// Cosine similarity at or above which a voice is a known speaker.
    pub assign_similarity: f32,
    /// A voice founds a new speaker only if no known one is more alike than this.
    pub found_similarity: f32,
    /// Clean speech, s, a voice needs in a chunk to found a new speaker.
    pub found_speech_s: f64,
    /// Share of a local speaker's already-labelled frames one speaker must hold to stitch.
    pub stitch_share: f64,
    /// Labelled speech, s, a local speaker needs in the overlap to stitch.
    pub stitch_speech_s: f64,
    /// Most speakers.
    pub max_speakers: usize,
    /// Two speakers whose centroids are at least this alike, who have each spoken
    /// [`OnlineParams::merge_speech_s`] and together under [`OnlineParams::merge_conflict_s`],
    /// are one voice from then on (1.0 or more: never).
    pub merge_similarity: f32,
    /// Labelled speech, s, each of two speakers needs before they can be found one voice.
    pub merge_speech_s: f64,
    /// Seconds two speakers may have spoken at once and still be found one voice.
    pub merge_conflict_s: f64,
}

impl Default for OnlineParams {
    fn default() -> Self {
        Self {
            step_s: 5.0,
            embed_cap_frames: 200,
            assign_similarity: 0.45,
            found_similarity: 0.4,
            found_speech_s: 1.5,
            stitch_share: 0.7,
            stitch_speech_s: 0.5,
            max_speakers: 8,
            merge_similarity: 0.45,
            merge_speech_s: 3.0,
            merge_conflict_s: 0.3,
        }
    }
}

struct Known {
    sum: [f32; EMBEDDING_DIM],
    centroid: Embedding,
    /// Labelled speech, s.
    speech_s: f64,
    /// Seconds labelled as this speaker together with each other speaker (by index).
    together_s: Vec<f64>,
    /// The speaker this one was found to be, from when it was found.
    merged_into: Option<u8>,
}

/// Online speaker turns: feed PCM (16 kHz mono, -1..1) in chunks of any size; turns come out
/// for each step as soon as its audio is in.
pub struct OnlineDiarizer {
    params: OnlineParams,
    segmenter: Segmenter,
    /// The diarizer's own voice activity detector; `None` when the caller hands the scores
    /// over ([`OnlineDiarizer::with_scores_from_caller`]).
    vad: Option<SileroVad>,
    vad_probs: Vec<f32>,
    /// Absolute VAD frame of `vad_probs[0]`.
    vad_first: u64,
    /// The last [`CHUNK_SAMPLES`] samples (or fewer at the start).
    history: Vec<f32>,
    /// Samples received.
    total: u64,
    /// Samples labelled so far (a multiple of the step until the end).
    labelled: u64,
    step: u64,
    /// Labels of the grid frames (10 ms) of the last 10 s: `(absolute frame, speakers)`.
    recent: std::collections::VecDeque<(u64, [Option<u8>; 2])>,
    known: Vec<Known>,
    finished: bool,
}

impl OnlineDiarizer {
    /// A diarizer at time 0 (networks loaded on first use in the process).
    pub fn new(params: OnlineParams) -> Result<Self, VoiceError> {
        Self::build(params, Some(SileroVad::new()?))
    }

    /// A diarizer that runs no voice activity detector of its own: the caller, which runs
    /// Silero over the same samples already, hands over each 32 ms frame's probability with
    /// [`push_vad`](Self::push_vad), at least up to the samples it then pushes (and the last,
    /// zero-padded partial frame before [`finish`](Self::finish)). A step reads only the
    /// frames its samples complete, as the diarizer's own detector would have scored them by
    /// then, so the turns are the same.
    pub fn with_scores_from_caller(params: OnlineParams) -> Result<Self, VoiceError> {
        Self::build(params, None)
    }

    fn build(params: OnlineParams, vad: Option<SileroVad>) -> Result<Self, VoiceError> {
        let step = ((params.step_s.clamp(0.5, CHUNK_S) * SAMPLE_RATE as f64) as u64).max(1);
        Ok(Self {
            params,
            segmenter: Segmenter::new()?,
            vad,
            vad_probs: Vec::new(),
            vad_first: 0,
            history: Vec::with_capacity(CHUNK_SAMPLES * 2),
            total: 0,
            labelled: 0,
            step,
            recent: Default::default(),
            known: Vec::new(),
            finished: false,
        })
    }

    /// Seconds labelled so far: every turn before this time has been returned.
    pub fn labelled_s(&self) -> f64 {
        self.labelled as f64 / SAMPLE_RATE as f64
    }

    /// Speakers founded so far (numbers `0..speakers()` have been or may be given).
    pub fn speakers(&self) -> usize {
        self.known.len()
    }

    /// Speakers founded so far and not since found to be another one's voice.
    pub fn distinct_speakers(&self) -> usize {
        self.known
            .iter()
            .filter(|k| k.merged_into.is_none())
            .count()
    }

    /// Hands over the voice activity of the next 32 ms frames (Silero's probabilities, in
    /// order from the stream's first frame) to a diarizer made with
    /// [`with_scores_from_caller`](Self::with_scores_from_caller); ignored by one that runs its
    /// own detector.
    pub fn push_vad(&mut self, probs: &[f32]) {
        if self.vad.is_none() {
            self.vad_probs.extend_from_slice(probs);
        }
    }

    /// Feeds samples; returns the turns of every step completed by them.
    pub fn push(&mut self, pcm: &[f32]) -> Result<Vec<SpeakerTurn>, VoiceError> {
        let mut out = Vec::new();
        if self.finished {
            return Ok(out);
        }
        let mut rest = pcm;
        while !rest.is_empty() {
            let to_step = (self.labelled + self.step - self.total) as usize;
            let take = to_step.min(rest.len());
            self.append(&rest[..take])?;
            rest = &rest[take..];
            if self.total == self.labelled + self.step {
                self.label_upto(self.total, &mut out)?;
            }
        }
        Ok(out)
    }

    /// Ends the input: labels what is left. Returns its turns.
    pub fn finish(&mut self) -> Result<Vec<SpeakerTurn>, VoiceError> {
        let mut out = Vec::new();
        if self.finished {
            return Ok(out);
        }
        self.finished = true;
        if let Some(vad) = &mut self.vad {
            vad.finish(&mut self.vad_probs)?;
        }
        if self.total > self.labelled {
            self.label_upto(self.total, &mut out)?;
        }
        Ok(out)
    }

    fn append(&mut self, pcm: &[f32]) -> Result<(), VoiceError> {
        if let Some(vad) = &mut self.vad {
            vad.push(pcm, &mut self.vad_probs)?;
        }
        self.history.extend(pcm.iter().map(|&x| {
            if x.is_finite() {
                x.clamp(-1.0, 1.0)
            } else {
                0.0
            }
        }));
        self.total += pcm.len() as u64;
        if self.history.len() > 2 * CHUNK_SAMPLES {
            let cut = self.history.len() - CHUNK_SAMPLES;
            self.history.drain(..cut);
        }
        // VAD frames older than a chunk are never read again.
        let keep_from =
            self.total.saturating_sub(CHUNK_SAMPLES as u64) / crate::VAD_FRAME_SAMPLES as u64;
        if keep_from > self.vad_first + 64 {
            let drop = ((keep_from - self.vad_first) as usize).min(self.vad_probs.len());
            self.vad_probs.drain(..drop);
            self.vad_first += drop as u64;
        }
        Ok(())
    }

    /// Seconds of speech (VAD at or above 0.5) between absolute samples `a` and `b`.
    fn speech_between(&self, a: u64, b: u64) -> f64 {
        let per = crate::VAD_FRAME_SAMPLES as u64;
        // Only the frames the samples so far complete (and the last, partial one once
        // finished): what the diarizer's own detector has scored at this point, however far
        // a caller's scores went.
        let scored = if self.finished {
            self.total.div_ceil(per)
        } else {
            self.total / per
        };
        let (fa, fb) = (a / per, b.div_ceil(per).min(scored));
        (fa.max(self.vad_first)..fb)
            .filter(|&f| {
                self.vad_probs
                    .get((f - self.vad_first) as usize)
                    .is_some_and(|&p| p >= 0.5)
            })
            .count() as f64
            * crate::VAD_FRAME_SECONDS
    }

    /// Labels samples `[self.labelled, end)` from the chunk ending at `end`.
    fn label_upto(&mut self, end: u64, out: &mut Vec<SpeakerTurn>) -> Result<(), VoiceError> {
        let from = self.labelled;
        self.labelled = end;
        let grid_from = (from as f64 / SAMPLE_RATE as f64 / GRID_S).round() as u64;
        let grid_to = (end as f64 / SAMPLE_RATE as f64 / GRID_S).round() as u64;
        // Forget grid labels older than a chunk.
        let oldest = grid_to.saturating_sub((CHUNK_S / GRID_S) as u64);
        while self.recent.front().is_some_and(|(f, _)| *f < oldest) {
            self.recent.pop_front();
        }
        let mut labels: Vec<[Option<u8>; 2]> = vec![[None; 2]; (grid_to - grid_from) as usize];
        if self.speech_between(from, end) >= 0.1 {
            self.label_chunk(end, grid_from, &mut labels)?;
        }
        for (i, l) in labels.iter().enumerate() {
            self.recent.push_back((grid_from + i as u64, *l));
            if let [Some(a), b] = *l {
                self.known[a as usize].speech_s += GRID_S;
                if let Some(b) = b {
                    self.known[b as usize].speech_s += GRID_S;
                    self.known[a as usize].together_s[b as usize] += GRID_S;
                    self.known[b as usize].together_s[a as usize] += GRID_S;
                }
            }
        }
        self.merge_one_voice();
        // Turns: runs of each speaker over the new frames.
        for g in 0..self.known.len() as u8 {
            let mut start: Option<usize> = None;
            for i in 0..=labels.len() {
                let on = i < labels.len() && labels[i].contains(&Some(g));
                match (on, start) {
                    (true, None) => start = Some(i),
                    (false, Some(s)) => {
                        out.push(SpeakerTurn {
                            speaker: g as usize,
                            start: (grid_from + s as u64) as f64 * GRID_S,
                            end: ((grid_from + i as u64) as f64 * GRID_S)
                                .min(end as f64 / SAMPLE_RATE as f64),
                        });
                        start = None;
                    }
                    _ => {}
                }
            }
        }
        out.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.speaker.cmp(&b.speaker)));
        Ok(())
    }

    fn label_chunk(
        &mut self,
        end: u64,
        grid_from: u64,
        labels: &mut [[Option<u8>; 2]],
    ) -> Result<(), VoiceError> {
        // The chunk: the last 10 s, zeros before the stream's start.
        let have = self.history.len().min(CHUNK_SAMPLES);
        let mut chunk = vec![0.0f32; CHUNK_SAMPLES];
        chunk[CHUNK_SAMPLES - have..].copy_from_slice(&self.history[self.history.len() - have..]);
        let offset = end as f64 / SAMPLE_RATE as f64 - CHUNK_S;
        let activity = self.segmenter.run(&chunk)?;
        let labelled_until = grid_from as f64 * GRID_S;

        // Stitch each local speaker to the speaker its already-labelled frames hold.
        let mut assigned: [Option<u8>; LOCAL_SPEAKERS] = [None; LOCAL_SPEAKERS];
        let mut needs_embedding = Vec::new();
        for (k, slot) in assigned.iter_mut().enumerate() {
            let active_new = (0..CHUNK_FRAMES).any(|i| {
                let t = offset + frame_centre_s(i);
                t >= labelled_until && activity.active(i, k)
            });
            if !active_new {
                continue;
            }
            let mut votes = vec![0.0f64; self.known.len()];
            let mut total = 0.0;
            for i in 0..CHUNK_FRAMES {
                let t = offset + frame_centre_s(i);
                if t < 0.0 || t >= labelled_until || !activity.active(i, k) {
                    continue;
                }
                let g = (t / GRID_S) as u64;
                let Some(front) = self.recent.front().map(|r| r.0) else {
                    continue;
                };
                let Some((_, l)) = g
                    .checked_sub(front)
                    .and_then(|d| self.recent.get(d as usize))
                else {
                    continue;
                };
                total += SEG_STEP_S;
                for s in l.iter().flatten() {
                    votes[*s as usize] += SEG_STEP_S;
                }
            }
            let best = (0..votes.len()).max_by(|&a, &b| votes[a].total_cmp(&votes[b]));
            match best {
                Some(g)
                    if votes[g] >= self.params.stitch_speech_s
                        && votes[g] >= self.params.stitch_share * total =>
                {
                    *slot = Some(g as u8)
                }
                _ => needs_embedding.push(k),
            }
        }
        // Two local speakers stitched to one speaker: the weaker claim is embedded instead.
        for a in 0..LOCAL_SPEAKERS {
            for b in a + 1..LOCAL_SPEAKERS {
                if assigned[a].is_some() && assigned[a] == assigned[b] {
                    let count =
                        |k: usize| (0..CHUNK_FRAMES).filter(|&i| activity.active(i, k)).count();
                    let weaker = if count(a) >= count(b) { b } else { a };
                    assigned[weaker] = None;
                    needs_embedding.push(weaker);
                }
            }
        }

        if !needs_embedding.is_empty() {
            let mut fb = Vec::new();
            fbank(&chunk, &mut fb);
            let embedder = SpeakerEmbedder;
            for &k in &needs_embedding {
                let clean: Vec<usize> = (0..CHUNK_FRAMES)
                    .filter(|&i| offset + frame_centre_s(i) >= 0.0)
                    .filter(|&i| activity.active(i, k) && activity.count(i) == 1)
                    .collect();
                let clean_s = clean.len() as f64 * SEG_STEP_S;
                let mut frames = Vec::new();
                gather(&fb, &clean, &mut frames);
                if frames.len() < 100 {
                    // Little clean speech: its overlapped speech too.
                    let active: Vec<usize> = (0..CHUNK_FRAMES)
                        .filter(|&i| offset + frame_centre_s(i) >= 0.0 && activity.active(i, k))
                        .collect();
                    frames.clear();
                    gather(&fb, &active, &mut frames);
                }
                let Some(e) = embedder.embed(&frames, self.params.embed_cap_frames)? else {
                    // Too short to say who: a voice alone in a stream so far is its first speaker.
                    if self.known.is_empty() && clean_s >= 0.3 {
                        assigned[k] = Some(self.found(None));
                    }
                    continue;
                };
                let taken: Vec<u8> = assigned.iter().flatten().copied().collect();
                let best = (0..self.known.len() as u8)
                    .filter(|g| !taken.contains(g))
                    .filter(|&g| self.known[g as usize].merged_into.is_none())
                    .map(|g| (g, cosine(&e, &self.known[g as usize].centroid)))
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                let max_any = self
                    .known
                    .iter()
                    .filter(|s| s.merged_into.is_none())
                    .map(|s| cosine(&e, &s.centroid))
                    .fold(f32::NEG_INFINITY, f32::max);
                let g = match best {
                    Some((g, s)) if s >= self.params.assign_similarity => Some(g),
                    _ if self.known.len() < self.params.max_speakers
                        && clean_s >= self.params.found_speech_s
                        && max_any < self.params.found_similarity =>
                    {
                        Some(self.found(Some(&e)))
                    }
                    _ if self.known.is_empty() => Some(self.found(Some(&e))),
                    Some((g, _)) => Some(g),
                    None => None,
                };
                if let Some(g) = g {
                    self.absorb(g, &e);
                }
                assigned[k] = g;
            }
        }

        // Label the new frames: each active local speaker's speaker (at most two per frame).
        for (j, slot) in labels.iter_mut().enumerate() {
            let t = (grid_from as f64 + j as f64 + 0.5) * GRID_S;
            let i = ((t - offset - frame_centre_s(0)) / SEG_STEP_S).round();
            let i = i.clamp(0.0, (CHUNK_FRAMES - 1) as f64) as usize;
            let mut n = 0;
            for (k, g) in assigned.iter().enumerate() {
                if let (Some(g), true) = (g, activity.active(i, k)) {
                    if n < 2 {
                        slot[n] = Some(*g);
                        n += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn found(&mut self, e: Option<&Embedding>) -> u8 {
        let id = self.known.len() as u8;
        let (sum, centroid) = match e {
            Some(e) => (*e, *e),
            None => ([0.0; EMBEDDING_DIM], [0.0; EMBEDDING_DIM]),
        };
        for k in &mut self.known {
            k.together_s.push(0.0);
        }
        self.known.push(Known {
            sum,
            centroid,
            speech_s: 0.0,
            together_s: vec![0.0; id as usize + 1],
            merged_into: None,
        });
        id
    }

    /// Finds speakers who are one voice: alike, each heard long enough, never (or hardly)
    /// speaking at once. The later is the earlier from now on: its turns so far stay as they
    /// were sent, its next ones carry the earlier's number. A voice whose register moves
    /// (calm, then angry) can found a second speaker online; two people overlap, one voice
    /// never does (the upload diarizer's merge, `DiarizeParams::merge_similarity`).
    fn merge_one_voice(&mut self) {
        let live: Vec<usize> = (0..self.known.len())
            .filter(|&g| self.known[g].merged_into.is_none())
            .collect();
        for (i, &a) in live.iter().enumerate() {
            for &b in &live[i + 1..] {
                let (ka, kb) = (&self.known[a], &self.known[b]);
                if kb.merged_into.is_some()
                    || ka.merged_into.is_some()
                    || ka.speech_s < self.params.merge_speech_s
                    || kb.speech_s < self.params.merge_speech_s
                    || ka.together_s[b] >= self.params.merge_conflict_s
                    || cosine(&ka.centroid, &kb.centroid) < self.params.merge_similarity
                {
                    continue;
                }
                let kb_sum = kb.sum;
                let kb_speech = kb.speech_s;
                let kb_together = kb.together_s.clone();
                self.known[b].merged_into = Some(a as u8);
                let ka = &mut self.known[a];
                for (s, v) in ka.sum.iter_mut().zip(&kb_sum) {
                    *s += v;
                }
                let norm = ka.sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                for (c, s) in ka.centroid.iter_mut().zip(&ka.sum) {
                    *c = s / norm;
                }
                ka.speech_s += kb_speech;
                for (t, u) in ka.together_s.iter_mut().zip(&kb_together) {
                    *t += u;
                }
                for k in &mut self.known {
                    let moved = k.together_s[b];
                    k.together_s[a] += moved;
                }
                // The stitching memory reads the merged speaker as the earlier one.
                for (_, l) in self.recent.iter_mut() {
                    for slot in l.iter_mut() {
                        if *slot == Some(b as u8) {
                            *slot = Some(a as u8);
                        }
                    }
                    if l[0].is_some() && l[0] == l[1] {
                        l[1] = None;
                    }
                }
            }
        }
    }

    fn absorb(&mut self, g: u8, e: &Embedding) {
        let k = &mut self.known[g as usize];
        for (s, v) in k.sum.iter_mut().zip(e) {
            *s += v;
        }
        let norm = k.sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        for (c, s) in k.centroid.iter_mut().zip(&k.sum) {
            *c = s / norm;
        }
    }
}

/// The filterbank frames (of the chunk) whose centres fall in the given segmentation frames.
fn gather(fb: &[FbankFrame], seg_frames: &[usize], out: &mut Vec<FbankFrame>) {
    let centre0 = FBANK_WINDOW as f64 / 2.0 / SAMPLE_RATE as f64;
    let hop = FBANK_HOP as f64 / SAMPLE_RATE as f64;
    let mut next = 0usize;
    for &i in seg_frames {
        let t = frame_centre_s(i);
        let lo = ((t - SEG_STEP_S / 2.0 - centre0) / hop).ceil().max(0.0) as usize;
        let hi = (((t + SEG_STEP_S / 2.0 - centre0) / hop).ceil().max(0.0) as usize).min(fb.len());
        let lo = lo.max(next);
        if lo < hi {
            out.extend_from_slice(&fb[lo..hi]);
            next = hi;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diarizer that has heard two speakers with these centroids, `speech_s` each, `together_s`
    /// at once, and holds a second of recent labels of speaker 1.
    fn heard(a: Embedding, b: Embedding, speech_s: f64, together_s: f64) -> OnlineDiarizer {
        let mut d = OnlineDiarizer::new(OnlineParams::default()).expect("networks load");
        d.found(Some(&a));
        d.found(Some(&b));
        for k in &mut d.known {
            k.speech_s = speech_s;
        }
        d.known[0].together_s[1] = together_s;
        d.known[1].together_s[0] = together_s;
        for g in 0..100 {
            d.recent.push_back((g, [Some(1), None]));
        }
        d
    }

    fn unit(i: usize) -> Embedding {
        let mut e = [0.0; EMBEDDING_DIM];
        e[i] = 1.0;
        e
    }

    fn mix(w: f32) -> Embedding {
        let mut e = unit(0);
        e[1] = w;
        let n = (1.0 + w * w).sqrt();
        e.map(|v| v / n)
    }

    #[test]
    fn scores_handed_ahead_count_only_for_the_frames_the_samples_complete() {
        let mut d =
            OnlineDiarizer::with_scores_from_caller(OnlineParams::default()).expect("networks");
        // Speech in the first three frames, handed over before any sample.
        d.push_vad(&[1.0, 1.0, 1.0]);
        // 700 samples: the first frame (512) is complete, the second is not.
        d.push(&vec![0.0; 700]).expect("runs");
        let frame = crate::VAD_FRAME_SECONDS;
        assert!((d.speech_between(0, 1536) - frame).abs() < 1e-12);
        // Its own detector would have scored the same one frame by now.
        let mut own = OnlineDiarizer::new(OnlineParams::default()).expect("networks");
        own.push(&vec![0.0; 700]).expect("runs");
        assert_eq!(own.vad_probs.len(), 1);
        // Once finished, the last, partial frame counts too.
        d.finish().expect("runs");
        assert!((d.speech_between(0, 1536) - 2.0 * frame).abs() < 1e-12);
    }

    #[test]
    fn two_alike_speakers_who_never_speak_at_once_become_one_voice() {
        // cos(unit 0, mix(1)) = 0.71.
        let mut d = heard(unit(0), mix(1.0), 4.0, 0.0);
        d.merge_one_voice();
        assert_eq!(d.distinct_speakers(), 1);
        assert_eq!(d.speakers(), 2, "numbers already given stay given");
        assert!(
            d.recent.iter().all(|(_, l)| l[0] == Some(0)),
            "the stitching memory reads the voice as the first speaker"
        );
    }

    #[test]
    fn people_who_speak_at_once_or_differ_or_were_barely_heard_stay_apart() {
        let mut overlap = heard(unit(0), mix(1.0), 4.0, 1.0);
        overlap.merge_one_voice();
        assert_eq!(
            overlap.distinct_speakers(),
            2,
            "two voices at once are two people"
        );
        let mut unlike = heard(unit(0), unit(1), 4.0, 0.0);
        unlike.merge_one_voice();
        assert_eq!(unlike.distinct_speakers(), 2);
        let mut brief = heard(unit(0), mix(1.0), 1.0, 0.0);
        brief.merge_one_voice();
        assert_eq!(brief.distinct_speakers(), 2, "1 s is too little to judge");
    }
}
