//! The default recommender: fixed rules over the period's signals, the
//! transcript and the instructions' keywords, written out as one sentence
//! that names its evidence.
//!
//! Every output is a function of the input alone: no randomness, no clock,
//! no I/O, so the same input always gives the same text.
//!
//! # Reading the input
//!
//! - **Nothing at all** is said when the instructions are blank, the period
//!   has no signal, or the transcript is empty (the interface's
//!   preconditions, checked again so the recommender is safe to call alone).
//! - **Signals** are grouped by type. A type's strength is its highest
//!   probability in the period (a missing probability counts as low), its
//!   quoted evidence the first clause (up to `;`) of the rationale of the
//!   latest window at that probability. Types fall into five groups:
//!   distress (stress, frustration, tension), resistance (disagreement,
//!   skepticism), doubt (confusion, uncertainty, hesitation), withdrawal
//!   (disengagement) and positive (agreement, confidence, engagement,
//!   interest). The strongest type leads its group: highest probability,
//!   then the group order above, then the most windows, then the
//!   interface's type order.
//! - **The transcript** is measured over the last `max(period, 10 s)` of the
//!   period, or over as much at the transcript's own end when it has no
//!   speech in the period (a client on another clock). Speakers are named
//!   `Speaker n` with `n` the zero-based index plus one. From it:
//!   - *pending question*: the last segment in spoken order is a question
//!     (a question mark in Latin, Spanish, CJK, Arabic, Greek or Armenian
//!     script, or an English opener such as "what", "can you") and the
//!     transcript has two or more speakers;
//!   - *monologue*: the last speaker's unbroken turn (their consecutive
//!     segments with gaps of at most 5 s) lasts 30 s or more (20 s when the
//!     instructions ask to listen more), with two or more speakers;
//!   - *dominance*: one speaker has 70% or more of the speech in the span
//!     (60% when asked to listen more), with at least 8 s of speech and two
//!     or more speakers;
//!   - *no question*: no question in the span although it holds at least
//!     15 s of speech (10 s when the instructions ask for questions).
//! - **Engagement**: a latest state of `disengaged` counts as withdrawal
//!   evidence when no disengagement signal is there.
//! - **Instructions** are read for keywords, case-insensitively and only
//!   where a word starts (so `deal` matches "deals", not "ideal"). The first
//!   goal that matches, in this order, chooses the wording of the advice:
//!   support (support, customer service, complaint, escalate, help desk),
//!   negotiation (negotiate, bargain), sales (sale, sell, deal, prospect,
//!   pitch, buyer), interview (interview, candidate, hiring, recruit),
//!   coaching (coach, mentor, teach, tutor, student, lesson, train, onboard),
//!   each with a few Spanish, French, German and Portuguese stems; anything
//!   else, in any language, is *general*. Two emphases are read the same
//!   way and change the order and thresholds below: *listen more* (listen,
//!   talk less, speak less, let them talk, interrupt, dominate, monologue)
//!   and *ask questions* (question, ask, curious, discover).
//!
//! # Choosing what to say
//!
//! The first of these that holds drives the suggestion:
//!
//! 1. a distress signal at medium or high;
//! 2. a pending question;
//! 3. a resistance signal at medium or high;
//! 4. a doubt signal at medium or high;
//! 5. a monologue;
//! 6. dominance;
//! 7. a withdrawal signal at medium or high, or a `disengaged` state;
//! 8. no question;
//! 9. a positive signal at high, unless the goal is general (praise alone
//!    needs no coaching).
//!
//! With "listen more", monologue and dominance move up to just after the
//! pending question; with "ask questions", so does "no question" (after
//! them). When nothing holds the answer is `None`: a low-probability signal
//! alone, a balanced conversation with questions, and a general
//! conversation that is going well warrant no advice.
//!
//! # Writing it
//!
//! One sentence: the driving evidence, one piece of supporting evidence,
//! then the advice, as `<evidence> and <transcript fact>: <advice>.` when a
//! signal drives (the first transcript fact in the order pending question,
//! monologue, dominance, no question) or `<transcript fact> while <signal>:
//! <advice>.` when the transcript drives (the strongest non-positive signal
//! at any probability). For example: "Speaker 1 has talked 78% of the last
//! 20 s while disengagement is medium ("Speech in only 24% of the window"):
//! ask Speaker 2 an open question about their needs and listen." The advice
//! names the quietest other speaker where it invites someone to talk. The
//! text is at most [`MAX_RECOMMENDATION_CHARS`] characters: quotes are cut
//! to 60 characters, and the supporting evidence is dropped, then the
//! quotes shortened to 30, when the sentence would be longer.

use super::intent::{Goal, Intent};
use super::talk::TalkStats;
use super::{RecommendationInput, Recommender};
use crate::wire::{EngagementLevel, Probability, Signal, SignalType};
use std::fmt::Write as _;

/// Longest recommendation the embedded recommender writes, in characters.
pub const MAX_RECOMMENDATION_CHARS: usize = 200;

/// Longest quoted rationale or question, in characters.
const QUOTE_CHARS: usize = 60;
/// Quote length used when the sentence is still too long.
const SHORT_QUOTE_CHARS: usize = 30;

/// Share of speech that makes a speaker dominant.
const DOMINANCE_SHARE: f64 = 0.70;
/// The same when the instructions ask to listen more.
const DOMINANCE_SHARE_LISTENING: f64 = 0.60;
/// Speech needed in the span before talk shares mean anything (seconds).
const MIN_TALK_FOR_SHARE: f64 = 8.0;
/// An unbroken turn this long is a monologue (seconds).
const MONOLOGUE_SECONDS: f64 = 30.0;
/// The same when the instructions ask to listen more.
const MONOLOGUE_SECONDS_LISTENING: f64 = 20.0;
/// Speech in a span without questions before that is worth a remark.
const MIN_TALK_FOR_NO_QUESTION: f64 = 15.0;
/// The same when the instructions ask for questions.
const MIN_TALK_FOR_NO_QUESTION_ASKING: f64 = 10.0;

/// The deterministic, rule-based recommender. See the module docs for every
/// rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbeddedRecommender;

impl Recommender for EmbeddedRecommender {
    fn recommend(&self, input: &RecommendationInput<'_>) -> Option<String> {
        if input.instructions.trim().is_empty() || input.signals.is_empty() {
            return None;
        }
        let talk = TalkStats::measure(input.transcript, input.start, input.end)?;
        let intent = Intent::read(input.instructions);
        let signals = summarize(input.signals);
        let facts = TranscriptFacts::read(&talk, intent);

        let driver = driver_order(intent)
            .into_iter()
            .find_map(|slot| slot.find(&signals, &facts, input.engagement, intent.goal))?;
        let support = match &driver {
            Driver::Signal(_) | Driver::Disengaged => facts.first().map(Evidence::Fact),
            Driver::Fact(_) => signals
                .iter()
                .find(|s| s.group != Group::Positive)
                .map(Evidence::Signal),
        };
        let advice = advice(&driver, intent, &talk);
        Some(write_sentence(&driver, support, &advice))
    }
}

/// The five groups of signal types, in the order they lead on a tie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Distress,
    Resistance,
    Doubt,
    Withdrawal,
    Positive,
}

fn group(signal_type: SignalType) -> Group {
    match signal_type {
        SignalType::Stress | SignalType::Frustration | SignalType::Tension => Group::Distress,
        SignalType::Disagreement | SignalType::Skepticism => Group::Resistance,
        SignalType::Confusion | SignalType::Uncertainty | SignalType::Hesitation => Group::Doubt,
        SignalType::Disengagement => Group::Withdrawal,
        SignalType::Agreement
        | SignalType::Confidence
        | SignalType::Engagement
        | SignalType::Interest => Group::Positive,
    }
}

/// One signal type over the period.
#[derive(Debug, Clone, PartialEq)]
struct SignalSummary<'a> {
    signal_type: SignalType,
    group: Group,
    probability: Probability,
    rationale: Option<&'a str>,
    windows: usize,
}

/// Signal types of the period, strongest first.
fn summarize(signals: &[Signal]) -> Vec<SignalSummary<'_>> {
    let mut summaries: Vec<SignalSummary<'_>> = Vec::new();
    for signal in signals {
        let probability = signal.probability.unwrap_or(Probability::Low);
        let rationale = signal
            .rationale
            .as_deref()
            .map(|text| text.split(';').next().unwrap_or(text).trim())
            .filter(|text| !text.is_empty());
        match summaries
            .iter_mut()
            .find(|s| s.signal_type == signal.signal_type)
        {
            Some(summary) => {
                summary.windows += 1;
                // Later windows replace the evidence at an equal probability:
                // the most recent evidence is the one the person remembers.
                if probability >= summary.probability && rationale.is_some() {
                    summary.rationale = rationale;
                }
                if probability > summary.probability {
                    summary.probability = probability;
                    summary.rationale = rationale;
                }
            }
            None => summaries.push(SignalSummary {
                signal_type: signal.signal_type,
                group: group(signal.signal_type),
                probability,
                rationale,
                windows: 1,
            }),
        }
    }
    summaries.sort_by(|a, b| {
        b.probability
            .cmp(&a.probability)
            .then(a.group.cmp(&b.group))
            .then(b.windows.cmp(&a.windows))
            .then(a.signal_type.cmp(&b.signal_type))
    });
    summaries
}

/// A transcript fact that may drive or support a suggestion.
#[derive(Debug, Clone, PartialEq)]
enum Fact<'a> {
    PendingQuestion {
        speaker: u32,
        text: &'a str,
    },
    Monologue {
        speaker: u32,
        seconds: f64,
    },
    Dominance {
        speaker: u32,
        share: f64,
        focus_seconds: f64,
    },
    NoQuestion {
        focus_seconds: f64,
    },
}

/// The transcript facts that hold, each checked once.
#[derive(Debug, Clone, Default)]
struct TranscriptFacts<'a> {
    pending_question: Option<Fact<'a>>,
    monologue: Option<Fact<'a>>,
    dominance: Option<Fact<'a>>,
    no_question: Option<Fact<'a>>,
}

impl<'a> TranscriptFacts<'a> {
    fn read(talk: &TalkStats<'a>, intent: Intent) -> TranscriptFacts<'a> {
        let several = talk.speakers.len() >= 2;
        let pending_question =
            (several && super::talk::is_question(&talk.last.text)).then(|| Fact::PendingQuestion {
                speaker: talk.last.speaker,
                text: talk.last.text.trim(),
            });
        let monologue_seconds = if intent.listen_more {
            MONOLOGUE_SECONDS_LISTENING
        } else {
            MONOLOGUE_SECONDS
        };
        let turn = talk.current_turn;
        let monologue =
            (several && turn.seconds() >= monologue_seconds).then_some(Fact::Monologue {
                speaker: turn.speaker,
                seconds: turn.seconds(),
            });
        let dominance_share = if intent.listen_more {
            DOMINANCE_SHARE_LISTENING
        } else {
            DOMINANCE_SHARE
        };
        let dominance = talk
            .top_speaker()
            .filter(|&(_, share)| {
                several && talk.total_talk() >= MIN_TALK_FOR_SHARE && share >= dominance_share
            })
            .map(|(speaker, share)| Fact::Dominance {
                speaker,
                share,
                focus_seconds: talk.focus_seconds,
            });
        let min_talk = if intent.ask_questions {
            MIN_TALK_FOR_NO_QUESTION_ASKING
        } else {
            MIN_TALK_FOR_NO_QUESTION
        };
        let no_question =
            (talk.questions == 0 && talk.total_talk() >= min_talk).then_some(Fact::NoQuestion {
                focus_seconds: talk.focus_seconds,
            });
        TranscriptFacts {
            pending_question,
            monologue,
            dominance,
            no_question,
        }
    }

    /// The first fact in support order.
    fn first(&self) -> Option<&Fact<'a>> {
        [
            &self.pending_question,
            &self.monologue,
            &self.dominance,
            &self.no_question,
        ]
        .into_iter()
        .find_map(Option::as_ref)
    }
}

/// One rule of the driver order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Signal(Group),
    PendingQuestion,
    Monologue,
    Dominance,
    Withdrawal,
    NoQuestion,
    Positive,
}

/// What drives the suggestion.
#[derive(Debug, Clone, PartialEq)]
enum Driver<'s, 't> {
    Signal(&'s SignalSummary<'s>),
    Disengaged,
    Fact(&'t Fact<'t>),
}

/// Supporting evidence.
#[derive(Debug, Clone, Copy)]
enum Evidence<'s, 't> {
    Signal(&'s SignalSummary<'s>),
    Fact(&'t Fact<'t>),
}

fn driver_order(intent: Intent) -> Vec<Slot> {
    let mut order = vec![Slot::Signal(Group::Distress), Slot::PendingQuestion];
    if intent.listen_more {
        order.extend([Slot::Monologue, Slot::Dominance]);
    }
    if intent.ask_questions {
        order.push(Slot::NoQuestion);
    }
    order.extend([
        Slot::Signal(Group::Resistance),
        Slot::Signal(Group::Doubt),
        Slot::Monologue,
        Slot::Dominance,
        Slot::Withdrawal,
        Slot::NoQuestion,
        Slot::Positive,
    ]);
    // Later duplicates of a promoted slot can never fire first; removing
    // them keeps the order readable in a debugger.
    let mut seen = Vec::new();
    order.retain(|slot| {
        let fresh = !seen.contains(slot);
        seen.push(*slot);
        fresh
    });
    order
}

impl Slot {
    fn find<'s, 't>(
        self,
        signals: &'s [SignalSummary<'s>],
        facts: &'t TranscriptFacts<'t>,
        engagement: Option<EngagementLevel>,
        goal: Goal,
    ) -> Option<Driver<'s, 't>> {
        let strong = |group: Group| {
            signals
                .iter()
                .find(|s| s.group == group && s.probability >= Probability::Medium)
        };
        match self {
            Slot::Signal(group) => strong(group).map(Driver::Signal),
            Slot::PendingQuestion => facts.pending_question.as_ref().map(Driver::Fact),
            Slot::Monologue => facts.monologue.as_ref().map(Driver::Fact),
            Slot::Dominance => facts.dominance.as_ref().map(Driver::Fact),
            Slot::Withdrawal => strong(Group::Withdrawal).map(Driver::Signal).or_else(|| {
                let no_signal = !signals.iter().any(|s| s.group == Group::Withdrawal);
                (no_signal && engagement == Some(EngagementLevel::Disengaged))
                    .then_some(Driver::Disengaged)
            }),
            Slot::NoQuestion => facts.no_question.as_ref().map(Driver::Fact),
            Slot::Positive => signals
                .iter()
                .find(|s| s.group == Group::Positive && s.probability == Probability::High)
                .filter(|_| goal != Goal::General)
                .map(Driver::Signal),
        }
    }
}

fn speaker_name(index: u32) -> String {
    format!("Speaker {}", u64::from(index) + 1)
}

/// The advice for a driver, worded for the goal.
fn advice(driver: &Driver<'_, '_>, intent: Intent, talk: &TalkStats<'_>) -> String {
    let goal = intent.goal;
    let other = |speaker: u32| {
        talk.quietest_other(speaker)
            .map_or_else(|| "the others".to_owned(), speaker_name)
    };
    match driver {
        Driver::Signal(signal) => match signal.group {
            Group::Distress => match goal {
                Goal::Support => "acknowledge the problem in their words before offering a fix",
                Goal::Negotiation => "slow down and restate their position before answering",
                Goal::Sales => "pause the pitch and ask what is worrying them",
                Goal::Interview => "ease the pace: reassure them, then ask a simpler question",
                Goal::Coaching => "slow down and ask how they are finding this",
                Goal::General if intent.listen_more => "stop and let them say what bothers them",
                Goal::General => "slow down and acknowledge how they feel before going on",
            }
            .to_owned(),
            Group::Resistance => match goal {
                Goal::Support => "restate their view and ask what outcome they expect",
                Goal::Negotiation => "ask what they would need to agree",
                Goal::Sales => "ask which concern matters most and address that one",
                Goal::Interview => "ask them to say more about their view",
                Goal::Coaching => "ask what makes them doubt it and explore that",
                Goal::General => "ask what they disagree with and restate it before replying",
            }
            .to_owned(),
            Group::Doubt => match goal {
                Goal::Support => "summarize the next step in one simple sentence",
                Goal::Negotiation => "restate the offer plainly and check it was understood",
                Goal::Sales => "check understanding: ask which part is unclear",
                Goal::Interview => "rephrase the question more simply and give them time",
                Goal::Coaching => "ask them to explain it back in their own words",
                Goal::General => "pause and ask what is unclear",
            }
            .to_owned(),
            Group::Withdrawal => withdrawal_advice(goal, talk),
            Group::Positive => match goal {
                Goal::Support => "confirm the fix works for them and close the loop",
                Goal::Negotiation => "summarize what is agreed and lock it in",
                Goal::Sales => "propose a concrete next step",
                Goal::Interview => "probe deeper with a follow-up question",
                Goal::Coaching => "name what worked so they can repeat it",
                // Never driven (positive slots need a goal); kept for totality.
                Goal::General => "build on what is working",
            }
            .to_owned(),
        },
        Driver::Disengaged => withdrawal_advice(goal, talk),
        Driver::Fact(fact) => match fact {
            Fact::PendingQuestion { .. } => match goal {
                Goal::Interview => "answer briefly, then hand the floor back",
                Goal::Sales => "answer it directly, then check it settles their concern",
                _ => "answer it directly before moving on",
            }
            .to_owned(),
            Fact::Monologue { speaker, .. } => {
                let other = other(*speaker);
                match goal {
                    Goal::Sales => format!("pause and ask {other} how this fits their needs"),
                    Goal::Interview => format!("pause and let {other} respond"),
                    _ => format!("pause and ask {other} what they think"),
                }
            }
            Fact::Dominance { speaker, .. } => {
                let other = other(*speaker);
                match goal {
                    Goal::Support => format!("let {other} explain the issue fully before replying"),
                    Goal::Negotiation => {
                        format!("ask {other} what matters most to them and listen")
                    }
                    Goal::Sales => {
                        format!("ask {other} an open question about their needs and listen")
                    }
                    Goal::Interview => {
                        format!("ask {other} an open follow-up and wait for the full answer")
                    }
                    Goal::Coaching => format!("ask {other} what they would try next"),
                    Goal::General => format!("ask {other} an open question and listen"),
                }
            }
            Fact::NoQuestion { .. } => match goal {
                Goal::Support => "ask what outcome they need",
                Goal::Negotiation => "ask what matters most to them",
                Goal::Sales => "ask what problem they most need solved",
                Goal::Interview => "ask for a concrete example",
                Goal::Coaching => "ask what they would try next",
                Goal::General => "ask an open question",
            }
            .to_owned(),
        },
    }
}

fn withdrawal_advice(goal: Goal, talk: &TalkStats<'_>) -> String {
    // The quietest speaker in the span is the likeliest to have withdrawn.
    let who = talk
        .speakers
        .iter()
        .copied()
        .min_by(|a, b| {
            let seconds = |s: &u32| talk.talk.get(s).copied().unwrap_or(0.0);
            seconds(a).total_cmp(&seconds(b)).then(a.cmp(b))
        })
        .filter(|_| talk.speakers.len() >= 2)
        .map_or_else(|| "them".to_owned(), speaker_name);
    match goal {
        Goal::Sales => format!("ask {who} what matters most to them right now"),
        Goal::Coaching => format!("ask {who} a question they can answer from experience"),
        _ => format!("re-engage {who}: ask for their view"),
    }
}

/// Cuts `text` to `max` characters, marking the cut with `…`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > max => format!("{}…", text[..at].trim_end()),
        _ => text.to_owned(),
    }
}

fn signal_evidence(signal: &SignalSummary<'_>, quote: usize) -> String {
    let mut text = format!("{} is {}", signal.signal_type, signal.probability);
    if let Some(rationale) = signal.rationale {
        let _ = write!(text, " (\"{}\")", cut(rationale, quote));
    }
    text
}

fn fact_evidence(fact: &Fact<'_>, quote: usize) -> String {
    match fact {
        Fact::PendingQuestion { speaker, text } => {
            format!("{} asked \"{}\"", speaker_name(*speaker), cut(text, quote))
        }
        Fact::Monologue { speaker, seconds } => format!(
            "{} has spoken for {seconds:.0} s without a break",
            speaker_name(*speaker)
        ),
        Fact::Dominance {
            speaker,
            share,
            focus_seconds,
        } => format!(
            "{} has talked {:.0}% of the last {focus_seconds:.0} s",
            speaker_name(*speaker),
            share * 100.0
        ),
        Fact::NoQuestion { focus_seconds } => {
            format!("no question was asked in the last {focus_seconds:.0} s")
        }
    }
}

fn write_sentence(
    driver: &Driver<'_, '_>,
    support: Option<Evidence<'_, '_>>,
    advice: &str,
) -> String {
    let compose = |with_support: bool, quote: usize| {
        let main = match driver {
            Driver::Signal(signal) => signal_evidence(signal, quote),
            Driver::Disengaged => "engagement has dropped to disengaged".to_owned(),
            Driver::Fact(fact) => fact_evidence(fact, quote),
        };
        let support = match support.filter(|_| with_support) {
            Some(Evidence::Fact(fact)) => format!(" and {}", fact_evidence(fact, quote)),
            Some(Evidence::Signal(signal)) => format!(" while {}", signal_evidence(signal, quote)),
            None => String::new(),
        };
        capitalize(&format!("{main}{support}: {advice}."))
    };
    [
        (true, QUOTE_CHARS),
        (false, QUOTE_CHARS),
        (false, SHORT_QUOTE_CHARS),
    ]
    .into_iter()
    .map(|(with_support, quote)| compose(with_support, quote))
    .find(|text| text.chars().count() <= MAX_RECOMMENDATION_CHARS)
    .unwrap_or_else(|| cut(&compose(false, SHORT_QUOTE_CHARS), MAX_RECOMMENDATION_CHARS))
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Modality, Seconds, TranscriptSegment};

    fn seg(start: Seconds, end: Seconds, speaker: u32, text: &str) -> TranscriptSegment {
        TranscriptSegment {
            start,
            end,
            text: text.into(),
            speaker,
        }
    }

    fn signal(signal_type: SignalType, probability: Probability, rationale: &str) -> Signal {
        Signal {
            signal_type,
            start: 0.0,
            end: 5.0,
            probability: Some(probability),
            rationale: Some(rationale.into()),
            modality: Some(vec![Modality::Audio]),
        }
    }

    fn recommend(
        instructions: &str,
        signals: &[Signal],
        transcript: &[TranscriptSegment],
    ) -> Option<String> {
        EmbeddedRecommender.recommend(&RecommendationInput {
            instructions,
            start: 0.0,
            end: 20.0,
            signals,
            transcript,
            engagement: Some(EngagementLevel::Neutral),
        })
    }

    /// Speaker 0 talks 16 of the 20 s, without a question.
    fn dominated() -> Vec<TranscriptSegment> {
        vec![
            seg(0.0, 2.0, 1, "So tell me about it."),
            seg(2.0, 10.0, 0, "Our platform covers the whole pipeline"),
            seg(10.0, 12.0, 1, "Okay."),
            seg(12.0, 20.0, 0, "and it integrates with everything you use"),
        ]
    }

    /// Two speakers, 10 s each, statements only.
    fn balanced_without_questions() -> Vec<TranscriptSegment> {
        vec![
            seg(0.0, 5.0, 0, "I led the migration last year."),
            seg(5.0, 10.0, 1, "That sounds like a big project."),
            seg(10.0, 15.0, 0, "It took six months."),
            seg(15.0, 20.0, 1, "Tell me about the team."),
        ]
    }

    /// Two speakers, 10 s each, with a question answered.
    fn balanced_with_questions() -> Vec<TranscriptSegment> {
        vec![
            seg(0.0, 5.0, 1, "What would help you most?"),
            seg(5.0, 10.0, 0, "Faster reports."),
            seg(10.0, 15.0, 1, "Which reports matter most?"),
            seg(15.0, 20.0, 0, "The weekly ones."),
        ]
    }

    fn low_interest() -> Vec<Signal> {
        vec![signal(
            SignalType::Interest,
            Probability::Low,
            "Pitch range widened",
        )]
    }

    #[test]
    fn a_dominant_speaker_is_quoted_with_the_share_and_asked_to_hand_over() {
        let text = recommend("Sales call", &low_interest(), &dominated()).unwrap();
        assert_eq!(
            text,
            "Speaker 1 has talked 80% of the last 20 s: \
             ask Speaker 2 an open question about their needs and listen."
        );
        // Listening instructions lower the bar: 65% is enough then, not before.
        let mut transcript = dominated();
        transcript[2] = seg(10.0, 15.0, 1, "Okay, and the cost.");
        transcript[3] = seg(15.0, 20.0, 0, "it integrates with everything you use");
        assert!(recommend("Keep me on track", &low_interest(), &transcript)
            .unwrap()
            .starts_with("No question was asked"));
        let text = recommend("Help me listen more", &low_interest(), &transcript).unwrap();
        assert!(text.starts_with("Speaker 1 has talked 65%"), "{text}");
    }

    #[test]
    fn a_span_without_questions_gets_a_question_for_the_goal() {
        let signals = [signal(SignalType::Hesitation, Probability::Low, "2 pauses")];
        let text = recommend("Job interview", &signals, &balanced_without_questions()).unwrap();
        assert_eq!(
            text,
            "No question was asked in the last 20 s while hesitation is low (\"2 pauses\"): \
             ask for a concrete example."
        );
        let text = recommend("sales call", &signals, &balanced_without_questions()).unwrap();
        assert!(
            text.ends_with("ask what problem they most need solved."),
            "{text}"
        );
        // The same conversation with questions in it warrants nothing.
        assert_eq!(
            recommend("Job interview", &signals, &balanced_with_questions()),
            None
        );
    }

    #[test]
    fn frustration_leads_with_its_rationale_and_advice_for_the_goal() {
        let signals = [
            signal(SignalType::Interest, Probability::High, "Faster speech"),
            signal(
                SignalType::Frustration,
                Probability::High,
                "Pitch 40% above this speaker's baseline; loudness +6 dB",
            ),
        ];
        let text = recommend("Sales call", &signals, &dominated()).unwrap();
        assert_eq!(
            text,
            "Frustration is high (\"Pitch 40% above this speaker's baseline\") \
             and Speaker 1 has talked 80% of the last 20 s: \
             pause the pitch and ask what is worrying them."
        );
        let text = recommend("Angry customer on the support line", &signals, &dominated()).unwrap();
        assert!(
            text.ends_with("acknowledge the problem in their words before offering a fix."),
            "{text}"
        );
    }

    #[test]
    fn stress_outranks_a_dominant_speaker_even_when_asked_to_listen() {
        let signals = [signal(
            SignalType::Stress,
            Probability::Medium,
            "Jitter up 30%",
        )];
        let text = recommend("Let them talk", &signals, &dominated()).unwrap();
        assert!(
            text.starts_with("Stress is medium (\"Jitter up 30%\")"),
            "{text}"
        );
        assert!(
            text.ends_with("stop and let them say what bothers them."),
            "{text}"
        );
    }

    #[test]
    fn a_pending_question_asks_for_a_direct_answer() {
        let transcript = [
            seg(0.0, 12.0, 0, "We ship weekly and support every format."),
            seg(12.0, 15.0, 1, "How much does the enterprise plan cost?"),
        ];
        let signals = [signal(
            SignalType::Skepticism,
            Probability::Medium,
            "Long pause before reply",
        )];
        let text = recommend("coach me", &signals, &transcript).unwrap();
        assert_eq!(
            text,
            "Speaker 2 asked \"How much does the enterprise plan cost?\" \
             while skepticism is medium (\"Long pause before reply\"): \
             answer it directly before moving on."
        );
    }

    #[test]
    fn a_long_unbroken_turn_is_a_monologue() {
        let transcript = [
            seg(0.0, 3.0, 1, "Go ahead."),
            seg(3.0, 20.0, 0, "So the first thing"),
            seg(21.0, 38.0, 0, "and the second thing"),
        ];
        let signals = [signal(
            SignalType::Disengagement,
            Probability::Low,
            "Flat pitch",
        )];
        let input = RecommendationInput {
            instructions: "team meeting",
            start: 18.0,
            end: 38.0,
            signals: &signals,
            transcript: &transcript,
            engagement: None,
        };
        let text = EmbeddedRecommender.recommend(&input).unwrap();
        assert_eq!(
            text,
            "Speaker 1 has spoken for 35 s without a break while disengagement is low \
             (\"Flat pitch\"): pause and ask Speaker 2 what they think."
        );
    }

    #[test]
    fn doubt_is_advised_per_goal() {
        let signals = [signal(
            SignalType::Confusion,
            Probability::Medium,
            "Rising terminals",
        )];
        let text = recommend("Tutoring a student", &signals, &balanced_with_questions()).unwrap();
        assert_eq!(
            text,
            "Confusion is medium (\"Rising terminals\"): ask them to explain it back in their own words."
        );
    }

    #[test]
    fn nothing_is_said_without_a_transcript_signals_or_instructions() {
        let signals = [signal(SignalType::Frustration, Probability::High, "Loud")];
        assert_eq!(recommend("Sales call", &signals, &[]), None);
        assert_eq!(recommend("Sales call", &[], &dominated()), None);
        assert_eq!(recommend("   ", &signals, &dominated()), None);
    }

    #[test]
    fn a_conversation_going_well_needs_no_advice_unless_the_goal_builds_on_it() {
        let signals = [signal(
            SignalType::Interest,
            Probability::High,
            "Faster speech",
        )];
        assert_eq!(
            recommend("Weekly sync", &signals, &balanced_with_questions()),
            None
        );
        let text = recommend("Sales call", &signals, &balanced_with_questions()).unwrap();
        assert_eq!(
            text,
            "Interest is high (\"Faster speech\"): propose a concrete next step."
        );
    }

    #[test]
    fn instructions_in_an_unlisted_language_get_the_general_rules() {
        let text = recommend("営業の会議です", &low_interest(), &dominated()).unwrap();
        assert!(
            text.ends_with("ask Speaker 2 an open question and listen."),
            "{text}"
        );
    }

    #[test]
    fn a_disengaged_state_counts_as_withdrawal() {
        let input = RecommendationInput {
            instructions: "coach me",
            start: 0.0,
            end: 20.0,
            signals: &low_interest(),
            transcript: &balanced_with_questions(),
            engagement: Some(EngagementLevel::Disengaged),
        };
        let text = EmbeddedRecommender.recommend(&input).unwrap();
        assert!(
            text.starts_with("Engagement has dropped to disengaged"),
            "{text}"
        );
    }

    #[test]
    fn long_evidence_is_cut_to_fit_the_limit() {
        let long = "x".repeat(500);
        let signals = [signal(SignalType::Frustration, Probability::High, &long)];
        let transcript = [
            seg(0.0, 10.0, 0, &long),
            seg(10.0, 20.0, 1, &format!("{long}?")),
        ];
        let text = recommend("Negotiation with a supplier", &signals, &transcript).unwrap();
        assert!(text.chars().count() <= MAX_RECOMMENDATION_CHARS, "{text}");
        assert!(text.contains('…'), "{text}");
        assert!(
            text.ends_with("restate their position before answering."),
            "{text}"
        );
    }

    #[test]
    fn the_same_input_gives_the_same_text() {
        let signals = [
            signal(SignalType::Tension, Probability::Medium, "Overlaps"),
            signal(SignalType::Stress, Probability::Medium, "Jitter"),
            signal(SignalType::Tension, Probability::Medium, "Raised loudness"),
        ];
        let first = recommend("sales", &signals, &dominated());
        for _ in 0..5 {
            assert_eq!(recommend("sales", &signals, &dominated()), first);
        }
        // Tension was present in two windows and leads; its latest evidence is quoted.
        assert!(
            first
                .as_deref()
                .unwrap()
                .starts_with("Tension is medium (\"Raised loudness\")"),
            "{first:?}"
        );
    }
}
