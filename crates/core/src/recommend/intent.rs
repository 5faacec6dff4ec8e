//! What the client's instructions ask for, read from keywords: the kind of
//! conversation and two emphases (listen more, ask more questions).
//!
//! Keywords are matched case-insensitively at the start of a word, so `deal`
//! matches "deals" but not "ideal". A few stems in Spanish, French, German
//! and Portuguese are listed beside the English ones; instructions that match
//! nothing (any other language, or a goal not listed) get [`Goal::General`]
//! and the rules that read only signals and the transcript.

/// The kind of conversation the instructions describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Goal {
    /// Customer support, complaints, de-escalation.
    Support,
    /// Negotiation.
    Negotiation,
    /// Selling: discovery, pitch, deal.
    Sales,
    /// A job interview (either side).
    Interview,
    /// Coaching, teaching, mentoring, training.
    Coaching,
    /// Nothing recognized.
    General,
}

/// Keyword stems per goal, in precedence order: the first goal with a match
/// wins, so "sales coaching" is a sales call (the coaching is what Attune
/// does) and "coach me through an interview" is an interview.
const GOALS: &[(Goal, &[&str])] = &[
    (
        Goal::Support,
        &[
            "support",
            "customer service",
            "complain",
            "complaint",
            "de-escalat",
            "deescalat",
            "escalat",
            "help desk",
            "helpdesk",
            "soporte",
            "réclamation",
            "kundendienst",
            "beschwerde",
        ],
    ),
    (
        Goal::Negotiation,
        &["negotiat", "bargain", "negocia", "négoci", "verhandl"],
    ),
    (
        Goal::Sales,
        &[
            "sale", "sell", "upsell", "deal", "prospect", "pitch", "buyer", "venta", "vender",
            "vendre", "vente", "verkauf", "vertrieb",
        ],
    ),
    (
        Goal::Interview,
        &[
            "interview",
            "candidate",
            "hiring",
            "recruit",
            "entrevista",
            "entretien",
            "vorstellungsgespräch",
            "bewerb",
        ],
    ),
    (
        Goal::Coaching,
        &[
            "coach",
            "mentor",
            "teach",
            "tutor",
            "student",
            "lesson",
            "train",
            "onboard",
            "enseñ",
            "enseign",
            "ensin",
            "lehr",
            "unterricht",
        ],
    ),
];

/// Stems asking the coached person to talk less.
const LISTEN_MORE: &[&str] = &[
    "listen",
    "talk less",
    "speak less",
    "let them talk",
    "let them speak",
    "let the other",
    "interrupt",
    "dominat",
    "monolog",
    "escuch",
    "écout",
    "ecout",
    "zuhör",
    "zuhoer",
];

/// Stems asking for more questions.
const ASK_QUESTIONS: &[&str] = &[
    "question", "ask", "curious", "discover", "pregunt", "pergunt", "frage",
];

/// The instructions' intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Intent {
    /// The kind of conversation.
    pub goal: Goal,
    /// Talk share and monologues come before most signals.
    pub listen_more: bool,
    /// A span without questions comes before most signals.
    pub ask_questions: bool,
}

impl Intent {
    /// Reads `instructions`.
    pub fn read(instructions: &str) -> Intent {
        let text = instructions.to_lowercase();
        let goal = GOALS
            .iter()
            .find(|(_, stems)| stems.iter().any(|stem| has_word_starting(&text, stem)))
            .map_or(Goal::General, |(goal, _)| *goal);
        Intent {
            goal,
            listen_more: LISTEN_MORE.iter().any(|s| has_word_starting(&text, s)),
            ask_questions: ASK_QUESTIONS.iter().any(|s| has_word_starting(&text, s)),
        }
    }
}

/// Whether `stem` occurs in `text` where a word starts.
fn has_word_starting(text: &str, stem: &str) -> bool {
    text.match_indices(stem).any(|(at, _)| {
        text[..at]
            .chars()
            .next_back()
            .is_none_or(|before| !before.is_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_are_read_from_keywords_at_word_starts() {
        let goal = |text: &str| Intent::read(text).goal;
        assert_eq!(goal("This is a SALES discovery call"), Goal::Sales);
        assert_eq!(goal("Help me close deals"), Goal::Sales);
        assert_eq!(goal("An ideal outcome is a calm chat"), Goal::General);
        assert_eq!(goal("Coach me through my job interview"), Goal::Interview);
        assert_eq!(goal("Sales coaching for a new rep"), Goal::Sales);
        assert_eq!(goal("Angry customer, de-escalate"), Goal::Support);
        assert_eq!(goal("Salary negotiation"), Goal::Negotiation);
        assert_eq!(goal("Je prépare un entretien d'embauche"), Goal::Interview);
        assert_eq!(goal("Llamada de ventas"), Goal::Sales);
        assert_eq!(goal("営業の会議です"), Goal::General);
        assert_eq!(goal("Tutoring session with a student"), Goal::Coaching);
    }

    #[test]
    fn emphases_are_read_independently_of_the_goal() {
        let intent = Intent::read("Sales call. I want to listen more and ask better questions.");
        assert_eq!(
            intent,
            Intent {
                goal: Goal::Sales,
                listen_more: true,
                ask_questions: true
            }
        );
        let intent = Intent::read("Keep me on track");
        assert!(!intent.listen_more && !intent.ask_questions);
        assert!(Intent::read("Quiero escuchar más").listen_more);
        assert!(
            !Intent::read("a task list").ask_questions,
            "`ask` inside `task`"
        );
    }
}
