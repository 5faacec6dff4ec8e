//! Conversation measures read from a client transcript: talk share per
//! speaker over a recent span, questions asked, who spoke last, and the
//! current speaker's unbroken turn.

use crate::wire::{Seconds, TranscriptSegment};
use std::collections::BTreeMap;

/// Shortest span the measures are taken over, so a short period still reads
/// enough talk to mean something.
pub(crate) const MIN_FOCUS_SECONDS: Seconds = 10.0;

/// Longest silence between two segments of one speaker that still counts as
/// one unbroken turn: a breath or a slow reply is not handing over the floor.
const TURN_GAP_SECONDS: Seconds = 5.0;

/// Marks that end or open a question in scripts that have one: Latin `?`,
/// Spanish `¿`, full-width `？` (CJK), Arabic `؟`, Greek `;`, Armenian `՞`.
const QUESTION_MARKS: &[char] = &['?', '¿', '？', '؟', '\u{037E}', '\u{055E}'];

/// English openers that make a question when speech-to-text dropped the
/// mark. Other languages are recognized by their marks only.
const QUESTION_OPENERS: &[&str] = &[
    "what ",
    "why ",
    "how ",
    "when ",
    "where ",
    "who ",
    "which ",
    "could you",
    "can you",
    "would you",
    "will you",
    "do you",
    "did you",
    "are you",
    "have you",
    "is it ",
    "is there",
];

/// Whether a transcript segment reads as a question.
pub(crate) fn is_question(text: &str) -> bool {
    if text.contains(QUESTION_MARKS) {
        return true;
    }
    let lower = text.trim_start().to_lowercase();
    QUESTION_OPENERS
        .iter()
        .any(|opener| lower.starts_with(opener))
}

/// One speaker's run of consecutive segments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Turn {
    /// Zero-based speaker index.
    pub speaker: u32,
    /// Start of the run's first segment.
    pub start: Seconds,
    /// End of the run's last segment.
    pub end: Seconds,
}

impl Turn {
    /// How long the speaker has held the floor.
    pub fn seconds(&self) -> Seconds {
        (self.end - self.start).max(0.0)
    }
}

/// What a transcript says about the recent conversation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TalkStats<'a> {
    /// Length of the span measured (talk share and questions).
    pub focus_seconds: Seconds,
    /// Seconds of speech per speaker inside the span (segments clipped to it).
    pub talk: BTreeMap<u32, Seconds>,
    /// Questions asked inside the span.
    pub questions: usize,
    /// Every speaker in the whole transcript.
    pub speakers: Vec<u32>,
    /// The last segment in spoken order.
    pub last: &'a TranscriptSegment,
    /// The turn the last segment belongs to.
    pub current_turn: Turn,
}

impl<'a> TalkStats<'a> {
    /// Measures `transcript` over the last `max(end - start, 10)` seconds of
    /// the period `[start, end]`. A transcript that has no speech in that
    /// span (its clock differs from the session's, or it lags behind) is
    /// measured over the same length ending at its own last segment instead.
    /// `None` for an empty transcript.
    pub fn measure(
        transcript: &'a [TranscriptSegment],
        start: Seconds,
        end: Seconds,
    ) -> Option<TalkStats<'a>> {
        let last = transcript.last()?;
        let focus_seconds = (end - start).max(MIN_FOCUS_SECONDS);
        let overlaps = |from: Seconds, to: Seconds| {
            transcript
                .iter()
                .any(|segment| segment.end > from && segment.start < to)
        };
        let (from, to) = if overlaps(end - focus_seconds, end) {
            (end - focus_seconds, end)
        } else {
            let transcript_end = transcript
                .iter()
                .map(|segment| segment.end)
                .fold(last.end, f64::max);
            (transcript_end - focus_seconds, transcript_end)
        };

        let mut talk = BTreeMap::new();
        let mut questions = 0;
        for segment in transcript {
            let clipped = segment.end.min(to) - segment.start.max(from);
            if clipped > 0.0 {
                *talk.entry(segment.speaker).or_insert(0.0) += clipped;
                questions += usize::from(is_question(&segment.text));
            }
        }
        let mut speakers: Vec<u32> = transcript.iter().map(|s| s.speaker).collect();
        speakers.sort_unstable();
        speakers.dedup();

        let mut current_turn = Turn {
            speaker: last.speaker,
            start: last.start,
            end: last.end,
        };
        for segment in transcript.iter().rev().skip(1) {
            if segment.speaker != last.speaker
                || current_turn.start - segment.end > TURN_GAP_SECONDS
            {
                break;
            }
            current_turn.start = current_turn.start.min(segment.start);
        }

        Some(TalkStats {
            focus_seconds,
            talk,
            questions,
            speakers,
            last,
            current_turn,
        })
    }

    /// All speech inside the span.
    pub fn total_talk(&self) -> Seconds {
        self.talk.values().sum()
    }

    /// The speaker with the most speech in the span and their share of it
    /// (lowest index on a tie).
    pub fn top_speaker(&self) -> Option<(u32, f64)> {
        let total = self.total_talk();
        let mut top: Option<(u32, Seconds)> = None;
        for (&speaker, &seconds) in &self.talk {
            if top.is_none_or(|(_, best)| seconds > best) {
                top = Some((speaker, seconds));
            }
        }
        top.filter(|_| total > 0.0)
            .map(|(speaker, seconds)| (speaker, seconds / total))
    }

    /// The speaker other than `speaker` who spoke least in the span (never
    /// speaking counts as least; lowest index on a tie), if there is one.
    pub fn quietest_other(&self, speaker: u32) -> Option<u32> {
        let mut quietest: Option<(u32, Seconds)> = None;
        for &other in self.speakers.iter().filter(|&&s| s != speaker) {
            let seconds = self.talk.get(&other).copied().unwrap_or(0.0);
            if quietest.is_none_or(|(_, least)| seconds < least) {
                quietest = Some((other, seconds));
            }
        }
        quietest.map(|(other, _)| other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: Seconds, end: Seconds, speaker: u32, text: &str) -> TranscriptSegment {
        TranscriptSegment {
            start,
            end,
            text: text.into(),
            speaker,
        }
    }

    #[test]
    fn questions_are_recognized_by_marks_in_several_scripts_and_english_openers() {
        for text in [
            "Is that right?",
            "¿Cuánto cuesta",
            "これはいくらですか？",
            "هل هذا صحيح؟",
            "what would help you most",
            "Can you walk me through it",
        ] {
            assert!(is_question(text), "{text}");
        }
        for text in ["That is right.", "Whatever works", "I can do it", ""] {
            assert!(!is_question(text), "{text}");
        }
    }

    #[test]
    fn talk_share_is_measured_over_the_recent_span_only() {
        let transcript = [
            seg(0.0, 30.0, 1, "a long story from earlier"),
            seg(40.0, 55.0, 0, "our product"),
            seg(55.0, 60.0, 1, "okay"),
        ];
        let stats = TalkStats::measure(&transcript, 40.0, 60.0).unwrap();
        assert_eq!(stats.focus_seconds, 20.0);
        assert_eq!(stats.talk.get(&0), Some(&15.0));
        assert_eq!(stats.talk.get(&1), Some(&5.0));
        assert_eq!(stats.top_speaker(), Some((0, 0.75)));
        assert_eq!(stats.quietest_other(0), Some(1));
        assert_eq!(stats.speakers, [0, 1]);
    }

    #[test]
    fn a_transcript_on_another_clock_is_measured_at_its_own_end() {
        let transcript = [seg(0.0, 8.0, 0, "hello there"), seg(8.0, 10.0, 1, "hi?")];
        let stats = TalkStats::measure(&transcript, 100.0, 110.0).unwrap();
        assert_eq!(stats.total_talk(), 10.0);
        assert_eq!(stats.questions, 1);
    }

    #[test]
    fn the_current_turn_joins_one_speakers_consecutive_segments() {
        let transcript = [
            seg(0.0, 5.0, 1, "question?"),
            seg(5.0, 20.0, 0, "first"),
            seg(22.0, 40.0, 0, "second"),
            seg(41.0, 45.0, 0, "third"),
        ];
        let stats = TalkStats::measure(&transcript, 25.0, 45.0).unwrap();
        assert_eq!(
            stats.current_turn,
            Turn {
                speaker: 0,
                start: 5.0,
                end: 45.0
            }
        );
        let broken = [
            seg(0.0, 10.0, 0, "first"),
            seg(20.0, 30.0, 0, "after a pause"),
        ];
        let stats = TalkStats::measure(&broken, 20.0, 30.0).unwrap();
        assert_eq!(
            stats.current_turn.seconds(),
            10.0,
            "a 10 s silence ends a turn"
        );
    }

    #[test]
    fn an_empty_transcript_measures_nothing() {
        assert!(TalkStats::measure(&[], 0.0, 10.0).is_none());
    }
}
