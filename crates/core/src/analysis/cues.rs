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

use super::arousal::{Adaptation, ArousalModel};
use super::baseline::{Baseline, Prior};
use super::face_cues::{is_live, FaceBaselines};
use super::features::{VideoMeasures, WindowFeatures};

mod voice;

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
    /// An aroused voice: the fitted arousal model (`super::arousal`) against
    /// neutral speech, or against the voice's own usual measures.
    HighArousal,
    /// A low-arousal voice (slow, flat, breathy): the fitted model against the
    /// voice's own usual measures only (see `cues::voice`).
    LowArousal,
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
    /// Words of agreement ("exactly", "I agree", an utterance opened by "yeah") (transcript).
    AgreeWords,
    /// Words of disagreement ("I don't think so", "not really", "yeah, but") (transcript).
    DisagreeWords,
    /// Hedges ("maybe", "I guess", "I'm not sure") (transcript).
    HedgeWords,
    /// Requests to clarify ("what do you mean", "sorry?") (transcript).
    ClarifyWords,
    /// Words of doubt ("really?", "are you sure") (transcript).
    SkepticWords,
    /// Fillers the recognizer kept ("um", "uh") (transcript).
    FillerWords,
    /// Questions asked (transcript).
    Questions,
}

impl Cue {
    /// Whether the cue is read from the words of a transcript (which come from the audio).
    pub const fn is_lexical(self) -> bool {
        matches!(
            self,
            Cue::AgreeWords
                | Cue::DisagreeWords
                | Cue::HedgeWords
                | Cue::ClarifyWords
                | Cue::SkepticWords
                | Cue::FillerWords
                | Cue::Questions
        )
    }

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
/// Pitch range (5th-95th percentile) of real speech over a 5 s window,
/// semitones, as this extractor measures it (rules-8): 9.6 +/- 2.7 on EmoDB's
/// neutral speech (10 actors) and 10.0 +/- 4.8 on the AMI meetings' windows of
/// one voice (`cargo run --release -p attune-core --example affect_eval`).
/// rules-7 and before used 7 +/- 2.5 (Traunmüller & Eriksson 1995's 90%
/// ranges of read sentences), which read half of real neutral windows as
/// "wide" and made an angry voice look interested.
pub const RANGE_NORM: Norm = Norm { mean: 9.8, sd: 3.0 };
/// Probability of the arousal models where their cues reach the strength
/// floor (0.5): 0.675, about two to one.
pub const AROUSAL_P_FLOOR: f64 = 0.55;
/// Probability above [`AROUSAL_P_FLOOR`] that makes an arousal cue "clearly
/// present" (strength 1): 0.8.
pub const AROUSAL_P_SPAN: f64 = 0.25;
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
    arousal: Adaptation,
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
            arousal: Adaptation::default(),
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

    fn observe(
        &mut self,
        w: &WindowFeatures,
        level_offset: f64,
        arousal: Option<[f64; super::arousal::MEASURES]>,
    ) {
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
        if let Some(v) = arousal {
            self.arousal.observe(&v);
        }
    }
}

/// Every baseline of one conversation: per speaker, the conversation's
/// speech level (with the offset that re-bases it after a microphone level
/// change), and the picture's motion.
#[derive(Debug, Clone)]
pub struct ConversationBaselines {
    arousal: &'static ArousalModel,
    speakers: BTreeMap<u32, SpeakerBaselines>,
    level: Baseline,
    level_offset: f64,
    motion: Baseline,
    faces: FaceBaselines,
}

impl Default for ConversationBaselines {
    fn default() -> Self {
        ConversationBaselines {
            arousal: ArousalModel::shipped(),
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
    /// Fresh baselines that read vocal arousal with `model` instead of the
    /// committed one (leave-one-speaker-out evaluations).
    pub fn with_arousal(model: &'static ArousalModel) -> Self {
        ConversationBaselines {
            arousal: model,
            ..ConversationBaselines::default()
        }
    }

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
            self.voice_cues(w, &mut push);
            for e in super::lexicon::cues(&w.words) {
                push(e.cue, e.strength, e.text);
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
        let voices = self.arousal.read_voices(a, Self::window_speaker(w), None);
        if let Some(id) = Self::window_speaker(w) {
            let arousal = voices.first().map(|(_, x)| x.values);
            self.speakers
                .entry(id)
                .or_default()
                .observe(w, self.level_offset, arousal);
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
                if let Some((_, x)) = voices.iter().find(|(v, _)| *v == Some(p.speaker)) {
                    b.arousal.observe(&x.values);
                }
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
