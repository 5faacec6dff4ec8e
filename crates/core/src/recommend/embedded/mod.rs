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
mod tests;
