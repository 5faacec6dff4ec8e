//! Speech and pauses, syllable nuclei, filled pauses and phrase-final
//! contours of a span, from its frames (definitions in the parent module).

use super::stats::{median, quantile, theil_sen};
use super::{
    Direction, TerminalContour, MIN_PAUSE_FRAMES, SILENCE_BELOW_PEAK_DB, TERMINAL_HEIGHT_ST,
    TERMINAL_SLOPE_ST_PER_S,
};
use crate::features::{Frame, FRAME_SECONDS};

/// Speech blips shorter than this many frames are dropped.
const MIN_SPEECH_FRAMES: usize = 3;
/// Quantile of the nearby frame intensities taken as the background level (talk or noise
/// behind the speaker, or silence).
const NOISE_QUANTILE: f64 = 0.05;
/// Speech must be this far above the background level, dB.
const ABOVE_NOISE_DB: f32 = 5.0;
/// Voicing looked at for a terminal contour, s.
const TERMINAL_WINDOW_S: f64 = 0.3;
/// Voiced frames at the very end averaged for the final F0.
const TERMINAL_END_FRAMES: usize = 5;
/// A phrase-final contour needs voicing within this of the phrase end, s.
const TERMINAL_REACH_S: f64 = 0.3;
/// Fewest voiced frames for a terminal slope.
const TERMINAL_MIN_FRAMES: usize = 10;
/// de Jong & Wempe (2009): peaks below the 99th percentile minus this are silence, dB.
const NUCLEUS_SILENCE_DB: f32 = 25.0;
/// de Jong & Wempe (2009): minimum dip after a peak, dB; here also the
/// minimum rise before it.
const NUCLEUS_MIN_DIP_DB: f32 = 2.0;
/// Shortest filled pause, frames (200 ms).
const FILLED_MIN_FRAMES: usize = 20;
/// Longest filled pause, frames (1 s): a longer held voice is singing or
/// humming, not a hesitation.
const FILLED_MAX_FRAMES: usize = 100;
/// A frame is spectrally steady when the regression slope of its MFCC 1-4
/// over +/- 2 frames (HTK's delta; Euclidean length) is at most this, MFCC
/// units per frame. Held vowels of the speech fixtures stay under 3;
/// transitions between sounds run at 10-40.
const STEADY_MFCC_DELTA: f32 = 3.0;
/// Share of a filled pause's frames that are steady: "um" is two steady
/// sounds (vowel and nasal) with one transition; words change more.
const FILLED_STEADY_SHARE: f32 = 0.7;
/// Largest F0 slope of a filled pause (Theil-Sen), semitones per second:
/// fillers are level or drift; accents and phrase-final falls move faster.
/// Generous, like the range below, because a filler set off by commas
/// carries the phrase's continuation rise (espeak-ng's voices rise 10-20
/// st/s over 4.5-6.5 st on "um,"); natural fillers are flatter (Shriberg
/// 2001).
const FILLED_MAX_SLOPE_ST_PER_S: f32 = 20.0;
/// Largest F0 range of a filled pause (5th to 95th percentile), semitones:
/// rules out a rise-fall accent whose net slope is small.
const FILLED_MAX_RANGE_ST: f32 = 8.0;

/// Speech flags for frames `lo..hi`: VAD decisions in frames loud enough to
/// be more than silence, with blips dropped; and the same with short gaps
/// between speech bridged.
pub(super) fn speech_masks(frames: &[Frame], lo: usize, hi: usize) -> (Vec<bool>, Vec<bool>) {
    let mut levels: Vec<f32> = frames[lo..hi].iter().map(|f| f.intensity_db).collect();
    let peak_floor =
        quantile(&mut levels, 0.99).map_or(f32::INFINITY, |top| top - SILENCE_BELOW_PEAK_DB);
    // Background talk or noise fills the pauses with sound the VAD calls speech: the quietest
    // frames nearby give its level, and speech must stand clear of it.
    let noise_floor = quantile(&mut levels, NOISE_QUANTILE)
        .map_or(f32::NEG_INFINITY, |bottom| bottom + ABOVE_NOISE_DB);
    let floor = peak_floor.max(noise_floor);
    let mut mask: Vec<bool> = frames[lo..hi]
        .iter()
        .map(|f| f.is_speech() && f.intensity_db > floor)
        .collect();
    let runs = |mask: &[bool], value: bool| -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < mask.len() {
            if mask[i] == value {
                let s = i;
                while i < mask.len() && mask[i] == value {
                    i += 1;
                }
                out.push((s, i));
            } else {
                i += 1;
            }
        }
        out
    };
    for (s, e) in runs(&mask, true) {
        if e - s < MIN_SPEECH_FRAMES {
            mask[s..e].fill(false);
        }
    }
    let raw = mask.clone();
    for (s, e) in runs(&mask, false) {
        if s > 0 && e < mask.len() && e - s < MIN_PAUSE_FRAMES {
            mask[s..e].fill(true);
        }
    }
    (raw, mask)
}

/// The F0 movement over the last voiced [`TERMINAL_WINDOW_S`] before frame
/// `phrase_end` (exclusive); the phrase began at frame `phrase_start`.
pub(super) fn terminal_contour(
    frames: &[Frame],
    phrase_start: usize,
    phrase_end: usize,
) -> Option<TerminalContour> {
    let reach = (TERMINAL_REACH_S / FRAME_SECONDS).round() as usize;
    let window = (TERMINAL_WINDOW_S / FRAME_SECONDS).round() as usize;
    let last_voiced = (phrase_end.saturating_sub(reach)..phrase_end)
        .rev()
        .find(|&i| frames[i].is_voiced())?;
    let first = (last_voiced + 1).saturating_sub(window);
    let points: Vec<(f64, f32)> = frames[first..=last_voiced]
        .iter()
        .filter_map(|f| f.f0_semitones.map(|st| (f.time_s(), st)))
        .collect();
    if points.len() < TERMINAL_MIN_FRAMES {
        return None;
    }
    let slope = theil_sen(&points)?;
    let mut phrase: Vec<f32> = frames[phrase_start.min(last_voiced)..=last_voiced]
        .iter()
        .filter_map(|f| f.f0_semitones)
        .collect();
    let mut end: Vec<f32> = points[points.len() - TERMINAL_END_FRAMES..]
        .iter()
        .map(|p| p.1)
        .collect();
    let height = median(&mut end)? - median(&mut phrase)?;
    let direction = if slope > TERMINAL_SLOPE_ST_PER_S
        || (height >= TERMINAL_HEIGHT_ST && slope >= 0.0)
    {
        Direction::Rising
    } else if slope < -TERMINAL_SLOPE_ST_PER_S || (height <= -TERMINAL_HEIGHT_ST && slope <= 0.0) {
        Direction::Falling
    } else {
        Direction::Level
    };
    Some(TerminalContour {
        end_s: (frames[last_voiced].index + 1) as f64 * FRAME_SECONDS,
        slope_st_per_s: slope,
        final_height_st: height,
        direction,
    })
}

/// Lengths (s) of the filled pauses starting among frames `first..last`.
///
/// The rule, after Goto, Itou & Hayamizu (1999, "A real-time filled pause
/// detection system for spontaneous speech recognition", Eurospeech), who
/// find fillers as stretches of small F0 transition and small spectral
/// envelope deformation: a run of voiced frames
///
/// - lasting 0.2 to 1 s (a filler is held longer than an ordinary syllable,
///   Shriberg 2001; a voice held longer is singing or humming);
/// - at least [`FILLED_STEADY_SHARE`] of whose frames are spectrally steady:
///   MFCC 1-4 change by at most [`STEADY_MFCC_DELTA`] per frame (the
///   regression slope over +/- 2 frames, the run's ends repeated);
/// - with a level F0: Theil-Sen slope within +/- [`FILLED_MAX_SLOPE_ST_PER_S`]
///   st/s and 5th-95th percentile range under [`FILLED_MAX_RANGE_ST`] st.
///
/// The silent pauses that often surround fillers and their lower level are
/// not required: fillers also come between words without a break, and a
/// level rule would depend on the microphone. A filler run together with
/// the words around it into one voiced stretch is not found, nor is one
/// shorter than 0.2 s (synthetic speech says a mid-sentence "uh" in 0.1 s);
/// a held word ("so...", a drawn-out vowel) is, which is also a hesitation
/// (a prolongation, Clark & Fox Tree 2002). A run is counted in the span
/// where it starts and read to its end, which is final once the span is
/// settled ([`crate::features::FeatureExtractor::settled_s`]).
pub(super) fn filled_pauses(frames: &[Frame], first: usize, last: usize) -> Vec<f32> {
    let mut found = Vec::new();
    for s in first..last {
        if !frames[s].is_voiced() || (s > 0 && frames[s - 1].is_voiced()) {
            continue;
        }
        let run = frames[s..]
            .iter()
            .take(FILLED_MAX_FRAMES + 1)
            .take_while(|f| f.is_voiced())
            .count();
        if !(FILLED_MIN_FRAMES..=FILLED_MAX_FRAMES).contains(&run) {
            continue;
        }
        let run = &frames[s..s + run];
        let at = |j: isize| &run[j.clamp(0, run.len() as isize - 1) as usize].mfcc;
        let steady = (0..run.len() as isize)
            .filter(|&j| {
                let delta2: f32 = (0..4)
                    .map(|c| {
                        let d = ((at(j + 1)[c] - at(j - 1)[c])
                            + 2.0 * (at(j + 2)[c] - at(j - 2)[c]))
                            / 10.0;
                        d * d
                    })
                    .sum();
                delta2.sqrt() <= STEADY_MFCC_DELTA
            })
            .count();
        if (steady as f32) < FILLED_STEADY_SHARE * run.len() as f32 {
            continue;
        }
        let points: Vec<(f64, f32)> = run
            .iter()
            .filter_map(|f| f.f0_semitones.map(|st| (f.time_s(), st)))
            .collect();
        let mut f0: Vec<f32> = points.iter().map(|p| p.1).collect();
        let range = match (quantile(&mut f0, 0.95), quantile(&mut f0, 0.05)) {
            (Some(a), Some(b)) => a - b,
            _ => continue,
        };
        let level = theil_sen(&points).is_some_and(|v| v.abs() <= FILLED_MAX_SLOPE_ST_PER_S);
        if level && range <= FILLED_MAX_RANGE_ST {
            found.push((run.len() as f64 * FRAME_SECONDS) as f32);
        }
    }
    found
}

/// Syllable nuclei among frames `first..last` (de Jong & Wempe 2009).
pub(super) fn syllable_nuclei(
    frames: &[Frame],
    first: usize,
    last: usize,
    mask: &[bool],
    mask_lo: usize,
) -> Vec<usize> {
    let mut nuclei = Vec::new();
    if last < first + 3 {
        return nuclei;
    }
    let mut levels: Vec<f32> = frames[first..last].iter().map(|f| f.intensity_db).collect();
    let Some(top) = quantile(&mut levels, 0.99) else {
        return nuclei;
    };
    let threshold = top - NUCLEUS_SILENCE_DB;
    let level = |i: usize| frames[i].intensity_db;
    let peaks: Vec<usize> = (first + 1..last - 1)
        .filter(|&i| level(i) > threshold && level(i) > level(i - 1) && level(i) >= level(i + 1))
        .collect();
    // Prominent by 2 dB on both sides (de Jong & Wempe's dip after the
    // peak, and the same rise before it), each side measured to the lowest
    // point before the nearest peak at least as loud on that side, or the
    // span's end (topographic prominence): a shoulder on the slope of a
    // louder syllable (low-frequency energy of a nasal or a reduced vowel,
    // which a telephone band removes) is not a nucleus, and a ripple on a
    // slope (a lossy codec's) does not hide the peak above it.
    let left = prominence_bases(frames, &peaks, first, false);
    let mut right = prominence_bases(
        frames,
        &peaks.iter().rev().copied().collect::<Vec<_>>(),
        last - 1,
        true,
    );
    right.reverse();
    for ((&p, l), r) in peaks.iter().zip(left).zip(right) {
        let in_speech = mask.get(p - mask_lo).copied().unwrap_or(false);
        if level(p) - l >= NUCLEUS_MIN_DIP_DB
            && level(p) - r >= NUCLEUS_MIN_DIP_DB
            && frames[p].is_voiced()
            && in_speech
        {
            nuclei.push(p);
        }
    }
    nuclei
}

/// For each of `peaks` (frame positions, in the order walked: forward, or
/// backward with `strictly_higher`), the lowest intensity between it and the
/// nearest earlier-walked peak at least as loud (strictly louder with
/// `strictly_higher`, so of two equal peaks one keeps its prominence), or
/// back to frame `start`. A stack holds the walked peaks of non-increasing
/// level, each with the lowest intensity from it to the next one held.
fn prominence_bases(
    frames: &[Frame],
    peaks: &[usize],
    start: usize,
    strictly_higher: bool,
) -> Vec<f32> {
    let level = |i: usize| frames[i].intensity_db;
    let mut bases = Vec::with_capacity(peaks.len());
    let mut stack: Vec<(f32, f32)> = vec![(f32::INFINITY, f32::INFINITY)];
    let mut previous = start;
    for &p in peaks {
        let (a, b) = (previous.min(p), previous.max(p));
        let mut low = frames[a..=b]
            .iter()
            .fold(f32::INFINITY, |m, f| m.min(f.intensity_db));
        previous = p;
        let lower = |held: f32| {
            if strictly_higher {
                held <= level(p)
            } else {
                held < level(p)
            }
        };
        while stack.len() > 1 && stack.last().is_some_and(|e| lower(e.0)) {
            low = low.min(stack.pop().map_or(f32::INFINITY, |e| e.1));
        }
        let base = match stack.last_mut() {
            Some(higher) => {
                higher.1 = higher.1.min(low);
                higher.1
            }
            None => low,
        };
        bases.push(base);
        stack.push((level(p), f32::INFINITY));
    }
    bases
}
