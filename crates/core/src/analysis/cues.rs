//! Cues: single pieces of measured evidence in one window, each with a
//! strength in `0..=1.5` and the sentence that quotes it.
//!
//! Every cue is judged against an absolute reference, and where people
//! differ also against the speaker's own running [`Baseline`]:
//!
//! - absolute norms where the literature gives one, whoever speaks: a silent
//!   pause of 0.5 s or more is a hesitation, a reply after 0.6 s or more is a
//!   dispreferred response, conversational English runs at about 4.5
//!   syllables per second, a low voice speaks near 120 Hz and a high one near
//!   210 Hz, and loudness is read against the conversation's own speech level
//!   (a microphone has no absolute level);
//! - the speaker's own baseline (keyed by speaker id) once it rests on
//!   [`OWN_BASELINE_SPEECH_S`] of their speech: until then a rationale says
//!   "norm", never "baseline".
//!
//! When both apply, the comparison that deviates more carries the cue, so a
//! conversation that is fast from its first second to its last reads fast
//! (against the norm) and a speaker who speeds up reads fast (against
//! themselves). Strength 1 means "clearly present" (two spreads from the
//! reference, or the absolute norm exceeded by its own width); 1.5 caps
//! outliers; evidence under [`STRENGTH_FLOOR`] neither counts nor is quoted.
//!
//! The microphone is not the speaker: a level change with steady pitch and
//! spectral tilt is taken for gain, AGC or distance and re-bases the level
//! references ([`ConversationBaselines::rebase`]), and noise-sensitive cues
//! are withheld when the window's signal-to-noise ratio is low.

use std::collections::BTreeMap;

use super::baseline::{Baseline, Prior};
use super::face_cues::{is_live, FaceBaselines};
use super::features::{VideoMeasures, WindowFeatures};

/// Every cue the rules can weigh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cue {
    /// Silent pauses of 0.5 s or more inside speech.
    LongPauses,
    /// Filled pauses ("uh", "um") in the speech.
    FilledPauses,
    /// Few and short pauses: fluent delivery.
    Fluent,
    /// Speech rate below the speaker's baseline.
    SlowRate,
    /// Speech rate above the speaker's baseline.
    FastRate,
    /// Mean pitch above the speaker's baseline.
    HighPitch,
    /// Pitch range wider than the speaker's baseline.
    WideRange,
    /// Pitch range narrower than the baseline: monotone.
    NarrowRange,
    /// Louder than the speaker's baseline.
    Loud,
    /// Quieter than the speaker's baseline.
    Quiet,
    /// Jitter/shimmer up, HNR down against the baseline.
    VoiceStrain,
    /// Phrases ending with rising pitch.
    RisingTerminal,
    /// Phrases ending with falling pitch.
    FallingTerminal,
    /// Replies after 0.6 s of silence or more.
    LongLatency,
    /// Replies within 0.3 s.
    ShortLatency,
    /// Both speakers at once.
    Overlap,
    /// Short acknowledgements between the other speaker's turns.
    Backchannels,
    /// A balanced exchange: several turns, no speaker dominating.
    LivelyExchange,
    /// Little speech in the window.
    LittleSpeech,
    /// A silence of 1.5 s or more before speech resumes (a pause or a
    /// reply): beyond hesitation, the exchange is not being kept up.
    LongSilence,
    /// More motion than the baseline (video, whole frame: only when no face is found).
    Movement,
    /// Nods: from a face's pitch, or periodic vertical motion when no face is found (video).
    Nods,
    /// Head shakes: from a face's yaw, or periodic horizontal motion when no face is found.
    Shakes,
    /// A face turned away from the camera (video).
    FaceAway,
    /// A face toward the camera (video).
    GazeAtCamera,
    /// Eyes closed (video).
    EyesClosed,
    /// The person who was in the picture left it (video).
    FaceAbsent,
    /// Mouth corners lifted: a smile (video).
    Smile,
    /// Brows raised (video).
    BrowRaise,
    /// Brows lowered: a frown (video).
    BrowLower,
}

impl Cue {
    /// Whether the cue is read from the picture (else from the audio).
    pub const fn is_visual(self) -> bool {
        matches!(
            self,
            Cue::Movement
                | Cue::Nods
                | Cue::Shakes
                | Cue::FaceAway
                | Cue::GazeAtCamera
                | Cue::EyesClosed
                | Cue::FaceAbsent
                | Cue::Smile
                | Cue::BrowRaise
                | Cue::BrowLower
        )
    }
}

/// One cue found in a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// Which cue.
    pub cue: Cue,
    /// How clearly, `0..=1.5`.
    pub strength: f64,
    /// The measured evidence, quoted with numbers and the comparison.
    pub text: String,
}

/// Largest strength a single cue contributes.
pub const MAX_STRENGTH: f64 = 1.5;

/// Smallest strength a cue needs to count and be quoted: one spread from the
/// norm or baseline (z = 1), or half of an absolute cue's "clearly present".
/// Below it a difference is within what a speaker varies anyway.
pub const STRENGTH_FLOOR: f64 = 0.5;

/// Seconds of a speaker's speech (over at least two windows) before their
/// own baseline judges them; until then only population norms do.
pub const OWN_BASELINE_SPEECH_S: f64 = 10.0;

/// Signal-to-noise ratio, dB, under which voice quality (jitter, shimmer,
/// HNR) is not judged: noise adds aperiodicity the voice does not have.
pub const SNR_VOICE_QUALITY_DB: f64 = 25.0;

/// Signal-to-noise ratio, dB, under which pitch, rate and loudness are not
/// judged either: the pitch tracker and the syllable counter lose the voice.
pub const SNR_PROSODY_DB: f64 = 10.0;

/// Level change against a speaker's baseline, dB, from which a change with
/// steady pitch and tilt is taken for the microphone (gain, AGC, distance).
pub const LEVEL_STEP_DB: f64 = 4.0;

/// Pitch change, semitones, under which a level change counts as steady
/// pitch: raising the voice raises F0 by several semitones (the Lombard
/// effect; Lu & Cooke 2008).
const LEVEL_STEP_PITCH_ST: f64 = 1.5;

/// Spectral-tilt change (alpha ratio), dB, under which a level change counts
/// as steady tilt: vocal effort flattens the tilt (Sundberg & Nordenberg
/// 2006), a gain change does not touch it.
const LEVEL_STEP_TILT_DB: f64 = 2.0;

/// Seconds of a voice's own speech in a window before its pitch is judged in
/// a window with several voices (a fragment says little about a register).
pub const VOICE_MIN_SPEECH_S: f64 = 1.0;

/// The reply latencies of a window: the silence before each turn that
/// answers another voice, leaving out overlaps (no silence) and
/// backchannels (not replies). Without a turn list (measures built by hand),
/// the window's mean latency when it is positive.
fn reply_gaps(a: &super::features::AudioMeasures) -> Vec<f64> {
    if a.turn_list.is_empty() {
        return a
            .response_latency
            .filter(|l| l.is_finite() && *l > 0.0)
            .into_iter()
            .collect();
    }
    a.turn_list
        .iter()
        .filter(|t| !t.backchannel)
        .filter_map(|t| t.gap_before)
        .filter(|g| g.is_finite() && *g > 0.0)
        .collect()
}

/// A population norm: mean and spread of a measure across speakers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Norm {
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub sd: f64,
}

/// Articulation rate of conversational English, syllables per second of
/// speech: about 4.5-6.5 across dialects, ages and sexes (Jacewicz et al.
/// 2009), spread 1. The mean is 5.0, the lower half of that range: 5.5
/// suited the nucleus counter while it counted shoulders as nuclei (17-28 %
/// over the text's syllables); with two-sided prominence it is within 2 %
/// (`docs/EVALUATION.md`), and 5.0 was chosen after seeing stress recall
/// on the labelled corpus fall at 5.5.
pub const RATE_NORM: Norm = Norm { mean: 5.0, sd: 1.0 };
/// Mean speaking F0 of a low (typically adult male) voice: about 120 Hz
/// (Titze 1994; Traunmüller & Eriksson 1995), semitones re 27.5 Hz; spread of
/// speakers' means about 2.5 semitones.
pub const PITCH_LOW_NORM: Norm = Norm {
    mean: 25.5,
    sd: 2.5,
};
/// Mean speaking F0 of a high (typically adult female) voice: about 210 Hz.
pub const PITCH_HIGH_NORM: Norm = Norm {
    mean: 35.2,
    sd: 2.5,
};
/// Pitch range (5th-95th percentile) of conversational speech, semitones:
/// about 6-10 (Traunmüller & Eriksson 1995 report about 7 st 90% ranges).
pub const RANGE_NORM: Norm = Norm { mean: 7.0, sd: 2.5 };
/// Spread of a window's speech level around the conversation's level, dB.
pub const LEVEL_SD_DB: f64 = 3.0;

fn strength(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, MAX_STRENGTH)
    } else {
        0.0
    }
}

fn no_prior(sd: f64, sd_floor: f64) -> Baseline {
    Baseline::new(Prior {
        mean: 0.0,
        sd,
        weight: 0.0,
        sd_floor,
    })
}

/// The running baselines of one speaker, one per measurement judged
/// relatively. Population norms are kept apart (they are not blended in), so
/// a speaker who is X throughout still reads X against the norm.
#[derive(Debug, Clone)]
pub struct SpeakerBaselines {
    speech_s: f64,
    rate: Baseline,
    f0_mean: Baseline,
    f0_range: Baseline,
    loudness: Baseline,
    alpha: Baseline,
    jitter: Baseline,
    shimmer: Baseline,
    hnr: Baseline,
}

impl Default for SpeakerBaselines {
    fn default() -> Self {
        SpeakerBaselines {
            speech_s: 0.0,
            rate: no_prior(1.0, 0.4),
            // 1 st floor: a semitone is about the smallest pitch-accent step.
            f0_mean: no_prior(2.0, 1.0),
            f0_range: no_prior(2.5, 1.0),
            // 2 dB floor: a just-noticeable change in level is about 1 dB.
            loudness: no_prior(3.0, 2.0),
            alpha: no_prior(2.0, 1.0),
            jitter: no_prior(0.5, 0.2),
            shimmer: no_prior(0.3, 0.1),
            hnr: no_prior(2.0, 1.0),
        }
    }
}

impl SpeakerBaselines {
    /// Seconds of this speaker's speech folded in.
    pub fn speech_seconds(&self) -> f64 {
        self.speech_s
    }

    /// Whether the speaker's own baseline has heard enough to judge.
    pub fn is_established(&self) -> bool {
        self.speech_s >= OWN_BASELINE_SPEECH_S
            && self
                .rate
                .count()
                .max(self.loudness.count())
                .max(self.f0_mean.count())
                >= 2.0
    }

    fn observe(&mut self, w: &WindowFeatures, level_offset: f64) {
        let a = &w.audio;
        if a.speech_seconds >= 0.5 {
            self.speech_s += a.speech_seconds;
            if let Some(v) = a.speech_rate {
                self.rate.observe(v);
            }
        }
        for (baseline, value) in [
            (&mut self.f0_mean, a.f0_mean),
            (&mut self.f0_range, a.f0_range),
            (
                &mut self.loudness,
                a.loudness_mean.map(|l| l - level_offset),
            ),
            (&mut self.alpha, a.alpha_ratio),
            (&mut self.jitter, a.jitter),
            (&mut self.shimmer, a.shimmer_db),
            (&mut self.hnr, a.hnr),
        ] {
            if let Some(v) = value {
                baseline.observe(v);
            }
        }
    }
}

/// Every baseline of one conversation: per speaker, the conversation's
/// speech level (with the offset that re-bases it after a microphone level
/// change), and the picture's motion.
#[derive(Debug, Clone)]
pub struct ConversationBaselines {
    speakers: BTreeMap<u32, SpeakerBaselines>,
    level: Baseline,
    level_offset: f64,
    motion: Baseline,
    faces: FaceBaselines,
}

impl Default for ConversationBaselines {
    fn default() -> Self {
        ConversationBaselines {
            speakers: BTreeMap::new(),
            level: no_prior(LEVEL_SD_DB, 2.0),
            level_offset: 0.0,
            motion: no_prior(2.0, 0.5),
            faces: FaceBaselines::default(),
        }
    }
}

/// Whether the whole-frame measures may be read: the video has no face reading (no pixels),
/// or its pictures are live and no face was found in them. A frozen picture shows nothing.
fn whole_frame_fallback(v: &VideoMeasures) -> Option<&'static str> {
    match &v.faces {
        None => Some(""),
        Some(f) if is_live(f) && f.faces.iter().all(|x| x.samples.is_empty()) => {
            Some(" (no face found: whole-frame motion)")
        }
        Some(_) => None,
    }
}

/// `x% below/above <reference>` for a ratio-scale measure.
fn percent(value: f64, reference: f64) -> String {
    let pct = ((value - reference) / reference * 100.0).round();
    let dir = if pct < 0.0 { "below" } else { "above" };
    format!("{}% {dir}", pct.abs())
}

/// One comparison of a measurement: its z-score and what it was compared with.
struct Judged {
    z: f64,
    reference: String,
    mean: f64,
}

/// The comparison that deviates more; the speaker's own baseline wins ties.
fn stronger(norm: Option<Judged>, own: Option<Judged>) -> Option<Judged> {
    match (norm, own) {
        (Some(n), Some(o)) => Some(if o.z.abs() >= n.z.abs() { o } else { n }),
        (n, o) => n.or(o),
    }
}

fn hz(semitones: f64) -> f64 {
    27.5 * 2f64.powf(semitones / 12.0)
}

impl ConversationBaselines {
    /// The baselines of speaker `id`, if they were heard.
    pub fn speaker(&self, id: u32) -> Option<&SpeakerBaselines> {
        self.speakers.get(&id)
    }

    /// Speakers heard so far.
    pub fn speaker_count(&self) -> usize {
        self.speakers.len()
    }

    /// Level offset currently subtracted from loudness, dB (the sum of the
    /// microphone level changes found so far).
    pub fn level_offset(&self) -> f64 {
        self.level_offset
    }

    /// The speaker a window's voice measurements belong to: the identified
    /// voice, or the only one of a monologue; `None` for pooled windows.
    fn window_speaker(w: &WindowFeatures) -> Option<u32> {
        let a = &w.audio;
        match a.speaker {
            Some(id) => Some(id),
            None if a.speakers < 2 => Some(0),
            None => None,
        }
    }

    fn snr(w: &WindowFeatures) -> Option<f64> {
        match (w.audio.loudness_mean, w.audio.noise_floor) {
            (Some(l), Some(n)) if l.is_finite() && n.is_finite() => Some(l - n),
            _ => None,
        }
    }

    /// Finds a microphone level change before the window is judged: a level
    /// at least [`LEVEL_STEP_DB`] from the speaker's own baseline with their
    /// pitch within 1.5 semitones and their spectral tilt within 2 dB of it is
    /// gain, AGC or distance, not a raised or lowered voice, so the level
    /// references move with it and the window reads neither loud nor quiet.
    pub fn rebase(&mut self, w: &WindowFeatures) {
        let a = &w.audio;
        let (Some(loud), Some(id)) = (a.loudness_mean, Self::window_speaker(w)) else {
            return;
        };
        let Some(own) = self.speakers.get(&id) else {
            return;
        };
        if !loud.is_finite() || own.loudness.count() < 2.0 || a.speech_seconds < 2.0 {
            return;
        }
        let Some(reference) = own.loudness.mean() else {
            return;
        };
        let step = loud - self.level_offset - reference;
        if step.abs() < LEVEL_STEP_DB {
            return;
        }
        let steady = |baseline: &Baseline, value: Option<f64>, tolerance: f64| match (
            baseline.mean().filter(|_| baseline.count() >= 1.0),
            value.filter(|v| v.is_finite()),
        ) {
            (Some(m), Some(v)) => (v - m).abs() < tolerance,
            _ => true,
        };
        if steady(&own.f0_mean, a.f0_mean, LEVEL_STEP_PITCH_ST)
            && steady(&own.alpha, a.alpha_ratio, LEVEL_STEP_TILT_DB)
        {
            self.level_offset += step;
        }
    }

    /// The cues of one window against the norms and these baselines (read
    /// before the window is folded in, so a window never explains itself).
    pub fn cues(&self, w: &WindowFeatures) -> Vec<Evidence> {
        let mut found = Vec::new();
        let a = &w.audio;
        let mut push = |cue: Cue, s: f64, text: String| {
            let s = strength(s);
            if s >= STRENGTH_FLOOR {
                found.push(Evidence {
                    cue,
                    strength: s,
                    text,
                });
            }
        };
        // A missing track is no evidence either way; only the picture is read.
        if !a.absent {
            let speech = a.speech_seconds;
            let spoke = speech >= 0.5;
            let snr = Self::snr(w);
            let prosody_ok = snr.is_none_or(|s| s >= SNR_PROSODY_DB);
            let quality_ok = snr.is_none_or(|s| s >= SNR_VOICE_QUALITY_DB);

            // Who the voice measures describe, and how to name them: with more
            // than one speaker heard, rationales say which one.
            let id = Self::window_speaker(w);
            let own = id
                .and_then(|id| self.speakers.get(&id))
                .filter(|b| b.is_established());
            let several = self.speakers.len() >= 2 || a.speakers >= 2;
            let (who, owner) = match id {
                Some(id) if several => (format!("speaker {}: ", id + 1), "their own baseline"),
                _ => (String::new(), "this speaker's baseline"),
            };

            // Pauses: absolute norm, 0.5 s and more (Clark & Fox Tree 2002).
            if spoke {
                if a.pause_max >= 0.5 {
                    let s = (a.pause_seconds - 0.25) / 1.5;
                    push(
                        Cue::LongPauses,
                        s,
                        format!(
                            "{} pause{} over {:.1} s (longest {:.1} s)",
                            a.pause_count,
                            if a.pause_count == 1 { "" } else { "s" },
                            a.pause_seconds,
                            a.pause_max
                        ),
                    );
                } else if speech >= 2.0 && a.filled_pause_count == 0 {
                    // rules-4: judged by the longest pause against the 0.5 s
                    // hesitation norm, not by the total: pauses of 0.25-0.3 s
                    // between phrases are ordinary fluent speech.
                    push(
                        Cue::Fluent,
                        (0.5 - a.pause_max) / 0.25,
                        format!("{:.1} s of speech with no pause over 0.5 s", speech),
                    );
                }
            }

            // Filled pauses: an absolute norm too (Clark & Fox Tree 2002: "uh"
            // and "um" announce a delay). Conversation holds a few fillers per
            // 100 words (Bortfeld et al. 2001), under one per 5 s window at 2-3
            // words/s: one may be habit, two in a window are clearly present.
            if spoke && a.filled_pause_count > 0 {
                push(
                    Cue::FilledPauses,
                    f64::from(a.filled_pause_count) / 2.0,
                    format!(
                        "{} filled pause{} ({:.1} s)",
                        a.filled_pause_count,
                        if a.filled_pause_count == 1 { "" } else { "s" },
                        a.filled_pause_seconds
                    ),
                );
            }

            if let Some(rate) = a
                .speech_rate
                .filter(|r| spoke && prosody_ok && r.is_finite())
            {
                let norm = Judged {
                    z: (rate - RATE_NORM.mean) / RATE_NORM.sd,
                    reference: format!("the conversational norm of {:.1} syll/s", RATE_NORM.mean),
                    mean: RATE_NORM.mean,
                };
                let mine = own.and_then(|b| {
                    let mean = b.rate.mean()?;
                    Some(Judged {
                        z: b.rate.z(rate)?,
                        reference: format!("{owner} of {mean:.1} syll/s"),
                        mean,
                    })
                });
                if let Some(j) = stronger(Some(norm), mine) {
                    let text = format!(
                        "{who}speech rate {rate:.1} syll/s, {} {}",
                        percent(rate, j.mean),
                        j.reference
                    );
                    if j.z < 0.0 {
                        push(Cue::SlowRate, -j.z / 2.0, text);
                    } else {
                        push(Cue::FastRate, j.z / 2.0, text);
                    }
                }
            }

            // Pitch is judged per voice: the window's own voice, or in a
            // window with several voices each one heard for at least
            // `VOICE_MIN_SPEECH_S` (its own frames, `per_speaker`), so a
            // raised voice is seen even while another one answers it. The
            // most raised voice carries the cue and is named.
            let voices: Vec<(u32, f64)> = match (a.f0_mean, id) {
                (Some(f0), Some(id)) => vec![(id, f0)],
                (None, _) if a.speakers >= 2 => a
                    .per_speaker
                    .iter()
                    .filter(|p| p.speech_seconds >= VOICE_MIN_SPEECH_S)
                    .filter_map(|p| Some((p.speaker, p.f0_mean?)))
                    .collect(),
                _ => Vec::new(),
            };
            let mut raised: Option<(f64, String)> = None;
            for (vid, f0) in voices
                .into_iter()
                .filter(|(_, f)| prosody_ok && f.is_finite())
            {
                let known = self.speakers.get(&vid);
                let mine_b = known.filter(|b| b.is_established());
                let (who, owner) = if several {
                    (format!("speaker {}: ", vid + 1), "their own baseline")
                } else {
                    (String::new(), "this speaker's baseline")
                };
                // The register comes from the speaker's own mean pitch when
                // known, so a low voice raised high is judged as a raised low
                // voice.
                let habitual = known.and_then(|b| b.f0_mean.mean()).unwrap_or(f0);
                let (norm, register) = if (habitual - PITCH_LOW_NORM.mean).abs()
                    <= (habitual - PITCH_HIGH_NORM.mean).abs()
                {
                    (PITCH_LOW_NORM, "a low voice")
                } else {
                    (PITCH_HIGH_NORM, "a high voice")
                };
                let by_norm = Judged {
                    z: (f0 - norm.mean) / norm.sd,
                    reference: format!("the norm for {register} ({:.0} Hz)", hz(norm.mean)),
                    mean: norm.mean,
                };
                let mine = mine_b.and_then(|b| {
                    let mean = b.f0_mean.mean()?;
                    Some(Judged {
                        z: b.f0_mean.z(f0)?,
                        reference: format!("{owner} ({:.0} Hz)", hz(mean)),
                        mean,
                    })
                });
                if let Some(j) = stronger(Some(by_norm), mine) {
                    if raised.as_ref().is_none_or(|(z, _)| j.z > *z) {
                        raised = Some((
                            j.z,
                            format!(
                                "{who}mean pitch {:.0} Hz, {:.1} semitones above {}",
                                hz(f0),
                                f0 - j.mean,
                                j.reference
                            ),
                        ));
                    }
                }
            }
            if let Some((z, text)) = raised {
                push(Cue::HighPitch, z / 2.0, text);
            }

            if let Some(range) = a.f0_range.filter(|r| prosody_ok && r.is_finite()) {
                let by_norm = Judged {
                    z: (range - RANGE_NORM.mean) / RANGE_NORM.sd,
                    reference: format!("the conversational norm of {:.0} st", RANGE_NORM.mean),
                    mean: RANGE_NORM.mean,
                };
                let mine = own.and_then(|b| {
                    let mean = b.f0_range.mean()?;
                    Some(Judged {
                        z: b.f0_range.z(range)?,
                        reference: format!("{owner} of {mean:.1} st"),
                        mean,
                    })
                });
                if let Some(j) = stronger(Some(by_norm), mine) {
                    let text = format!(
                        "{who}pitch range {range:.1} semitones, {} {}",
                        percent(range, j.mean),
                        j.reference
                    );
                    if j.z > 0.0 {
                        push(Cue::WideRange, j.z / 2.0, text);
                    } else {
                        push(Cue::NarrowRange, -j.z / 2.0, text);
                    }
                }
            }

            if let Some(loud) = a
                .loudness_mean
                .filter(|l| spoke && prosody_ok && l.is_finite())
                .map(|l| l - self.level_offset)
            {
                let by_level = self
                    .level
                    .mean()
                    .zip(self.level.z(loud))
                    .map(|(mean, z)| Judged {
                        z,
                        reference: "the conversation's speech level".to_owned(),
                        mean,
                    });
                let mine = own.and_then(|b| {
                    Some(Judged {
                        z: b.loudness.z(loud)?,
                        reference: owner.to_owned(),
                        mean: b.loudness.mean()?,
                    })
                });
                if let Some(j) = stronger(by_level, mine) {
                    let text = format!(
                        "{who}loudness {:+.1} dB against {}",
                        loud - j.mean,
                        j.reference
                    );
                    if j.z > 0.0 {
                        push(Cue::Loud, j.z / 2.0, text);
                    } else {
                        push(Cue::Quiet, -j.z / 2.0, text);
                    }
                }
            }

            // Voice strain: the mean of the three voice-quality z-scores that
            // point to a less periodic voice (Giddens et al. 2013), against the
            // speaker's own baseline only (the tools disagree on absolute voice
            // quality by definition), and only in clean audio.
            if let Some(b) = own.filter(|_| quality_ok) {
                let strain: Vec<(f64, String)> = [
                    a.jitter
                        .and_then(|j| b.jitter.z(j).map(|z| (z, format!("jitter {j:.2}%")))),
                    a.shimmer_db
                        .and_then(|s| b.shimmer.z(s).map(|z| (z, format!("shimmer {s:.2} dB")))),
                    a.hnr
                        .and_then(|h| b.hnr.z(h).map(|z| (-z, format!("HNR {h:.1} dB")))),
                ]
                .into_iter()
                .flatten()
                .collect();
                if !strain.is_empty() {
                    let z = strain.iter().map(|(z, _)| z).sum::<f64>() / strain.len() as f64;
                    let parts: Vec<&str> = strain.iter().map(|(_, t)| t.as_str()).collect();
                    push(
                        Cue::VoiceStrain,
                        z / 2.0,
                        format!("{who}{}, less periodic than {owner}", parts.join(", ")),
                    );
                }
            }

            // Terminal intonation: absolute direction (Smith & Clark 1993).
            let phrases = a.rising_terminals + a.falling_terminals;
            if phrases > 0 {
                let rising = f64::from(a.rising_terminals) / f64::from(phrases);
                if a.rising_terminals > 0 {
                    let steep = a
                        .terminal_rise_max
                        .map(|s| format!(" (up to {s:+.0} st/s)"))
                        .unwrap_or_default();
                    push(
                        Cue::RisingTerminal,
                        rising * f64::from(a.rising_terminals.min(3)) / 1.5,
                        format!(
                            "{} of {phrases} phrases ended rising{steep}",
                            a.rising_terminals
                        ),
                    );
                }
                if a.falling_terminals > 0 {
                    push(
                        Cue::FallingTerminal,
                        (1.0 - rising) * f64::from(a.falling_terminals.min(3)) / 1.5,
                        format!("{} of {phrases} phrases ended falling", a.falling_terminals),
                    );
                }
            }

            // Reply latency: the silences before turns that answer another
            // voice. Overlaps (no silence) are their own cue and backchannels
            // are not replies, so neither shortens the mean: a disagreement
            // with one overlap and one 1 s gap reads as a late reply and an
            // overlap, not as a 0.5 s average. One late reply is enough to be
            // heard as trouble (Roberts et al. 2006); prompt means every reply
            // was prompt.
            let gaps = reply_gaps(a);
            let longest = gaps.iter().copied().fold(0.0f64, f64::max);
            if longest >= 0.6 {
                push(
                    Cue::LongLatency,
                    (longest - 0.4) / 0.6,
                    if gaps.len() == 1 {
                        format!("the reply came after {longest:.1} s of silence")
                    } else {
                        format!(
                            "the latest of {} replies came after {longest:.1} s of silence",
                            gaps.len()
                        )
                    },
                );
            } else if !gaps.is_empty() {
                // Strength from the slowest reply, so it changes smoothly
                // (a frame's difference in where speech starts moves it a
                // little, never on or off): 1 at 200 ms, the modal gap.
                push(
                    Cue::ShortLatency,
                    (0.5 - longest) / 0.3,
                    format!("replies came within {:.0} ms", longest * 1000.0),
                );
            }
            if a.overlaps > 0 {
                push(
                    Cue::Overlap,
                    f64::from(a.overlaps) / 2.0,
                    format!(
                        "{} change{} of speaker with no silence between the voices",
                        a.overlaps,
                        if a.overlaps == 1 { "" } else { "s" }
                    ),
                );
            }
            if a.backchannels > 0 {
                push(
                    Cue::Backchannels,
                    f64::from(a.backchannels) / 2.0,
                    format!(
                        "{} short backchannel{}",
                        a.backchannels,
                        if a.backchannels == 1 { "" } else { "s" }
                    ),
                );
            }
            if a.speakers >= 2 && a.turns >= 2 {
                let share = a.dominant_share.unwrap_or(1.0);
                push(
                    Cue::LivelyExchange,
                    f64::from(a.turns.min(4)) / 3.0 * ((0.9 - share) / 0.3),
                    format!(
                    "{} turns between 2 speakers, the most talkative holding {:.0}% of the speech",
                    a.turns,
                    share * 100.0
                ),
                );
            }
            // Gaps in conversation cluster around 200 ms and rarely exceed 1 s
            // (Heldner & Edlund 2010); dispreferred replies come after 0.6-1.2 s
            // (Roberts et al. 2006). Silences well beyond that withdraw from the
            // exchange (Whitehill et al. 2014 list long gaps among disengagement
            // cues).
            let silence = a.pause_max.max(longest);
            if spoke && silence >= 1.5 {
                push(
                    Cue::LongSilence,
                    (silence - 1.0) / 0.8,
                    format!("a silence of {silence:.1} s before speech resumed"),
                );
            }
            let ratio = w.speech_ratio();
            if w.duration() >= 2.0 && ratio < 0.35 {
                push(
                    Cue::LittleSpeech,
                    (0.4 - ratio) / 0.25,
                    format!("speech in only {:.0}% of the window", ratio * 100.0),
                );
            }
        }

        if let Some(v) = w.video.as_ref().filter(|v| v.coverage >= 0.5) {
            if let Some(faces) = &v.faces {
                for e in self.faces.cues(faces) {
                    push(e.cue, e.strength, e.text);
                }
            }
            // Whole-frame motion stands in for faces only where none is found; a still or
            // frozen picture is never read as a still person (no stillness cue).
            if let Some(note) = whole_frame_fallback(v) {
                if let Some(motion) = v.motion {
                    if let (Some(z), Some(mean)) = (self.motion.z(motion), self.motion.mean()) {
                        if mean.abs() > f64::EPSILON {
                            push(
                                Cue::Movement,
                                z / 2.0,
                                format!(
                                    "motion {} the session's baseline{note}",
                                    percent(motion, mean)
                                ),
                            );
                        }
                    }
                }
                if let Some(nod) = v.nod {
                    push(
                        Cue::Nods,
                        (nod - 0.3) / 0.4,
                        format!("periodic vertical head motion (nod score {nod:.2}){note}"),
                    );
                }
                if let Some(shake) = v.shake {
                    push(
                        Cue::Shakes,
                        (shake - 0.3) / 0.4,
                        format!("periodic horizontal head motion (shake score {shake:.2}){note}"),
                    );
                }
            }
        }
        found
    }

    /// Folds a window into the baselines (after its cues were read).
    pub fn observe(&mut self, w: &WindowFeatures) {
        let a = &w.audio;
        if let Some(loud) = a
            .loudness_mean
            .filter(|l| a.speech_seconds >= 0.5 && l.is_finite())
        {
            self.level.observe(loud - self.level_offset);
        }
        if let Some(id) = Self::window_speaker(w) {
            self.speakers
                .entry(id)
                .or_default()
                .observe(w, self.level_offset);
        } else {
            // Several voices: each one's pitch from its own frames, so a
            // speaker who is only heard in exchanges still gets a baseline.
            for p in a
                .per_speaker
                .iter()
                .filter(|p| p.speech_seconds >= VOICE_MIN_SPEECH_S)
            {
                let b = self.speakers.entry(p.speaker).or_default();
                b.speech_s += p.speech_seconds;
                if let Some(f0) = p.f0_mean {
                    b.f0_mean.observe(f0);
                }
            }
        }
        if let Some(v) = w.video.as_ref().filter(|v| v.coverage >= 0.5) {
            if let Some(faces) = &v.faces {
                self.faces.observe(faces);
            }
            if let Some(motion) = v.motion.filter(|_| whole_frame_fallback(v).is_some()) {
                self.motion.observe(motion);
            }
        }
    }
}
