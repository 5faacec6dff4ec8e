//! The versioned parameter sets of the rule analyzer: for each model, which
//! signals it reports, which cues count toward each (with weights), and the
//! score thresholds of each probability level. The literature behind each row
//! is in `docs/ANALYZER.md`.

use super::cues::Cue;
use crate::wire::{Model, SignalType};

/// How one signal is scored: `score = Σ weight × cue strength`, reported at
/// the highest level whose threshold the score reaches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalRule {
    /// The signal.
    pub signal: SignalType,
    /// Cues and their weights.
    pub cues: &'static [(Cue, f64)],
    /// The signal's defining evidence: at least one of these cues must be
    /// present for it to fire at all; `None` lets any weighted cue suffice.
    pub requires: Option<&'static [Cue]>,
    /// A second group of defining evidence that must be present too (at
    /// least one of these cues): stress needs raised pitch *and* a fast or
    /// loud voice, since either alone is common in calm speech.
    pub requires_also: Option<&'static [Cue]>,
    /// Score thresholds for `low`, `medium`, `high`.
    pub thresholds: [f64; 3],
    /// The highest level the evidence can support (skepticism has the
    /// weakest literature, so it never reads `high`).
    pub cap_medium: bool,
    /// Cues that contradict the signal: when any is present it does not
    /// fire (a confident voice does not rise, pause or climb in pitch).
    pub vetoes: &'static [Cue],
}

/// Engagement-state scoring: `engaged` when its score reaches the threshold
/// and beats the disengaged score, `disengaged` likewise, else `neutral`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngagementRule {
    /// Cues toward `engaged`.
    pub engaged: &'static [(Cue, f64)],
    /// Evidence against `engaged`, subtracted from its score: a window
    /// whose speaker hesitates or whose replies come late is not a brisk
    /// exchange, however many turns it holds.
    pub against_engaged: &'static [(Cue, f64)],
    /// Cues toward `disengaged`.
    pub disengaged: &'static [(Cue, f64)],
    /// Score a state needs.
    pub threshold: f64,
}

/// One model's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelParams {
    /// Version of this parameter set; reported in logs and docs.
    pub version: &'static str,
    /// Signal rules, in `SignalType` order.
    pub signals: &'static [SignalRule],
    /// Engagement rule.
    pub engagement: EngagementRule,
}

const T: [f64; 3] = [0.8, 1.4, 2.1];

/// Audio-only signal rules shared by both models.
///
/// Hesitation: silent and filled pauses and a slow rate (Clark & Fox Tree
/// 2002); any of the three can carry it. Filled pauses joined in rules-2.
const HESITATION: SignalRule = SignalRule {
    signal: SignalType::Hesitation,
    cues: &[
        (Cue::LongPauses, 1.0),
        (Cue::FilledPauses, 0.8),
        (Cue::SlowRate, 0.7),
        (Cue::LongLatency, 0.3),
        // rules-9: fillers the recognizer kept in the words.
        (Cue::FillerWords, 0.8),
    ],
    requires: Some(&[
        Cue::LongPauses,
        Cue::FilledPauses,
        Cue::SlowRate,
        Cue::FillerWords,
    ]),
    requires_also: None,
    thresholds: T,
    cap_medium: false,
    vetoes: &[],
};
const UNCERTAINTY: SignalRule = SignalRule {
    signal: SignalType::Uncertainty,
    cues: &[
        (Cue::RisingTerminal, 1.0),
        (Cue::LongLatency, 0.6),
        (Cue::LongPauses, 0.3),
        (Cue::SlowRate, 0.3),
        (Cue::HighPitch, 0.2),
        // rules-9: hedges in the words ("maybe", "I guess", "I'm not sure").
        (Cue::HedgeWords, 1.0),
    ],
    requires: Some(&[Cue::RisingTerminal, Cue::HedgeWords]),
    requires_also: None,
    thresholds: T,
    cap_medium: false,
    vetoes: &[],
};
const CONFIDENCE: SignalRule = SignalRule {
    signal: SignalType::Confidence,
    cues: &[
        (Cue::Fluent, 0.7),
        (Cue::FallingTerminal, 0.7),
        (Cue::Loud, 0.5),
        (Cue::FastRate, 0.3),
        (Cue::WideRange, 0.2),
    ],
    requires: Some(&[Cue::Fluent, Cue::FallingTerminal]),
    requires_also: None,
    thresholds: [1.0, 1.5, 2.1],
    cap_medium: false,
    // Confident speakers speak lower and end falling, without fillers or
    // long pauses (Kimble & Seidel 1991; Jiang & Pell 2017): raised pitch is
    // arousal (stress), rising ends and pauses are uncertainty.
    vetoes: &[
        Cue::HighPitch,
        Cue::RisingTerminal,
        Cue::LongPauses,
        Cue::FilledPauses,
        Cue::HedgeWords,
    ],
};
/// Frustration: rules-8 reads it from an aroused voice (the fitted arousal
/// model) as well as from a loud one. The voice carries arousal well and
/// valence poorly (EmoDB, leave one speaker out: joy and anger are told apart
/// in 82% of windows at best), so arousal alone reaches `low` at most
/// (1.5 x 0.9 < 2.0), and only from p = 0.86 (strength 1.22): on EmoDB's
/// neutral speech, left out of the fit, no window passes; `medium` needs a
/// clearly louder, higher or strained voice too (a margin: a reading near
/// p = 0.8 moves with the gain on synthetic voices), and a smile bars it.
const FRUSTRATION: SignalRule = SignalRule {
    signal: SignalType::Frustration,
    cues: &[
        (Cue::HighArousal, 0.9),
        (Cue::Loud, 0.7),
        (Cue::HighPitch, 0.5),
        (Cue::VoiceStrain, 0.4),
        (Cue::Overlap, 0.3),
    ],
    requires: Some(&[Cue::HighArousal, Cue::Loud]),
    requires_also: None,
    thresholds: [1.1, 2.0, 2.6],
    cap_medium: false,
    vetoes: &[Cue::Smile],
};
const INTEREST: SignalRule = SignalRule {
    signal: SignalType::Interest,
    // rules-4: interest shows in keeping the exchange going (prompt replies,
    // backchannels) and in an animated voice (Schuller et al. 2009 found
    // the level of interest carried by arousal and by the listener's
    // backchannels); hesitation bars it like it bars engagement.
    cues: &[
        (Cue::WideRange, 0.6),
        (Cue::HighPitch, 0.4),
        (Cue::Loud, 0.3),
        (Cue::FastRate, 0.3),
        (Cue::Backchannels, 0.6),
        (Cue::ShortLatency, 0.5),
        (Cue::LivelyExchange, 0.3),
        (Cue::Movement, 0.4),
        // rules-6 (inter-2): the face shows interest too: a smile, raised brows (AU12,
        // AU1+2), a face toward the camera (attention; Kleinke 1986).
        (Cue::Smile, 0.6),
        (Cue::BrowRaise, 0.5),
        (Cue::GazeAtCamera, 0.3),
        // rules-9: asking questions (support only: a question alone is not interest).
        (Cue::Questions, 0.4),
    ],
    // rules-8: a wide pitch range alone no longer defines it: on real
    // speech it is arousal (angry voices read interested in half of their
    // windows); interest needs a listener's cue or a face.
    requires: Some(&[
        Cue::Backchannels,
        Cue::ShortLatency,
        Cue::Smile,
        Cue::BrowRaise,
    ]),
    requires_also: None,
    thresholds: T,
    cap_medium: false,
    vetoes: &[Cue::LongPauses, Cue::FilledPauses, Cue::LongLatency],
};
const AGREEMENT: SignalRule = SignalRule {
    signal: SignalType::Agreement,
    cues: &[
        (Cue::Backchannels, 1.0),
        (Cue::ShortLatency, 0.6),
        (Cue::Nods, 1.0),
        (Cue::FallingTerminal, 0.2),
        // rules-9: words of agreement ("exactly", "I agree", "yeah."): prosody alone cannot
        // tell agreement from disagreement; the words can.
        (Cue::AgreeWords, 1.2),
    ],
    requires: Some(&[Cue::Backchannels, Cue::Nods, Cue::AgreeWords]),
    requires_also: None,
    thresholds: T,
    cap_medium: false,
    // rules-9: words of disagreement in the window bar it ("yeah, but no").
    vetoes: &[Cue::DisagreeWords],
};

/// `inter-2-audio`: the audible subset only. `rules-6`: the rules of `rules-5` read on speech
/// from Silero VAD and speaker turns from the voice networks (`attune-voice`). `rules-7`: vocal
/// arousal from the models fitted on real speech (`super::arousal`) carries frustration and the
/// engagement state. `rules-8`: words from the transcript (`super::lexicon`) carry agreement,
/// uncertainty and hesitation, and support interest. `rules-9`: only words the recognizer does
/// not doubt (`super::lexicon::MIN_LOGPROB`). `rules-10`: vocal arousal reads the level-free
/// spectral tilt 500-1500 Hz, so a microphone's gain no longer moves it. `rules-11`: streams
/// find one voice in two speakers (`attune_voice::OnlineParams::merge_similarity`). `rules-12`:
/// a token alone ("Yeah.") is a backchannel, not agreement; formulas of acceptance ("good idea",
/// "works for me") and of rejection ("you are wrong", "that's not the point") are read.
/// `rules-13`: vocal arousal reads the alpha ratio inside the telephone band (1-3 kHz over
/// 400-1000 Hz), so a telephone line no longer raises it.
pub const INTER_2_AUDIO: ModelParams = ModelParams {
    version: "inter-2-audio/rules-13",
    signals: &[
        AGREEMENT,
        CONFIDENCE,
        FRUSTRATION,
        HESITATION,
        INTEREST,
        UNCERTAINTY,
    ],
    engagement: ENGAGEMENT,
};

/// `inter-2`: audio and video, all 13 signals. `rules-7`: the rules of `rules-6` read on speech
/// from Silero VAD and speaker turns from the voice networks (`attune-voice`). `rules-8`: vocal
/// arousal from the models fitted on real speech (`super::arousal`) carries stress, frustration,
/// tension's weight, disengagement and the engagement state. `rules-9`: words from the
/// transcript (`super::lexicon`) carry agreement, disagreement, confusion, skepticism,
/// uncertainty and hesitation, and support interest. `rules-10`: only words the recognizer does
/// not doubt (`super::lexicon::MIN_LOGPROB`). `rules-11`: vocal arousal reads the level-free
/// spectral tilt 500-1500 Hz, so a microphone's gain no longer moves it. `rules-12`: streams
/// find one voice in two speakers (`attune_voice::OnlineParams::merge_similarity`). `rules-13`:
/// a token alone ("Yeah.") is a backchannel, not agreement; formulas of acceptance ("good idea",
/// "works for me") and of rejection ("you are wrong", "that's not the point") are read.
/// `rules-14`: vocal arousal reads the alpha ratio inside the telephone band (1-3 kHz over
/// 400-1000 Hz), so a telephone line no longer raises it.
pub const INTER_2: ModelParams = ModelParams {
    version: "inter-2/rules-14",
    signals: &[
        AGREEMENT,
        CONFIDENCE,
        SignalRule {
            signal: SignalType::Confusion,
            cues: &[
                (Cue::LongLatency, 0.8),
                (Cue::RisingTerminal, 0.6),
                (Cue::LongPauses, 0.3),
                // rules-9: requests to clarify ("what do you mean?").
                (Cue::ClarifyWords, 1.2),
                // rules-6: lowered brows (AU4), the facial action most tied to confusion
                // (D'Mello & Graesser 2010; Grafsgaard et al. 2013), can carry it alone.
                (Cue::BrowLower, 1.1),
            ],
            requires: Some(&[Cue::LongLatency, Cue::BrowLower, Cue::ClarifyWords]),
            requires_also: None,
            thresholds: [1.1, 1.6, 2.2],
            cap_medium: false,
            vetoes: &[],
        },
        SignalRule {
            signal: SignalType::Disagreement,
            cues: &[
                (Cue::Shakes, 1.0),
                (Cue::LongLatency, 0.8),
                (Cue::Overlap, 0.6),
                // rules-9: words of disagreement ("I don't think so", "yeah, but").
                (Cue::DisagreeWords, 1.2),
            ],
            requires: Some(&[Cue::Shakes, Cue::LongLatency, Cue::DisagreeWords]),
            requires_also: None,
            thresholds: [1.0, 1.5, 2.1],
            cap_medium: false,
            vetoes: &[],
        },
        SignalRule {
            signal: SignalType::Disengagement,
            cues: &[
                // rules-8: a low-arousal voice (slow, breathy, flat: the fitted
                // model) carries it alone from p = 0.8.
                (Cue::LowArousal, 1.0),
                (Cue::LittleSpeech, 0.9),
                (Cue::LongSilence, 0.9),
                (Cue::NarrowRange, 0.5),
                (Cue::Quiet, 0.5),
                (Cue::LongPauses, 0.2),
                // rules-6: the face: turned away, eyes closed, or gone from the picture.
                // (rules-4's whole-frame stillness is gone: a frozen or empty picture is not a
                // still person.)
                (Cue::FaceAway, 1.0),
                (Cue::EyesClosed, 1.0),
                (Cue::FaceAbsent, 1.0),
            ],
            requires: Some(&[
                Cue::LowArousal,
                Cue::LittleSpeech,
                Cue::LongSilence,
                Cue::NarrowRange,
                Cue::Quiet,
                Cue::FaceAway,
                Cue::EyesClosed,
                Cue::FaceAbsent,
            ]),
            requires_also: None,
            thresholds: [1.0, 1.5, 2.1],
            cap_medium: false,
            vetoes: &[],
        },
        SignalRule {
            signal: SignalType::Engagement,
            // rules-4: the conversational dynamics of the engaged state:
            // prompt replies or backchannels define it as well as a
            // balanced exchange, and hesitation or a late reply bars it.
            cues: &[
                (Cue::LivelyExchange, 1.0),
                (Cue::ShortLatency, 0.7),
                (Cue::Backchannels, 0.4),
                (Cue::Movement, 0.4),
                (Cue::WideRange, 0.3),
                (Cue::HighPitch, 0.2),
                (Cue::Fluent, 0.2),
                (Cue::HighArousal, 0.4),
            ],
            requires: Some(&[Cue::LivelyExchange, Cue::ShortLatency, Cue::Backchannels]),
            requires_also: None,
            thresholds: T,
            cap_medium: false,
            vetoes: &[Cue::LongPauses, Cue::FilledPauses, Cue::LongLatency],
        },
        FRUSTRATION,
        HESITATION,
        INTEREST,
        SignalRule {
            signal: SignalType::Skepticism,
            cues: &[
                (Cue::WideRange, 0.5),
                (Cue::RisingTerminal, 0.6),
                (Cue::LongLatency, 0.3),
                // rules-9: words of doubt ("really?", "are you sure").
                (Cue::SkepticWords, 1.2),
            ],
            requires: Some(&[Cue::RisingTerminal, Cue::SkepticWords]),
            requires_also: None,
            thresholds: [1.2, 1.8, f64::INFINITY],
            cap_medium: true,
            vetoes: &[],
        },
        SignalRule {
            signal: SignalType::Stress,
            cues: &[
                (Cue::HighArousal, 1.0),
                (Cue::HighPitch, 0.6),
                (Cue::Loud, 0.4),
                (Cue::VoiceStrain, 0.4),
                (Cue::FastRate, 0.3),
                (Cue::WideRange, 0.1),
            ],
            // rules-4: raised pitch together with a fast or loud voice (the
            // arousal pattern of Scherer 2003 and Hansen & Patil 2007); each
            // alone is everyday variation, so the joint pattern fires from
            // a lower score than rules-3's either-one rule. Low threshold
            // 0.7 (0.8 before the nucleus counter stopped over-counting,
            // which lowered every FastRate: set on the labelled corpus).
            // rules-8: or an aroused voice (the fitted model), which alone
            // reaches `low` at most (1.5 < 2.2), and only from p = 0.875
            // (strength 1.3; with a fast rate from 0.8): the
            // voice does not tell stress from elation, and a smile bars it.
            // A fast rate no longer stands in for the second group: fast
            // read speech is common (EmoDB's neutral actors speak at 5.7
            // syll/s), and the arousal model already weighs the rate.
            requires: Some(&[Cue::HighArousal, Cue::HighPitch]),
            requires_also: Some(&[Cue::HighArousal, Cue::Loud, Cue::VoiceStrain]),
            thresholds: [1.3, 2.2, 2.8],
            cap_medium: false,
            vetoes: &[Cue::Smile],
        },
        SignalRule {
            signal: SignalType::Tension,
            cues: &[
                (Cue::Overlap, 1.0),
                (Cue::HighArousal, 0.6),
                (Cue::Loud, 0.4),
                (Cue::ShortLatency, 0.2),
                (Cue::VoiceStrain, 0.2),
            ],
            requires: Some(&[Cue::Overlap]),
            requires_also: None,
            thresholds: T,
            cap_medium: false,
            vetoes: &[],
        },
        UNCERTAINTY,
    ],
    engagement: ENGAGEMENT,
};

const ENGAGEMENT: EngagementRule = EngagementRule {
    // rules-8 (rules-7 audio): vocal arousal, from the models fitted on real
    // speech, reads `engaged` alone from p = 0.8 (strength 1) and its low end
    // `disengaged` (neutral EmoDB speech: 2 and 3 of 37 windows pass 0.8).
    engaged: &[
        (Cue::HighArousal, 0.8),
        (Cue::LivelyExchange, 1.0),
        (Cue::ShortLatency, 0.7),
        (Cue::Backchannels, 0.5),
        (Cue::WideRange, 0.4),
        (Cue::FastRate, 0.3),
        (Cue::HighPitch, 0.3),
        (Cue::Loud, 0.3),
        (Cue::Fluent, 0.3),
        (Cue::Movement, 0.4),
        (Cue::Nods, 0.4),
        (Cue::Smile, 0.3),
        (Cue::GazeAtCamera, 0.3),
    ],
    // rules-4: hesitation and late replies count against a brisk exchange.
    against_engaged: &[
        (Cue::LowArousal, 0.5),
        (Cue::LongPauses, 0.4),
        (Cue::FilledPauses, 0.4),
        (Cue::LongLatency, 0.5),
    ],
    // rules-4: long pauses and a slow rate left this list: they are
    // hesitation (a speaker still holding the floor), not withdrawal.
    disengaged: &[
        (Cue::LowArousal, 0.8),
        (Cue::LittleSpeech, 1.0),
        (Cue::LongSilence, 0.8),
        (Cue::NarrowRange, 0.5),
        (Cue::Quiet, 0.5),
        (Cue::FaceAway, 0.8),
        (Cue::EyesClosed, 0.8),
        (Cue::FaceAbsent, 0.8),
    ],
    threshold: 0.8,
};

impl ModelParams {
    /// The parameters of a model (`inter-2-deep` is never analyzed; it maps
    /// to `inter-2`'s set only so the function is total).
    pub fn for_model(model: Model) -> &'static ModelParams {
        match model {
            Model::Inter2Audio => &INTER_2_AUDIO,
            Model::Inter2 | Model::Inter2Deep => &INTER_2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inter_2_covers_all_13_signals_once_in_order() {
        let signals: Vec<SignalType> = INTER_2.signals.iter().map(|r| r.signal).collect();
        assert_eq!(signals, SignalType::ALL);
    }

    #[test]
    fn inter_2_audio_reports_only_the_audible_subset() {
        let signals: Vec<SignalType> = INTER_2_AUDIO.signals.iter().map(|r| r.signal).collect();
        use SignalType::*;
        assert_eq!(
            signals,
            [
                Agreement,
                Confidence,
                Frustration,
                Hesitation,
                Interest,
                Uncertainty
            ]
        );
    }

    #[test]
    fn thresholds_ascend_and_required_cues_are_weighted() {
        for rule in INTER_2.signals.iter().chain(INTER_2_AUDIO.signals) {
            let [low, medium, high] = rule.thresholds;
            assert!(
                low > 0.0 && low < medium && medium < high,
                "{:?}",
                rule.signal
            );
            for cue in rule.requires.unwrap_or(&[]) {
                assert!(
                    rule.cues.iter().any(|(c, _)| c == cue),
                    "{:?} requires unweighted {cue:?}",
                    rule.signal
                );
            }
        }
    }
}
