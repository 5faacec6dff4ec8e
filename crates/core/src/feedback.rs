//! The v1 upload's `feedback` object: one piece of advice tied to the
//! signal that most affected the dimensions the caller cares about, or the
//! reason there is none.
//!
//! Which dimensions are "active":
//! - when `conversation_context` is given it is the sole source (the
//!   interface's rule): the dimensions it speaks of, found by the keywords in
//!   [`CONTEXT_KEYWORDS`] (e.g. "explain" -> clarity, "trust" -> rapport);
//! - otherwise the `goal_dimensions[]` the caller named.
//!
//! The primary signal is the detected signal with the largest effect on the
//! active dimensions, by the CQI weights of `attune-cqi` times its
//! probability weight times the seconds it spanned. A signal whose effect is
//! negative gets corrective advice; when nothing detected hurts the active
//! dimensions, a positive one gets advice to keep doing it. The message
//! quotes where the signal occurred and its evidence.

use crate::wire::{Dimension, Feedback, Signal, SignalType};
use attune_cqi::Cue;

/// Keywords that tie a free-text context to a dimension (matched on word
/// starts, case-insensitively).
pub const CONTEXT_KEYWORDS: &[(Dimension, &[&str])] = &[
    (
        Dimension::Clarity,
        &[
            "clar",
            "clear",
            "explain",
            "structur",
            "concise",
            "understand",
            "pitch",
            "present",
        ],
    ),
    (
        Dimension::Authority,
        &[
            "authorit", "credib", "confiden", "lead", "persua", "negotiat", "convinc", "assert",
            "expert",
        ],
    ),
    (
        Dimension::Energy,
        &[
            "energ",
            "enthusias",
            "engag",
            "presence",
            "passion",
            "dynamic",
            "motivat",
        ],
    ),
    (
        Dimension::Rapport,
        &[
            "rapport",
            "trust",
            "empath",
            "relationship",
            "listen",
            "support",
            "customer",
            "patient",
            "warm",
            "safe",
        ],
    ),
    (
        Dimension::Learning,
        &[
            "learn",
            "teach",
            "tutor",
            "coach",
            "explor",
            "question",
            "curio",
            "discover",
            "interview",
            "student",
        ],
    ),
];

/// The dimensions a free-text context speaks of, in interface order.
pub fn context_dimensions(context: &str) -> Vec<Dimension> {
    let lower = context.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    CONTEXT_KEYWORDS
        .iter()
        .filter(|(_, keys)| words.iter().any(|w| keys.iter().any(|k| w.starts_with(k))))
        .map(|(d, _)| *d)
        .collect()
}

/// The v1 feedback of a request that asked for none (no goal dimension and
/// no conversation context): `no_feedback` with the reason; `None` when the
/// request asked, and [`feedback`] (or the deployment's feedback backend)
/// answers.
pub fn not_requested(goals: &[Dimension], context: Option<&str>) -> Option<Feedback> {
    (goals.is_empty() && context.is_none()).then(|| Feedback::NoFeedback {
        reason: "No goal dimensions or conversation context were given.".to_owned(),
    })
}

/// Builds the feedback object from the whole-file signals.
///
/// `goals` are the caller's goal dimensions; `context` the conversation
/// context (when given, the sole source). The caller decides whether
/// feedback was asked for at all.
pub fn feedback(signals: &[Signal], goals: &[Dimension], context: Option<&str>) -> Feedback {
    let active: Vec<Dimension> = match context {
        Some(text) => context_dimensions(text),
        None => {
            let mut g = goals.to_vec();
            g.sort();
            g.dedup();
            g
        }
    };
    if active.is_empty() {
        return Feedback::NoFeedback {
            reason: match context {
                Some(_) => {
                    "the conversation context names no quality dimension this service coaches \
                            (clarity, authority, energy, rapport, learning)"
                        .into()
                }
                None => "no goal dimension was given".into(),
            },
        };
    }
    // Effect of each detected signal type on the active dimensions.
    let mut effects: Vec<(SignalType, f64, &Signal)> = Vec::new();
    for signal in signals {
        let weight: f64 = active
            .iter()
            .map(|d| Cue::Signal(signal.signal_type).weight(*d))
            .sum();
        let p = signal.probability.map(|p| p.weight()).unwrap_or(2.0 / 3.0);
        let effect = weight * p * (signal.end - signal.start).max(0.0);
        match effects
            .iter_mut()
            .find(|(t, _, _)| *t == signal.signal_type)
        {
            Some(entry) => {
                entry.1 += effect;
            }
            None => effects.push((signal.signal_type, effect, signal)),
        }
    }
    let worst = effects
        .iter()
        .filter(|(_, e, _)| *e < 0.0)
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let best = effects
        .iter()
        .filter(|(_, e, _)| *e > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let names: Vec<&str> = active.iter().map(|d| d.as_str()).collect();
    let Some(&(primary, effect, example)) = worst.or(best) else {
        return Feedback::NoFeedback {
            reason: format!("no detected signal bears on {}", names.join(" or ")),
        };
    };
    let touched: Vec<Dimension> = active
        .iter()
        .copied()
        .filter(|d| Cue::Signal(primary).weight(*d) != 0.0)
        .collect();
    let evidence = example
        .rationale
        .as_deref()
        .map(|r| format!(" ({})", r.trim_end_matches('.')))
        .unwrap_or_default();
    let at = format!("{:.0}-{:.0} s", example.start, example.end);
    let message = if effect < 0.0 {
        format!(
            "{} at {at}{evidence}. {}",
            headline(primary),
            advice(primary)
        )
    } else {
        format!("{} at {at}{evidence}. {}", headline(primary), keep(primary))
    };
    Feedback::Feedback {
        message,
        active_dimensions: touched,
        primary_signal: primary,
    }
}

fn headline(signal: SignalType) -> String {
    let name = signal.as_str();
    let mut chars = name.chars();
    let first = chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>())
        .unwrap_or_default();
    format!("{first}{} was detected", chars.as_str())
}

/// Corrective advice for a signal that lowered the active dimensions.
fn advice(signal: SignalType) -> &'static str {
    match signal {
        SignalType::Hesitation => "Prepare the key points in advance and replace filled pauses with a short deliberate silence.",
        SignalType::Uncertainty => "State conclusions as statements with a falling ending, and answer before qualifying.",
        SignalType::Confusion => "Check understanding sooner: summarise in one sentence and ask what is unclear.",
        SignalType::Disagreement => "Acknowledge the other view explicitly before restating yours, and ask what would resolve it.",
        SignalType::Disengagement => "Re-engage with a direct question and shorter turns; invite the other person to speak.",
        SignalType::Frustration => "Slow down, lower the volume, and name the problem before proposing the next step.",
        SignalType::Skepticism => "Back the claim with one concrete example or figure before moving on.",
        SignalType::Stress => "Slow the pace and lower the pitch; pause at the end of each point.",
        SignalType::Tension => "Let each turn finish before replying and leave a brief pause between turns.",
        SignalType::Agreement
        | SignalType::Confidence
        | SignalType::Engagement
        | SignalType::Interest => "Keep the delivery that produced it.",
    }
}

/// Reinforcing advice for a signal that raised the active dimensions.
fn keep(signal: SignalType) -> &'static str {
    match signal {
        SignalType::Confidence => {
            "Keep the steady pace and falling sentence endings; they read as assured."
        }
        SignalType::Engagement => "Keep the turns short and balanced; the exchange stayed lively.",
        SignalType::Interest => "Keep the varied intonation; it carries interest in the topic.",
        SignalType::Agreement => {
            "Build on the agreement: confirm it and move to the next decision."
        }
        _ => "Keep doing what produced it.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_goals_or_context_asked_for_no_feedback() {
        assert!(matches!(
            not_requested(&[], None),
            Some(Feedback::NoFeedback { ref reason }) if reason.contains("No goal dimensions")
        ));
        assert_eq!(not_requested(&[Dimension::Rapport], None), None);
        assert_eq!(not_requested(&[], Some("a sales call")), None);
    }
    use crate::wire::Probability;

    fn signal(signal_type: SignalType, start: f64, probability: Probability) -> Signal {
        Signal {
            signal_type,
            start,
            end: start + 10.0,
            probability: Some(probability),
            rationale: Some(format!("{signal_type} evidence")),
            modality: None,
        }
    }

    #[test]
    fn context_keywords_find_dimensions() {
        assert_eq!(
            context_dimensions("Sales call: build trust and explain pricing clearly"),
            [Dimension::Clarity, Dimension::Rapport]
        );
        assert!(context_dimensions("weekly sync").is_empty());
    }

    #[test]
    fn the_signal_that_hurt_the_goals_most_is_primary() {
        let signals = [
            signal(SignalType::Interest, 0.0, Probability::High),
            signal(SignalType::Hesitation, 10.0, Probability::High),
            signal(SignalType::Uncertainty, 20.0, Probability::Low),
        ];
        let Feedback::Feedback {
            message,
            active_dimensions,
            primary_signal,
        } = feedback(&signals, &[Dimension::Clarity], None)
        else {
            panic!("feedback expected")
        };
        assert_eq!(primary_signal, SignalType::Hesitation);
        assert_eq!(active_dimensions, [Dimension::Clarity]);
        assert!(
            message.starts_with("Hesitation was detected at 10-20 s (hesitation evidence)."),
            "{message}"
        );
    }

    #[test]
    fn context_is_the_sole_source_when_given() {
        let signals = [signal(SignalType::Hesitation, 0.0, Probability::High)];
        // The goal says clarity (hesitation hurts it), but the context speaks
        // of rapport only, which hesitation does not touch.
        let result = feedback(
            &signals,
            &[Dimension::Clarity],
            Some("be warm and build trust"),
        );
        assert!(
            matches!(result, Feedback::NoFeedback { ref reason } if reason.contains("rapport")),
            "{result:?}"
        );
        let none = feedback(&signals, &[Dimension::Clarity], Some("weekly sync"));
        assert!(matches!(none, Feedback::NoFeedback { .. }));
    }

    #[test]
    fn positive_signals_get_reinforcing_advice_when_nothing_hurt() {
        let signals = [signal(SignalType::Confidence, 0.0, Probability::Medium)];
        let Feedback::Feedback {
            message,
            primary_signal,
            ..
        } = feedback(&signals, &[Dimension::Authority], None)
        else {
            panic!()
        };
        assert_eq!(primary_signal, SignalType::Confidence);
        assert!(message.contains("Keep the steady pace"), "{message}");
        assert!(matches!(
            feedback(&[], &[Dimension::Energy], None),
            Feedback::NoFeedback { .. }
        ));
    }
}
