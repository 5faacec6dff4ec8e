//! Cues: single pieces of measured evidence in one window, each with a
//! strength in `0..=1.5` and the sentence that quotes it.
//!
//! A cue is judged either against an absolute norm where the literature
//! gives one (a silent pause of 0.5 s or more is a hesitation whoever speaks;
//! a reply after 0.6 s or more is a dispreferred response) or against the
//! speaker's own running [`Baseline`] where habits differ between people
//! (pitch, loudness, voice quality, rate, motion). Strength 1 means "clearly
//! present" (two spreads from the baseline, or the absolute norm exceeded by
//! its own width); 1.5 caps outliers.

use super::baseline::{Baseline, Prior};
use super::features::WindowFeatures;

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
    /// More motion than the baseline (video).
    Movement,
    /// Almost no motion (video).
    Stillness,
    /// Periodic vertical head motion (video).
    Nods,
    /// Periodic horizontal head motion (video).
    Shakes,
}

impl Cue {
    /// Whether the cue is read from the picture (else from the audio).
    pub const fn is_visual(self) -> bool {
        matches!(
            self,
            Cue::Movement | Cue::Stillness | Cue::Nods | Cue::Shakes
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

fn strength(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, MAX_STRENGTH)
    } else {
        0.0
    }
}

/// The running baselines of one speaker (one per measurement that is judged
/// relatively), with their population priors.
#[derive(Debug, Clone)]
pub struct SpeakerBaselines {
    rate: Baseline,
    f0_mean: Baseline,
    f0_range: Baseline,
    loudness: Baseline,
    jitter: Baseline,
    shimmer: Baseline,
    hnr: Baseline,
    motion: Baseline,
}

impl Default for SpeakerBaselines {
    fn default() -> Self {
        SpeakerBaselines {
            // Articulation rate of conversational English: about 4-5 syllables
            // per second (Jacewicz et al. 2009); worth three windows.
            rate: Baseline::new(Prior {
                mean: 4.5,
                sd: 1.0,
                weight: 3.0,
                sd_floor: 0.4,
            }),
            // Mean pitch depends on the speaker: no prior.
            f0_mean: Baseline::new(Prior {
                mean: 0.0,
                sd: 2.0,
                weight: 0.0,
                sd_floor: 1.0,
            }),
            // Pitch range of read and conversational speech, 5th-95th
            // percentile: about 6-10 semitones; worth two windows.
            f0_range: Baseline::new(Prior {
                mean: 7.0,
                sd: 2.5,
                weight: 2.0,
                sd_floor: 1.0,
            }),
            // Loudness depends on the microphone: no prior; 2 dB floor (a
            // just-noticeable change in level is about 1 dB).
            loudness: Baseline::new(Prior {
                mean: 0.0,
                sd: 3.0,
                weight: 0.0,
                sd_floor: 2.0,
            }),
            jitter: Baseline::new(Prior {
                mean: 0.0,
                sd: 0.5,
                weight: 0.0,
                sd_floor: 0.2,
            }),
            shimmer: Baseline::new(Prior {
                mean: 0.0,
                sd: 0.3,
                weight: 0.0,
                sd_floor: 0.1,
            }),
            hnr: Baseline::new(Prior {
                mean: 0.0,
                sd: 2.0,
                weight: 0.0,
                sd_floor: 1.0,
            }),
            motion: Baseline::new(Prior {
                mean: 0.0,
                sd: 2.0,
                weight: 0.0,
                sd_floor: 0.5,
            }),
        }
    }
}

/// `x% below/above this speaker's baseline (b)` for a ratio-scale measure.
fn relative(value: f64, baseline: Option<f64>, unit: &str) -> String {
    match baseline {
        Some(b) if b.abs() > f64::EPSILON => {
            let pct = ((value - b) / b * 100.0).round();
            let dir = if pct < 0.0 { "below" } else { "above" };
            format!(
                "{}% {dir} this speaker's baseline of {b:.1}{unit}",
                pct.abs()
            )
        }
        _ => "no baseline yet".to_owned(),
    }
}

impl SpeakerBaselines {
    /// The cues of one window against these baselines (read before the
    /// window is folded in, so a window never explains itself).
    pub fn cues(&self, w: &WindowFeatures) -> Vec<Evidence> {
        let mut found = Vec::new();
        let a = &w.audio;
        let mut push = |cue: Cue, s: f64, text: String| {
            let s = strength(s);
            if s > 0.0 {
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
                    push(
                        Cue::Fluent,
                        1.0 - a.pause_seconds / 0.5,
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

            if let Some(rate) = a.speech_rate.filter(|_| spoke) {
                if let Some(z) = self.rate.z(rate) {
                    let text = format!(
                        "speech rate {rate:.1} syll/s, {}",
                        relative(rate, self.rate.mean(), " syll/s")
                    );
                    if z < 0.0 {
                        push(Cue::SlowRate, -z / 2.0, text);
                    } else {
                        push(Cue::FastRate, z / 2.0, text);
                    }
                }
            }

            if let Some(f0) = a.f0_mean {
                if let (Some(z), Some(mean)) = (self.f0_mean.z(f0), self.f0_mean.mean()) {
                    let hz = 27.5 * 2f64.powf(f0 / 12.0);
                    push(
                        Cue::HighPitch,
                        z / 2.0,
                        format!(
                            "mean pitch {hz:.0} Hz, {:.1} semitones above this speaker's baseline",
                            f0 - mean
                        ),
                    );
                }
            }

            if let Some(range) = a.f0_range {
                if let Some(z) = self.f0_range.z(range) {
                    let text = format!(
                        "pitch range {range:.1} semitones, {}",
                        relative(range, self.f0_range.mean(), " st")
                    );
                    if z > 0.0 {
                        push(Cue::WideRange, z / 2.0, text);
                    } else {
                        push(Cue::NarrowRange, -z / 2.0, text);
                    }
                }
            }

            if let Some(loud) = a.loudness_mean {
                if let (Some(z), Some(mean)) = (self.loudness.z(loud), self.loudness.mean()) {
                    let text = format!(
                        "loudness {:+.1} dB against this speaker's baseline",
                        loud - mean
                    );
                    if z > 0.0 {
                        push(Cue::Loud, z / 2.0, text);
                    } else {
                        push(Cue::Quiet, -z / 2.0, text);
                    }
                }
            }

            // Voice strain: the mean of the three voice-quality z-scores that
            // point to a less periodic voice (Giddens et al. 2013).
            let strain: Vec<(f64, String)> = [
                a.jitter
                    .and_then(|j| self.jitter.z(j).map(|z| (z, format!("jitter {j:.2}%")))),
                a.shimmer_db
                    .and_then(|s| self.shimmer.z(s).map(|z| (z, format!("shimmer {s:.2} dB")))),
                a.hnr
                    .and_then(|h| self.hnr.z(h).map(|z| (-z, format!("HNR {h:.1} dB")))),
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
                    format!(
                        "{}, less periodic than this speaker's baseline",
                        parts.join(", ")
                    ),
                );
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

            if let Some(latency) = a.response_latency {
                if latency >= 0.6 {
                    push(
                        Cue::LongLatency,
                        (latency - 0.4) / 0.6,
                        format!("replies came after {latency:.1} s of silence"),
                    );
                } else if latency <= 0.3 {
                    push(
                        Cue::ShortLatency,
                        (0.5 - latency) / 0.3,
                        format!("replies came within {:.0} ms", latency * 1000.0),
                    );
                }
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
            if let Some(motion) = v.motion {
                if let Some(z) = self.motion.z(motion) {
                    push(
                        Cue::Movement,
                        z / 2.0,
                        format!("motion {}", relative(motion, self.motion.mean(), "")),
                    );
                }
            }
            if let Some(still) = v.stillness {
                push(
                    Cue::Stillness,
                    (still - 0.6) / 0.3,
                    format!("no visible movement in {:.0}% of frames", still * 100.0),
                );
            }
            if let Some(nod) = v.nod {
                push(
                    Cue::Nods,
                    (nod - 0.3) / 0.4,
                    format!("periodic vertical head motion (nod score {nod:.2})"),
                );
            }
            if let Some(shake) = v.shake {
                push(
                    Cue::Shakes,
                    (shake - 0.3) / 0.4,
                    format!("periodic horizontal head motion (shake score {shake:.2})"),
                );
            }
        }
        found
    }

    /// Folds a window into the baselines (after its cues were read).
    pub fn observe(&mut self, w: &WindowFeatures) {
        let a = &w.audio;
        if a.speech_seconds >= 0.5 {
            if let Some(v) = a.speech_rate {
                self.rate.observe(v);
            }
        }
        for (baseline, value) in [
            (&mut self.f0_mean, a.f0_mean),
            (&mut self.f0_range, a.f0_range),
            (&mut self.loudness, a.loudness_mean),
            (&mut self.jitter, a.jitter),
            (&mut self.shimmer, a.shimmer_db),
            (&mut self.hnr, a.hnr),
        ] {
            if let Some(v) = value {
                baseline.observe(v);
            }
        }
        if let Some(motion) = w
            .video
            .as_ref()
            .filter(|v| v.coverage >= 0.5)
            .and_then(|v| v.motion)
        {
            self.motion.observe(motion);
        }
    }
}
