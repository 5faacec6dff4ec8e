//! Who spoke when: speaker segments from the feature extractor's speech units, RTTM reading, and the diarization error rate.
//!
//! The diarization error rate (DER) follows `pyannote.metrics`
//! (`DiarizationErrorRate`; Bredin 2017, Interspeech) and NIST's RT
//! evaluations: over the reference's speech, the share that is missed,
//! falsely detected or given to the wrong speaker, after mapping hypothesis
//! speakers to reference speakers one-to-one so that the matched time is
//! largest (the Hungarian problem; solved exactly here by dynamic
//! programming over subsets, fine for the handful of speakers of one
//! conversation). Overlapping speech counts once per speaker. A collar
//! around every reference boundary is left out of the evaluation, half of
//! it on each side as in `pyannote.metrics` (`collar=0.25` removes 0.125 s
//! before and after each boundary).

use crate::features::{FrameFeatures, FRAME_SECONDS};

/// One speaker's speech from `start` to `end`, s.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeakerSegment {
    /// Speaker label (any string; labels are matched by the optimal mapping).
    pub speaker: String,
    /// Start, s.
    pub start: f64,
    /// End, s.
    pub end: f64,
}

impl SpeakerSegment {
    /// A segment of `speaker` over `[start, end)`.
    pub fn new(speaker: impl Into<String>, start: f64, end: f64) -> Self {
        Self {
            speaker: speaker.into(),
            start,
            end,
        }
    }
}

/// The voice networks' turns as scoreable segments (speaker `s0`, `s1`, ...).
pub fn turn_segments(turns: &[crate::features::SpeakerTurn]) -> Vec<SpeakerSegment> {
    turns
        .iter()
        .map(|t| SpeakerSegment::new(format!("s{}", t.speaker), t.start, t.end))
        .collect()
}

/// RTTM `SPEAKER` lines of `turns` for the file `file` (speaker `s0`, `s1`, ...; times to the
/// millisecond), the format diarization tools and scorers read.
pub fn rttm(file: &str, turns: &[crate::features::SpeakerTurn]) -> String {
    let file: String = file
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    let file = if file.is_empty() {
        "file".to_string()
    } else {
        file
    };
    turns
        .iter()
        .filter(|t| t.end > t.start)
        .map(|t| {
            format!(
                "SPEAKER {file} 1 {:.3} {:.3} <NA> <NA> s{} <NA> <NA>\n",
                t.start,
                t.end - t.start,
                t.speaker
            )
        })
        .collect()
}

/// Reads RTTM `SPEAKER` lines (`SPEAKER file 1 start duration <NA> <NA>
/// speaker <NA> <NA>`); other lines and malformed ones are skipped.
pub fn parse_rttm(text: &str) -> Vec<SpeakerSegment> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 || f[0] != "SPEAKER" {
                return None;
            }
            let start: f64 = f[3].parse().ok()?;
            let duration: f64 = f[4].parse().ok()?;
            (start.is_finite() && duration.is_finite() && duration > 0.0)
                .then(|| SpeakerSegment::new(f[7], start, start + duration))
        })
        .collect()
}

/// The parts of a diarization error rate, in seconds of evaluated reference.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DerBreakdown {
    /// Reference speech evaluated (each speaker counted; overlap twice), s.
    pub total: f64,
    /// Reference speech with no hypothesis speaker for it, s.
    pub missed: f64,
    /// Hypothesis speech with no reference speaker for it, s.
    pub false_alarm: f64,
    /// Speech given to a speaker not mapped to the right reference one, s.
    pub confusion: f64,
}

impl DerBreakdown {
    /// (missed + false alarm + confusion) / total; 0 when nothing is evaluated.
    pub fn rate(&self) -> f64 {
        if self.total > 0.0 {
            (self.missed + self.false_alarm + self.confusion) / self.total
        } else {
            0.0
        }
    }

    /// Sums two breakdowns (a corpus-level DER weights files by their speech).
    pub fn add(&self, other: &DerBreakdown) -> DerBreakdown {
        DerBreakdown {
            total: self.total + other.total,
            missed: self.missed + other.missed,
            false_alarm: self.false_alarm + other.false_alarm,
            confusion: self.confusion + other.confusion,
        }
    }
}

/// Diarization error rate of `hypothesis` against `reference` with a
/// `collar` (s, total: half before and half after each reference boundary)
/// left out. Segments with NaN or reversed times are ignored.
pub fn diarization_error_rate(
    reference: &[SpeakerSegment],
    hypothesis: &[SpeakerSegment],
    collar: f64,
) -> DerBreakdown {
    let valid = |s: &&SpeakerSegment| s.start.is_finite() && s.end.is_finite() && s.end > s.start;
    let reference: Vec<&SpeakerSegment> = reference.iter().filter(valid).collect();
    let hypothesis: Vec<&SpeakerSegment> = hypothesis.iter().filter(valid).collect();
    let labels = |segs: &[&SpeakerSegment]| {
        let mut l: Vec<String> = segs.iter().map(|s| s.speaker.clone()).collect();
        l.sort();
        l.dedup();
        l
    };
    let ref_labels = labels(&reference);
    let hyp_labels = labels(&hypothesis);
    let half = (collar.max(0.0)) / 2.0;
    let excluded: Vec<(f64, f64)> = if half > 0.0 {
        reference
            .iter()
            .flat_map(|s| {
                [
                    (s.start - half, s.start + half),
                    (s.end - half, s.end + half),
                ]
            })
            .collect()
    } else {
        Vec::new()
    };

    // Elementary pieces between every boundary.
    let mut cuts: Vec<f64> = reference
        .iter()
        .chain(&hypothesis)
        .flat_map(|s| [s.start, s.end])
        .chain(excluded.iter().flat_map(|e| [e.0, e.1]))
        .collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();

    // Per piece: duration, reference speakers and hypothesis speakers present.
    struct Piece {
        d: f64,
        r: Vec<usize>,
        h: Vec<usize>,
    }
    let mut pieces = Vec::new();
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let mid = 0.5 * (a + b);
        if excluded.iter().any(|e| mid > e.0 && mid < e.1) {
            continue;
        }
        let present = |segs: &[&SpeakerSegment], labels: &[String]| -> Vec<usize> {
            let mut v: Vec<usize> = segs
                .iter()
                .filter(|s| s.start <= mid && mid < s.end)
                .filter_map(|s| labels.iter().position(|l| *l == s.speaker))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let r = present(&reference, &ref_labels);
        let h = present(&hypothesis, &hyp_labels);
        if !r.is_empty() || !h.is_empty() {
            pieces.push(Piece { d: b - a, r, h });
        }
    }

    // Co-occurrence of every reference and hypothesis speaker.
    let mut overlap = vec![vec![0.0f64; hyp_labels.len()]; ref_labels.len()];
    for p in &pieces {
        for &r in &p.r {
            for &h in &p.h {
                overlap[r][h] += p.d;
            }
        }
    }
    let mapping = best_mapping(&overlap);

    let mut out = DerBreakdown::default();
    for p in &pieces {
        let (nr, nh) = (p.r.len(), p.h.len());
        let correct =
            p.r.iter()
                .filter(|&&r| mapping[r].is_some_and(|h| p.h.contains(&h)))
                .count();
        out.total += nr as f64 * p.d;
        out.missed += nr.saturating_sub(nh) as f64 * p.d;
        out.false_alarm += nh.saturating_sub(nr) as f64 * p.d;
        out.confusion += (nr.min(nh) - correct) as f64 * p.d;
    }
    out
}

/// One-to-one mapping of reference rows to hypothesis columns maximising
/// the summed overlap: `mapping[r]` is the column given to row `r`.
/// Exact, by dynamic programming over subsets of the smaller side
/// (speaker counts here are small; beyond 12 columns, greedy).
fn best_mapping(overlap: &[Vec<f64>]) -> Vec<Option<usize>> {
    let rows = overlap.len();
    let cols = overlap.first().map_or(0, Vec::len);
    let mut mapping = vec![None; rows];
    if rows == 0 || cols == 0 {
        return mapping;
    }
    if cols > 12 {
        let mut pairs: Vec<(usize, usize, f64)> = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c, overlap[r][c])))
            .collect();
        pairs.sort_by(|a, b| b.2.total_cmp(&a.2));
        let mut used = vec![false; cols];
        for (r, c, v) in pairs {
            if v > 0.0 && mapping[r].is_none() && !used[c] {
                mapping[r] = Some(c);
                used[c] = true;
            }
        }
        return mapping;
    }
    // best[r][mask]: best total for rows r.. with columns in `mask` used.
    let states = 1usize << cols;
    let mut best = vec![vec![0.0f64; states]; rows + 1];
    let mut choice = vec![vec![None; states]; rows];
    for r in (0..rows).rev() {
        for mask in 0..states {
            let mut top = best[r + 1][mask];
            let mut pick = None;
            for c in 0..cols {
                if mask & (1 << c) == 0 {
                    let v = overlap[r][c] + best[r + 1][mask | (1 << c)];
                    if v > top {
                        top = v;
                        pick = Some(c);
                    }
                }
            }
            best[r][mask] = top;
            choice[r][mask] = pick;
        }
    }
    let mut mask = 0usize;
    for (r, m) in mapping.iter_mut().enumerate() {
        if let Some(c) = choice[r][mask] {
            *m = Some(c);
            mask |= 1 << c;
        }
    }
    mapping
}

/// The speaker segments the features hold: runs of speech units of one
/// speaker, each widened to the speech around it (the frames the VAD calls
/// speech, as the span summaries see them), and joined across silences of
/// at most [`BRIDGE_S`] within one speaker. Speech with no unit in it (unvoiced
/// noise the VAD accepts) is given to the speaker of the nearest unit when
/// one lies within 0.5 s, otherwise left out.
pub fn speaker_segments(features: &FrameFeatures) -> Vec<SpeakerSegment> {
    let base = features.first_index;
    let frames = &features.frames;
    let speech: Vec<bool> = speech_mask(features);
    let mut label: Vec<Option<u8>> = vec![None; frames.len()];
    for u in &features.speech_units {
        let Some(id) = u.speaker else { continue };
        let a = u.start_frame.saturating_sub(base) as usize;
        let b = (u.end_frame.saturating_sub(base) as usize).min(frames.len());
        for l in label.iter_mut().take(b).skip(a) {
            *l = Some(id);
        }
    }
    // Speech frames take the label of the nearest labelled frame within
    // reach; labelled frames outside speech stay (voicing the VAD missed).
    let reach = (0.5 / FRAME_SECONDS) as usize;
    let mut out: Vec<Option<u8>> = label.clone();
    for i in 0..frames.len() {
        if !speech[i] || label[i].is_some() {
            continue;
        }
        let mut found = None;
        for d in 1..=reach {
            let left = i.checked_sub(d).and_then(|j| label[j]);
            let right = label.get(i + d).copied().flatten();
            if let Some(l) = left.or(right) {
                found = Some(l);
                break;
            }
        }
        out[i] = found;
    }
    let mut segments: Vec<(u8, usize, usize)> = Vec::new();
    let bridge = (BRIDGE_S / FRAME_SECONDS) as usize;
    let mut i = 0;
    while i < out.len() {
        let Some(id) = out[i] else {
            i += 1;
            continue;
        };
        let s = i;
        while i < out.len() && out[i] == Some(id) {
            i += 1;
        }
        // Pauses inside one speaker's turn do not end it (the convention of
        // reference annotations).
        match segments.last_mut() {
            Some(last) if last.0 == id && s - last.2 <= bridge => last.2 = i,
            _ => segments.push((id, s, i)),
        }
    }
    segments
        .into_iter()
        .map(|(id, s, e)| {
            SpeakerSegment::new(
                id.to_string(),
                (base + s as u64) as f64 * FRAME_SECONDS,
                (base + e as u64) as f64 * FRAME_SECONDS,
            )
        })
        .collect()
}

/// Silences up to this long between two stretches of one speaker are
/// part of the speaker's turn, s.
pub const BRIDGE_S: f64 = 0.5;

/// Speech frames as the span summaries see them (VAD, not far below the
/// loudest frames), blips dropped, gaps kept.
fn speech_mask(features: &FrameFeatures) -> Vec<bool> {
    let frames = &features.frames;
    let mut levels: Vec<f32> = frames.iter().map(|f| f.intensity_db).collect();
    levels.sort_by(f32::total_cmp);
    let top = levels
        .get(((levels.len() as f64 - 1.0) * 0.99).round().max(0.0) as usize)
        .copied()
        .unwrap_or(0.0);
    let floor = top - crate::features::SILENCE_BELOW_PEAK_DB;
    frames
        .iter()
        .map(|f| f.is_speech() && f.intensity_db > floor)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(s: &str, a: f64, b: f64) -> SpeakerSegment {
        SpeakerSegment::new(s, a, b)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_perfect_hypothesis_with_other_labels_has_no_error() {
        let r = [seg("A", 0.0, 2.0), seg("B", 2.5, 4.0)];
        let h = [seg("x", 0.0, 2.0), seg("y", 2.5, 4.0)];
        let d = diarization_error_rate(&r, &h, 0.0);
        assert!(close(d.total, 3.5) && close(d.rate(), 0.0), "{d:?}");
    }

    #[test]
    fn one_speaker_for_two_is_confusion_on_the_smaller_one() {
        let r = [seg("A", 0.0, 3.0), seg("B", 3.0, 4.0)];
        let h = [seg("x", 0.0, 4.0)];
        let d = diarization_error_rate(&r, &h, 0.0);
        assert!(close(d.confusion, 1.0) && close(d.missed, 0.0), "{d:?}");
        assert!(close(d.rate(), 0.25));
    }

    #[test]
    fn missed_false_alarm_and_overlap_are_counted_per_speaker() {
        // Reference overlap 1-2 s (both A and B); hypothesis has only A there,
        // misses B's 2-3 s, and adds speech at 4-5 s.
        let r = [seg("A", 0.0, 2.0), seg("B", 1.0, 3.0)];
        let h = [seg("a", 0.0, 2.0), seg("a", 4.0, 5.0)];
        let d = diarization_error_rate(&r, &h, 0.0);
        assert!(close(d.total, 4.0), "{d:?}");
        assert!(close(d.missed, 2.0), "{d:?}");
        assert!(close(d.false_alarm, 1.0), "{d:?}");
        assert!(close(d.confusion, 0.0), "{d:?}");
        assert!(close(d.rate(), 0.75));
    }

    #[test]
    fn the_mapping_is_optimal_not_greedy() {
        // Greedy on the largest overlap would map x->A (3 s) and leave y with
        // nothing; the best mapping is x->B (2.9 s), y->A (2.5 s).
        let r = [seg("A", 0.0, 3.0), seg("A", 10.0, 12.5), seg("B", 3.0, 5.9)];
        let h = [seg("x", 0.0, 5.9), seg("y", 10.0, 12.5)];
        let d = diarization_error_rate(&r, &h, 0.0);
        assert!(close(d.confusion, 3.0), "{d:?}");
    }

    #[test]
    fn the_collar_forgives_boundaries_half_on_each_side() {
        let r = [seg("A", 0.0, 2.0), seg("B", 2.0, 4.0)];
        // Change found 0.1 s late: 0.1 s of B given to A.
        let h = [seg("x", 0.0, 2.1), seg("y", 2.1, 4.0)];
        let strict = diarization_error_rate(&r, &h, 0.0);
        assert!(close(strict.confusion, 0.1), "{strict:?}");
        let forgiving = diarization_error_rate(&r, &h, 0.25);
        assert!(close(forgiving.confusion, 0.0), "{forgiving:?}");
        // Evaluated: 4 s minus 0.125 s at 0 and 4 s and 0.25 s around 2 s.
        assert!(close(forgiving.total, 3.5), "{forgiving:?}");
        // A change 0.2 s late is beyond the 0.125 s half collar.
        let late = [seg("x", 0.0, 2.2), seg("y", 2.2, 4.0)];
        let d = diarization_error_rate(&r, &late, 0.25);
        assert!(close(d.confusion, 0.075), "{d:?}");
    }

    #[test]
    fn rttm_lines_are_read_and_junk_skipped() {
        let text = "SPEAKER f 1 6.690 0.430 <NA> <NA> speaker90 <NA> <NA>\n\
                    garbage\nSPEAKER f 1 x 1 <NA> <NA> s <NA> <NA>\n\
                    SPEAKER f 1 7.550 0.800 <NA> <NA> speaker91 <NA> <NA>\n";
        let segs = parse_rttm(text);
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[1].speaker, "speaker91");
        assert!(close(segs[0].end, 7.12));
    }
}
