//! The voice and conversation cues of a window: speech rate, pauses and
//! hesitations, replies and turn-taking, pitch and its range, loudness,
//! voice quality and speech share, each judged against the population norm
//! and the speaker's own baseline (see the parent module).

use super::{
    hz, percent, reply_gaps, stronger, ConversationBaselines, Cue, Judged, WindowFeatures,
    AROUSAL_P_FLOOR, AROUSAL_P_SPAN, PITCH_HIGH_NORM, PITCH_LOW_NORM, RANGE_NORM, RATE_NORM,
    SNR_PROSODY_DB, SNR_VOICE_QUALITY_DB, VOICE_MIN_SPEECH_S,
};

impl ConversationBaselines {
    /// Offers every cue the window's audio supports to `push` (cue, raw
    /// strength, rationale); the caller clamps strengths and drops weak ones.
    pub(super) fn voice_cues(&self, w: &WindowFeatures, push: &mut impl FnMut(Cue, f64, String)) {
        let a = &w.audio;
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

        // Vocal arousal (rules-8): the fitted models of `super::super::arousal`
        // against neutral speech, and each voice's arousal score against its
        // own baseline; the stronger comparison carries the cue, so a voice
        // aroused from its first second reads aroused and a speaker who heats
        // up reads so against themselves. With several voices each is read
        // from its own frames and the most aroused (or least) is named.
        // Read down to the prosody gate (10 dB SNR), not the voice-quality
        // one (25 dB): the five measures are means over a window's voiced
        // frames, and pink noise at 20 dB SNR moves them less than the
        // arousal classes lie apart (`tests/evaluation.rs`, robustness).
        if prosody_ok {
            let absolute = self.arousal.read_voices(a, id, None);
            for toward_high in [true, false] {
                let mut best: Option<(f64, String)> = None;
                for (vid, x) in &absolute {
                    let who = match vid {
                        Some(v) if several => format!("speaker {}: ", v + 1),
                        _ => String::new(),
                    };
                    let word = if toward_high { "high" } else { "low" };
                    // The readings this direction may use: against neutral
                    // speech, and against the voice's own usual measures once
                    // it has been read `ADAPT_AFTER_READINGS` times. Low
                    // arousal is read only against the voice's usual, never
                    // against EmoDB's neutral speech: spontaneous speech is
                    // slower, and far-field and telephone audio duller, than
                    // acted read speech, and the absolute low model called
                    // most real meeting and telephone voices low
                    // (`docs/ANALYZER.md`, "Vocal arousal"). High arousal
                    // keeps its absolute reading, so a voice angry from the
                    // first second to the last reads so throughout.
                    let own = vid
                        .and_then(|v| self.speakers.get(&v))
                        .and_then(|b| b.arousal.shift(self.arousal))
                        .map(|s| self.arousal.read_shifted(x.values, Some(s)));
                    let candidates = [toward_high.then_some(x), own.as_ref()];
                    let mut found: Option<(f64, String)> = None;
                    for r in candidates.into_iter().flatten() {
                        let p = if toward_high { r.high } else { r.low };
                        let s = (p - AROUSAL_P_FLOOR) / AROUSAL_P_SPAN;
                        let reasons = self.arousal.reasons(r, toward_high, 3);
                        if reasons.is_empty() || found.as_ref().is_some_and(|f| f.0 >= s) {
                            continue;
                        }
                        let quoted: Vec<&str> = reasons.iter().map(|(_, t)| t.as_str()).collect();
                        found = Some((
                            s,
                            format!(
                                "{who}vocal arousal {word} ({:.0}% on the model fitted on real speech): {}",
                                p * 100.0,
                                quoted.join(", ")
                            ),
                        ));
                    }
                    if let Some(f) = found.filter(|f| best.as_ref().is_none_or(|b| f.0 > b.0)) {
                        best = Some(f);
                    }
                }
                if let Some((strength, text)) = best {
                    let cue = if toward_high {
                        Cue::HighArousal
                    } else {
                        Cue::LowArousal
                    };
                    push(cue, strength, text);
                }
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
}
