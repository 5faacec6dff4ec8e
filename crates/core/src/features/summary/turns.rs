//! Turn-taking over a span: turns, gaps, overlaps, backchannels and
//! per-speaker measures, from the speech units' speaker labels.

use super::speech::syllable_nuclei;
use super::stats::{mean, quantile};
use super::{
    SpeakerSpan, Turn, BACKCHANNEL_MAX_F0_RANGE_ST, BACKCHANNEL_MAX_GAP_S, BACKCHANNEL_MAX_S,
    BACKCHANNEL_MAX_SYLLABLES,
};
use crate::features::{FrameFeatures, FRAME_SECONDS};

/// Turn-taking of a span, as [`super::SpanFeatures`] reports it.
pub(super) struct TurnSummary {
    pub(super) voice_count: u8,
    pub(super) talk_share: [f32; 2],
    pub(super) turns: Vec<Turn>,
    pub(super) changes: u32,
    pub(super) overlaps: u32,
    pub(super) gaps: Vec<f32>,
}

/// Start and end frame of the speech (by `mask`, which covers frames from
/// `lo`) around frame `f`; the frame itself where the mask does not reach.
fn speech_bounds(mask: &[bool], lo: usize, f: usize) -> (usize, usize) {
    if f < lo || f - lo >= mask.len() || !mask[f - lo] {
        return (f, f + 1);
    }
    let mut s = f - lo;
    while s > 0 && mask[s - 1] {
        s -= 1;
    }
    let mut e = f - lo + 1;
    while e < mask.len() && mask[e] {
        e += 1;
    }
    (lo + s, lo + e)
}

/// Turn-taking over the span's absolute frames `[first, last)`; `mask`
/// (speech without bridging) covers frames from absolute index `lo`.
pub(super) fn turns(
    features: &FrameFeatures,
    (first, last): (usize, usize),
    mask: &[bool],
    lo: usize,
) -> TurnSummary {
    let segments = &features.speech_units;
    let time = speaker_time(features, (first as u64, last as u64));
    let total: f64 = time.iter().map(|t| t.1).sum();
    let share = |id: u8| {
        time.iter()
            .find(|t| t.0 == id)
            .map_or(0.0, |t| (t.1 / total) as f32)
    };
    let talk_share = if total > 0.0 {
        [share(0), share(1)]
    } else {
        [0.0, 0.0]
    };
    let voice_count = time.len() as u8;

    // Turns: consecutive labelled segments of one voice. Begin at the last
    // labelled segment before the span so the first change is seen.
    let start_at = segments.partition_point(|s| s.end_frame <= first as u64);
    let from = segments[..start_at]
        .iter()
        .rposition(|s| s.speaker.is_some())
        .unwrap_or(start_at);
    let mut out = TurnSummary {
        voice_count,
        talk_share,
        turns: Vec::new(),
        changes: 0,
        overlaps: 0,
        gaps: Vec::new(),
    };
    let mut current: Option<(u8, usize, usize)> = None; // voice, first frame, last frame (exclusive)
    let mut previous_end: Option<usize> = None;
    let labelled = segments[from..]
        .iter()
        .filter(|s| (s.start_frame as usize) < last)
        .filter_map(|s| {
            s.speaker
                .map(|v| (v, s.start_frame as usize, s.end_frame as usize))
        });
    let finish = |turn: (u8, usize, usize), previous_end: Option<usize>, out: &mut TurnSummary| {
        let (voice, s, e) = turn;
        let (start, _) = speech_bounds(mask, lo, s);
        let (_, end) = speech_bounds(mask, lo, e.saturating_sub(1));
        if (first..last).contains(&s) {
            let gap = previous_end.map(|pe| start.saturating_sub(pe) as f64 * FRAME_SECONDS);
            if let Some(g) = gap {
                out.changes += 1;
                out.gaps.push(g as f32);
                if g <= 0.0 {
                    out.overlaps += 1;
                }
            }
            let backchannel =
                gap.is_some_and(|g| g <= BACKCHANNEL_MAX_GAP_S) && is_low_content(features, s, e);
            out.turns.push(Turn {
                speaker: voice,
                start_s: start as f64 * FRAME_SECONDS,
                end_s: end as f64 * FRAME_SECONDS,
                gap_before_s: gap,
                backchannel,
            });
        }
        end
    };
    for (voice, s, e) in labelled {
        current = match current {
            Some((v, cs, _)) if v == voice => Some((v, cs, e)),
            Some(turn) => {
                previous_end = Some(finish(turn, previous_end, &mut out));
                Some((voice, s, e))
            }
            None => Some((voice, s, e)),
        };
    }
    if let Some(turn) = current {
        finish(turn, previous_end, &mut out);
    }
    out
}

/// Unit time per speaker over absolute frames `[first, last)`, by id.
fn speaker_time(features: &FrameFeatures, (first, last): (u64, u64)) -> Vec<(u8, f64)> {
    let mut time: Vec<(u8, f64)> = Vec::new();
    for u in &features.speech_units {
        let Some(id) = u.speaker else { continue };
        let overlap = u
            .end_frame
            .min(last)
            .saturating_sub(u.start_frame.max(first));
        if overlap == 0 {
            continue;
        }
        let t = overlap as f64 * FRAME_SECONDS;
        match time.iter_mut().find(|e| e.0 == id) {
            Some(e) => e.1 += t,
            None => time.push((id, t)),
        }
    }
    time.sort_by_key(|e| e.0);
    time
}

/// Whether the voiced frames `[s, e)` (absolute) sound like a backchannel:
/// short, few syllables, flat.
fn is_low_content(features: &FrameFeatures, s: usize, e: usize) -> bool {
    if (e.saturating_sub(s)) as f64 * FRAME_SECONDS > BACKCHANNEL_MAX_S {
        return false;
    }
    let lo = (s as u64).max(features.first_index);
    let hi = (e as u64).min(features.end_index());
    if hi <= lo {
        return false;
    }
    let base = features.first_index;
    let (a, b) = ((lo - base) as usize, (hi - base) as usize);
    let frames = &features.frames;
    let mask = vec![true; b - a];
    let syllables = syllable_nuclei(frames, a, b, &mask, a).len() as u32;
    let mut f0: Vec<f32> = frames[a..b].iter().filter_map(|f| f.f0_semitones).collect();
    let range = match (quantile(&mut f0, 0.95), quantile(&mut f0, 0.05)) {
        (Some(x), Some(y)) => x - y,
        _ => 0.0,
    };
    syllables <= BACKCHANNEL_MAX_SYLLABLES && range <= BACKCHANNEL_MAX_F0_RANGE_ST
}

/// Per-speaker measures over absolute frames `[first, last)`; `nuclei` are
/// the span's syllable nuclei (positions in `features.frames`).
pub(super) fn per_speaker(
    features: &FrameFeatures,
    (first, last): (u64, u64),
    nuclei: &[usize],
    turns: &TurnSummary,
) -> Vec<SpeakerSpan> {
    let time = speaker_time(features, (first, last));
    let total: f64 = time.iter().map(|t| t.1).sum();
    let base = features.first_index;
    time.iter()
        .map(|&(id, speech_s)| {
            let mut f0 = Vec::new();
            let mut levels = Vec::new();
            let mut hnr = Vec::new();
            let mut voiced_levels = Vec::new();
            let mut tilt: Vec<(f32, f32, f32, f32, f32)> = Vec::new();
            let mut syllables = 0u32;
            for u in features
                .speech_units
                .iter()
                .filter(|u| u.speaker == Some(id))
            {
                let (a, b) = (u.start_frame.max(first), u.end_frame.min(last));
                if b <= a {
                    continue;
                }
                let (a, b) = ((a - base) as usize, (b - base) as usize);
                for f in &features.frames[a..b] {
                    if let Some(st) = f.f0_semitones {
                        f0.push(st);
                    }
                    levels.push(f.intensity_db);
                    if f.f0_semitones.is_some() {
                        voiced_levels.push(f.intensity_db);
                    }
                    if let Some(h) = f.hnr_db {
                        hnr.push(h);
                    }
                    if f.is_voiced() {
                        tilt.push((
                            f.alpha_ratio_db,
                            f.slope_0_500,
                            f.slope_500_1500,
                            f.tilt_500_1500,
                            f.alpha_band_db,
                        ));
                    }
                }
                syllables += nuclei.iter().filter(|&&p| (a..b).contains(&p)).count() as u32;
            }
            let f0_mean = mean(f0.iter().copied());
            let f0_range = match (quantile(&mut f0, 0.95), quantile(&mut f0, 0.05)) {
                (Some(x), Some(y)) => Some(x - y),
                _ => None,
            };
            let intensity_mean = mean(levels.iter().copied());
            let intensity_range = match (
                quantile(&mut voiced_levels, 0.95),
                quantile(&mut voiced_levels, 0.05),
            ) {
                (Some(x), Some(y)) => Some(x - y),
                _ => None,
            };
            let own = turns.turns.iter().filter(|t| t.speaker == id);
            SpeakerSpan {
                speaker: id,
                speech_s,
                talk_share: if total > 0.0 {
                    (speech_s / total) as f32
                } else {
                    0.0
                },
                f0_mean_semitones: f0_mean,
                f0_range_semitones: f0_range,
                intensity_mean_db: intensity_mean,
                intensity_range_db: intensity_range,
                hnr_db: mean(hnr.iter().copied()),
                alpha_ratio_db: mean(tilt.iter().map(|t| t.0)),
                slope_0_500: mean(tilt.iter().map(|t| t.1)),
                slope_500_1500: mean(tilt.iter().map(|t| t.2)),
                tilt_500_1500: mean(tilt.iter().map(|t| t.3)),
                alpha_band_db: mean(tilt.iter().map(|t| t.4)),
                articulation_rate_syl_per_s: (speech_s > 0.0)
                    .then(|| (f64::from(syllables) / speech_s) as f32),
                turns: own.clone().count() as u32,
                backchannels: own.filter(|t| t.backchannel).count() as u32,
            }
        })
        .collect()
}
