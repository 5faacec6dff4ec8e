//! Evidence from words (English): what a transcript's utterances say about agreement,
//! disagreement, uncertainty, confusion, skepticism and hesitation.
//!
//! Each cue is a documented list of phrases, matched on whole words in lower case (sources in
//! `docs/ANALYZER.md`, "Words"):
//!
//! - **agreement** (`AgreeWords`): affirmations and agreement formulas (Stivers 2008; Heritage
//!   and Raymond 2005). Strong phrases ("exactly", "I agree", "that's right", "absolutely",
//!   "good point", "good idea", "works for me") count anywhere unless negated ("not exactly");
//!   short tokens that are as often acknowledgements or discourse markers ("yeah", "yes",
//!   "right", "sure", "okay", "true") count only when they open the utterance and the
//!   utterance neither turns ("yeah, but") nor asks ("right?") and says more than the tokens
//!   ("Yeah." alone is most often a backchannel); continuers ("uh huh", "mhm") never do
//!   (Schegloff 1982);
//! - **disagreement** (`DisagreeWords`): negations of the other's point and contradiction
//!   markers ("I don't think so", "that's not true", "not really", "I disagree", "you are
//!   wrong", "that's not the point"; a turn opened by "no" other than "no problem" / "no
//!   worries", also after "well", "honestly" or "actually"; "yeah, but", "well, actually")
//!   (Pomerantz 1984's dispreferred seconds; Kotthoff 1993);
//!   Opening tokens count only in short utterances (four words after them at most): "okay,
//!   then I thought..." opens a turn rather than agreeing;
//! - **uncertainty** (`HedgeWords`): hedges and epistemic downtoners ("maybe", "I guess",
//!   "probably", "I'm not sure", "I don't know", "kind of") (Lakoff 1973; Hyland 1998);
//! - **confusion** (`ClarifyWords`): requests for clarification and repair initiators ("what
//!   do you mean", "sorry?", "I don't understand", "can you repeat") (Schegloff, Jefferson and
//!   Sacks 1977; Dingemanse et al. 2015);
//! - **skepticism** (`SkepticWords`): doubt about what was said ("really?", "are you sure",
//!   "I doubt", "I'm not convinced");
//! - **hesitation** (`FillerWords`): fillers the recognizer kept ("um", "uh", "er") (Clark and
//!   Fox Tree 2002; Whisper drops most of them, so this cue is rare);
//! - **questions** (`Questions`): utterances that ask (a question mark, or opened by a
//!   question word or an inverted auxiliary), support for interest and engagement only.
//!
//! Strength: one matching utterance 1.0, two 1.25, three or more 1.5. The quoted evidence names
//! the voice and the time and quotes the words ("speaker 2 at 12.4 s: \"no, I don't think that
//! works\"").

use super::cues::{Cue, Evidence};
use crate::transcript::Utterance;

/// Phrases that count anywhere in an utterance, unless negated just before.
const AGREE_STRONG: &[&str] = &[
    "exactly",
    "absolutely",
    "definitely",
    "i agree",
    "agreed",
    "that's true",
    "that is true",
    "that's right",
    "that is right",
    "you're right",
    "you are right",
    "good point",
    "fair enough",
    "makes sense",
    "totally",
    "of course",
    "sounds good",
    "me too",
    "same here",
    "i think so too",
    "for sure",
    "we agree",
    "good idea",
    "great idea",
    "good plan",
    "sounds great",
    "works for me",
    "fine by me",
    "count me in",
];

/// Tokens that agree only when they open an utterance that neither turns nor asks.
/// Continuers ("uh huh", "mhm") are not here: they show hearing, not a position (Schegloff
/// 1982).
const AGREE_OPENING: &[&str] = &[
    "yeah", "yes", "yep", "yup", "right", "sure", "okay", "ok", "true",
];

const DISAGREE: &[&str] = &[
    "i disagree",
    "i don't agree",
    "can't agree",
    "cannot agree",
    "couldn't agree less",
    "i do not agree",
    "i don't think so",
    "i don't think that's",
    "i don't think that is",
    "that's not true",
    "that is not true",
    "that's not right",
    "that's not what",
    "that's wrong",
    "that is wrong",
    "you're wrong",
    "you are wrong",
    "you're both wrong",
    "you are both wrong",
    "not the point",
    "that's not fair",
    "that is not fair",
    "not really",
    "not at all",
    "nope",
    "on the contrary",
    "yeah but",
    "yes but",
    "well actually",
    "but actually",
    "i wouldn't say",
    "not necessarily",
];

/// Openings after "no" that are not a disagreement.
const NO_NOT_DISAGREEING: &[&str] = &["problem", "worries", "doubt", "wonder", "matter"];

const HEDGES: &[&str] = &[
    "maybe",
    "perhaps",
    "i guess",
    "i suppose",
    "probably",
    "possibly",
    "i'm not sure",
    "i am not sure",
    "not sure",
    "i don't know",
    "i do not know",
    "kind of",
    "sort of",
    "it seems",
    "could be",
    "might be",
    "i'm not certain",
];

const CLARIFY: &[&str] = &[
    "what do you mean",
    "what does that mean",
    "what does it mean",
    "i don't understand",
    "i do not understand",
    "i don't get it",
    "i'm confused",
    "i am confused",
    "i'm lost",
    "pardon",
    "come again",
    "can you repeat",
    "could you repeat",
    "say that again",
    "can you explain",
    "could you explain",
    "what are you talking about",
];

/// Whole utterances that are repair initiators ("sorry?", "what?", "huh?").
const CLARIFY_ALONE: &[&str] = &["sorry", "what", "huh", "excuse me"];

const SKEPTIC: &[&str] = &[
    "are you sure",
    "i doubt",
    "i'm not convinced",
    "i am not convinced",
    "hard to believe",
    "if you say so",
    "i'm skeptical",
    "i am skeptical",
    "is that so",
];

/// Whole questions of doubt ("really?", "seriously?").
const SKEPTIC_ALONE: &[&str] = &["really", "seriously", "is it", "are you"];

const FILLERS: &[&str] = &["um", "uh", "er", "erm", "umm", "uhm"];

const QUESTION_OPENERS: &[&str] = &[
    "what", "why", "how", "when", "where", "who", "which", "do", "does", "did", "are", "is", "can",
    "could", "would", "will", "should", "have", "has",
];

/// Words that negate a following phrase ("not exactly", "don't agree").
const NEGATORS: &[&str] = &["not", "don't", "doesn't", "isn't", "wasn't", "never", "no"];

/// Interjections that may precede an opening token ("oh, yeah").
const INTERJECTIONS: &[&str] = &["oh", "well", "ah", "uh", "um", "so", "honestly", "actually"];

/// The lower-case words of `text` (letters, digits and apostrophes), and whether it asks.
fn words_of(text: &str) -> (Vec<String>, bool) {
    let text = text.replace(['\u{2019}', '\u{2018}'], "'");
    let asks = text.trim_end().ends_with('?');
    let words = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    (words, asks)
}

/// Where `phrase` (space-separated words) occurs in `words`.
fn find(words: &[String], phrase: &str) -> Option<usize> {
    let p: Vec<&str> = phrase.split(' ').collect();
    if p.is_empty() || words.len() < p.len() {
        return None;
    }
    (0..=words.len() - p.len()).find(|&i| p.iter().zip(&words[i..]).all(|(a, b)| *a == b))
}

fn negated(words: &[String], at: usize) -> bool {
    words[at.saturating_sub(2)..at]
        .iter()
        .any(|w| NEGATORS.contains(&w.as_str()))
}

/// The first word after any opening interjections.
fn opening(words: &[String]) -> usize {
    words
        .iter()
        .position(|w| !INTERJECTIONS.contains(&w.as_str()))
        .unwrap_or(words.len())
}

/// Whether the text opens (after interjections) with a bare "no": "No." or "No, ..." rather
/// than "no delays" or "no problem".
fn opens_with_no(text: &str) -> bool {
    let lower = text.trim_start().to_lowercase();
    let mut rest = lower.as_str();
    loop {
        let word: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
        if word.is_empty() {
            return false;
        }
        let after = rest[word.len()..].trim_start_matches(['\'', ' ']);
        if INTERJECTIONS.contains(&word.as_str()) {
            rest = after.trim_start_matches(|c: char| !c.is_alphanumeric());
            continue;
        }
        return word == "no"
            && (after.is_empty() || after.starts_with([',', '.', '!', '?', ';', '-', '…']));
    }
}

fn disagrees(words: &[String], text: &str) -> bool {
    if DISAGREE.iter().any(|p| find(words, p).is_some()) {
        return true;
    }
    let o = opening(words);
    opens_with_no(text)
        && !words
            .get(o + 1)
            .is_some_and(|n| NO_NOT_DISAGREEING.contains(&n.as_str()))
}

/// A bare negative answer ("No.", "Not really.", "Nope."): after another voice's question it
/// answers it rather than disagreeing.
fn bare_negative(words: &[String]) -> bool {
    words.len() <= 3
        && matches!(
            words.join(" ").as_str(),
            "no" | "no no" | "nope" | "not really" | "no not really" | "not at all"
        )
}

fn agrees(words: &[String], asks: bool, text: &str) -> bool {
    if disagrees(words, text) {
        return false;
    }
    let o = opening(words);
    // In a question, only an opening formula agrees ("Me too. Shall we...?"), not
    // "When is it exactly?".
    if AGREE_STRONG
        .iter()
        .any(|p| find(words, p).is_some_and(|at| !negated(words, at) && (!asks || at == o)))
    {
        return true;
    }
    let opens = AGREE_OPENING
        .iter()
        .any(|p| find(&words[o.min(words.len())..], p) == Some(0));
    // "Yes, it is." agrees; "Okay, then I thought..." only opens a turn; a token alone
    // ("Yeah.", "Sure.", "Yeah, yeah.") is most often a backchannel (Switchboard's dialogue
    // acts: backchannels 19 % of utterances, agreements 5 %; Stolcke et al. 2000), so it
    // takes at least one word besides opening tokens.
    let rest = &words[o.min(words.len())..];
    let short = rest.len() <= 4;
    let only_tokens = rest
        .iter()
        .all(|w| AGREE_OPENING.contains(&w.as_str()) || INTERJECTIONS.contains(&w.as_str()));
    let short_question = asks && words.len() <= 3;
    opens && short && !only_tokens && !short_question && !words.iter().any(|w| w == "but")
}

/// Words after which "kind of" / "sort of" name a kind ("what kind of thing") rather than
/// hedge ("it's kind of late").
const DETERMINERS: &[&str] = &[
    "what", "which", "a", "an", "the", "this", "that", "these", "those", "some", "any", "every",
    "each", "no", "one", "same", "other", "another", "my", "your", "his", "her", "our", "their",
    "its", "all",
];

fn hedges(words: &[String]) -> bool {
    HEDGES.iter().any(|p| {
        find(words, p).is_some_and(|at| {
            let naming =
                (p.ends_with(" of") && at > 0) && DETERMINERS.contains(&words[at - 1].as_str());
            !naming
        })
    })
}

fn clarifies(words: &[String], asks: bool) -> bool {
    CLARIFY.iter().any(|p| find(words, p).is_some())
        || (asks && words.len() <= 2 && CLARIFY_ALONE.contains(&words.join(" ").as_str()))
}

fn doubts(words: &[String], asks: bool) -> bool {
    SKEPTIC.iter().any(|p| find(words, p).is_some())
        || (asks && words.len() <= 2 && SKEPTIC_ALONE.contains(&words.join(" ").as_str()))
}

fn fills(words: &[String]) -> bool {
    words.iter().any(|w| FILLERS.contains(&w.as_str()))
}

/// A question: the recognizer's question mark, on an utterance of two words or more
/// opened by a question word or an inverted auxiliary, or of five words or more (a
/// one-word "what?" or "really?" is a repair or doubt, read above).
fn asks_question(words: &[String], asks: bool) -> bool {
    asks && (words.len() >= 5
        || (words.len() >= 2 && QUESTION_OPENERS.contains(&words[0].as_str())))
}

/// A quotation of an utterance: who, when, what (at most 80 characters of it).
fn quote(u: &Utterance) -> String {
    let mut text: String = u.text.trim().chars().take(80).collect();
    if u.text.trim().chars().count() > 80 {
        text.push('…');
    }
    match u.speaker {
        Some(s) => format!("speaker {} at {:.1} s: \"{}\"", s + 1, u.start, text),
        None => format!("at {:.1} s: \"{}\"", u.start, text),
    }
}

/// What a test of an utterance sees: its words, whether it asks, its text, and whether it
/// follows a question.
struct Said<'a> {
    words: Vec<String>,
    asks: bool,
    text: &'a str,
    after_question: bool,
}

/// The least mean log-probability per token ([`Utterance::avg_logprob`]) of words the cues
/// read: openai-whisper's own `logprob_threshold`, under which it calls a decoding failed and
/// tries again hotter. Words the recognizer itself doubts this much give no evidence: speech in
/// another language forced through the English model (German read -3.0 to -4.5 on EmoDB,
/// English -0.2 to -0.9 on the real call, AMI's meetings and the synthetic corpus; see
/// `docs/ANALYZER.md`, "Words"), and crosstalk or noise decoded into invented text.
pub const MIN_LOGPROB: f32 = -1.0;

/// Whether the cues read `u`'s words (see [`MIN_LOGPROB`]).
pub fn trusted(u: &Utterance) -> bool {
    u.avg_logprob.is_none_or(|l| l >= MIN_LOGPROB)
}

/// The lexical cues of a window's utterances (those [`trusted`]).
pub fn cues(utterances: &[Utterance]) -> Vec<Evidence> {
    let utterances: Vec<&Utterance> = utterances.iter().filter(|u| trusted(u)).collect();
    type Test = fn(&Said<'_>) -> bool;
    let tests: [(Cue, &str, Test); 7] = [
        (Cue::AgreeWords, "words of agreement", |s| {
            agrees(&s.words, s.asks, s.text)
        }),
        (Cue::DisagreeWords, "words of disagreement", |s| {
            disagrees(&s.words, s.text) && !(s.after_question && bare_negative(&s.words))
        }),
        (Cue::HedgeWords, "hedged words", |s| hedges(&s.words)),
        (Cue::ClarifyWords, "a request to clarify", |s| {
            clarifies(&s.words, s.asks)
        }),
        (Cue::SkepticWords, "words of doubt", |s| {
            doubts(&s.words, s.asks)
        }),
        (Cue::FillerWords, "fillers", |s| fills(&s.words)),
        (Cue::Questions, "a question", |s| {
            asks_question(&s.words, s.asks)
        }),
    ];
    let parsed: Vec<Said<'_>> = utterances
        .iter()
        .map(|u| {
            let (words, asks) = words_of(&u.text);
            Said {
                words,
                asks,
                text: &u.text,
                after_question: u.after_question,
            }
        })
        .collect();
    let mut out = Vec::new();
    for (cue, what, test) in tests {
        let hits: Vec<&Utterance> = utterances
            .iter()
            .zip(&parsed)
            .filter(|(_, s)| !s.words.is_empty() && test(s))
            .map(|(u, _)| *u)
            .collect();
        let Some(first) = hits.first() else {
            continue;
        };
        let strength = match hits.len() {
            1 => 1.0,
            2 => 1.25,
            _ => 1.5,
        };
        let more = match hits.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        out.push(Evidence {
            cue,
            strength,
            text: format!("{what}, {}{more}", quote(first)),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Utterance {
        Utterance {
            start: 12.4,
            end: 14.0,
            speaker: Some(1),
            text: text.to_string(),
            after_question: false,
            avg_logprob: None,
        }
    }

    #[test]
    fn words_the_recognizer_doubts_give_no_evidence() {
        // German through the English model: "I disagree" invented with a mean log-probability
        // of -3 reads nothing; the same words decoded with confidence read disagreement.
        let mut u = said("I disagree.");
        u.avg_logprob = Some(-3.0);
        assert!(cues(std::slice::from_ref(&u)).is_empty());
        u.avg_logprob = Some(-0.4);
        assert!(cues(std::slice::from_ref(&u))
            .iter()
            .any(|e| e.cue == Cue::DisagreeWords));
        u.avg_logprob = None;
        assert!(!cues(&[u]).is_empty(), "a human transcript is read");
    }

    fn cue_set(text: &str) -> Vec<Cue> {
        cues(&[said(text)]).into_iter().map(|e| e.cue).collect()
    }

    #[test]
    fn agreement_is_read_from_affirmations_not_from_markers() {
        assert_eq!(cue_set("Yeah, exactly."), vec![Cue::AgreeWords]);
        assert_eq!(cue_set("Oh, yes, that's right."), vec![Cue::AgreeWords]);
        // A discourse marker, a tag question, a turn and a negation are not agreement.
        assert!(!cue_set("Okay, then I thought you know").contains(&Cue::AgreeWords));
        assert!(cue_set("Yes, it is.").contains(&Cue::AgreeWords));
        assert!(!cue_set("Right?").contains(&Cue::AgreeWords));
        assert!(!cue_set("Yeah, but that won't work.").contains(&Cue::AgreeWords));
        assert!(!cue_set("Not exactly.").contains(&Cue::AgreeWords));
        assert!(!cue_set("I mean the right one").contains(&Cue::AgreeWords));
    }

    #[test]
    fn a_token_alone_is_a_backchannel_and_formulas_of_acceptance_agree() {
        // "Yeah." or "Sure." put in another's pause shows hearing; continuers never agree.
        for text in [
            "Yeah.",
            "Sure.",
            "Yeah, yeah.",
            "Okay.",
            "Mhm.",
            "Uh huh, right.",
        ] {
            assert!(!cue_set(text).contains(&Cue::AgreeWords), "{text}");
        }
        for text in [
            "Yes, that is a good plan. Let us do it.",
            "Great, I am glad we agree.",
            "That works for me.",
            "Definitely, count me in.",
            "Sure, let's do that.",
        ] {
            assert!(cue_set(text).contains(&Cue::AgreeWords), "{text}");
        }
        assert!(!cue_set("That is not a good idea.").contains(&Cue::AgreeWords));
        assert!(!cue_set("Is that a good idea?").contains(&Cue::AgreeWords));
        for text in [
            "Well, I still think you are wrong about it.",
            "That is not the point.",
            "Honestly, no. We should wait.",
            "Actually, no.",
            "But that is not fair.",
        ] {
            assert!(cue_set(text).contains(&Cue::DisagreeWords), "{text}");
        }
    }

    #[test]
    fn disagreement_is_read_from_negations_of_the_point() {
        for text in [
            "No, I don't think that works.",
            "Well, actually it was Tuesday.",
            "Yeah, but the budget is gone.",
            "I disagree.",
            "That's not true at all.",
        ] {
            assert!(cue_set(text).contains(&Cue::DisagreeWords), "{text}");
        }
        assert!(!cue_set("No problem, see you then.").contains(&Cue::DisagreeWords));
        assert!(!cue_set("Call them now, no excuses, no delays.").contains(&Cue::DisagreeWords));
        assert!(!cue_set("No delays.").contains(&Cue::DisagreeWords));
        assert!(cue_set("Oh, no, that can't be.").contains(&Cue::DisagreeWords));
        assert!(cue_set("I can't agree.").contains(&Cue::DisagreeWords));
        // "No way, that is fantastic!" is surprise, not disagreement.
        assert!(!cue_set("No way, that is fantastic news!").contains(&Cue::DisagreeWords));
        // A bare "not really" answering a question answers it.
        let mut answer = said("Not really.");
        assert!(cues(std::slice::from_ref(&answer))
            .iter()
            .any(|e| e.cue == Cue::DisagreeWords));
        answer.after_question = true;
        assert!(cues(&[answer]).is_empty());
        // A question that ends with "exactly" asks; "me too" before a question agrees.
        assert!(!cue_set("When is the meeting exactly?").contains(&Cue::AgreeWords));
        assert!(cue_set("Me too. Shall we play tonight?").contains(&Cue::AgreeWords));
        assert!(!cue_set("I know nothing about it.").contains(&Cue::DisagreeWords));
    }

    #[test]
    fn hedges_requests_and_doubt_each_have_their_cue() {
        assert!(cue_set("Maybe, I guess it could work.").contains(&Cue::HedgeWords));
        assert!(cue_set("It's kind of late.").contains(&Cue::HedgeWords));
        assert!(!cue_set("So, what kind of thing.").contains(&Cue::HedgeWords));
        assert!(cue_set("What do you mean by that?").contains(&Cue::ClarifyWords));
        assert!(cue_set("Sorry?").contains(&Cue::ClarifyWords));
        assert!(cue_set("Really?").contains(&Cue::SkepticWords));
        assert!(!cue_set("I really like it.").contains(&Cue::SkepticWords));
        assert!(cue_set("Um, so, uh, the thing is").contains(&Cue::FillerWords));
    }

    #[test]
    fn evidence_quotes_the_voice_the_time_and_the_words() {
        let e = &cues(&[said("No, I don't think that works.")])[0];
        assert_eq!(
            e.text,
            "words of disagreement, speaker 2 at 12.4 s: \"No, I don't think that works.\""
        );
        let two = cues(&[said("I disagree."), said("That's wrong.")]);
        assert_eq!(two[0].strength, 1.25);
        assert!(two[0].text.ends_with("(and 1 more)"));
    }

    #[test]
    fn neutral_talk_gives_no_lexical_cue_of_a_signal() {
        for text in [
            "This is Diane in New Jersey.",
            "I'm originally from Chicago also.",
            "The report is due on Friday and the numbers look fine.",
            "We went to the store and bought some bread.",
        ] {
            let found: Vec<Cue> = cue_set(text)
                .into_iter()
                .filter(|c| *c != Cue::Questions)
                .collect();
            assert!(found.is_empty(), "{text}: {found:?}");
        }
    }
}
