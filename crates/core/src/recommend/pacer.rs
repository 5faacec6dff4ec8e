//! When a realtime recommendation is due: the interface's three preconditions
//! and its pacing, as a state machine fed with analyzed windows.
//!
//! A recommendation is due when all of these hold (checked by
//! [`RecommendationPacer::due`] against the config in force at that moment,
//! so a config change applies at once: the most recent wins):
//!
//! 1. the config has instructions (the frame parser already turned a blank
//!    string into `None`; a blank one is refused here too);
//! 2. the open period has at least the frequency's length of *analyzed*
//!    media (`high` 10 s, `medium` 20 s, `low` 30 s), counted as the summed
//!    length of the windows observed in it, so media skipped by the
//!    pipeline (`coverage.dropped`) and wall time spent waiting count for
//!    nothing;
//! 3. at least one signal was present in a window of the open period (any
//!    detection, not only a new `signal.detected`: a signal that stays
//!    active is still detected in each window);
//! 4. a transcript arrived since the previous recommendation: a client's
//!    `transcript.updated`, or, while the client sent none, a segment of the server's
//!    own transcript (`transcript.generated`).
//!
//! Choices where the interface is silent:
//! - The open period starts where the previous recommendation's period ended
//!   (at the first window's start before any), so consecutive
//!   recommendations cover contiguous, non-overlapping spans of media and
//!   "since the previous recommendation" means the same for signals as for
//!   transcripts. When a condition fails at the pacing boundary the period
//!   keeps growing until the conditions hold; it then ends at the latest
//!   window's end.
//! - A period the recommender declined to fill (it found nothing to advise)
//!   still ends: its signals were considered and are not offered again, so
//!   a slow or silent backend is asked at most once per period. The
//!   transcript, unused, still counts as new for the next period
//!   ([`RecommendationPacer::declined`]).
//! - A window wholly before the open period (late or repeated) is ignored; one
//!   straddling its start counts only for the part inside it.

use super::RecommendationInput;
use crate::lifecycle::ClosedWindow;
use crate::wire::{EngagementLevel, RealtimeConfig, Seconds, Signal, TranscriptSegment};

/// Slack for summing window lengths in floating point: 4 windows of 2.5 s
/// make 10 s even if the sum lands a hair below.
const EPSILON: Seconds = 1e-6;

/// A span of session time, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Period {
    /// Start (session seconds).
    pub start: Seconds,
    /// End (session seconds).
    pub end: Seconds,
}

/// A period that is due, with what was observed in it, taken out of the
/// pacer by [`RecommendationPacer::take_due`].
#[derive(Debug, Clone, PartialEq)]
pub struct DuePeriod {
    /// The media the recommendation covers: its `start` and `end`.
    pub period: Period,
    /// Signals present in the period's windows, in window order.
    pub signals: Vec<Signal>,
    /// Engagement state of the latest window.
    pub engagement: Option<EngagementLevel>,
}

impl DuePeriod {
    /// The recommender's input for this period under `config`, with the
    /// session's latest `transcript`; `None` when the config has no
    /// instructions (they were removed after the period was taken).
    pub fn input<'a>(
        &'a self,
        config: &'a RealtimeConfig,
        transcript: &'a [TranscriptSegment],
    ) -> Option<RecommendationInput<'a>> {
        let instructions = instructions(config)?;
        Some(RecommendationInput {
            instructions,
            start: self.period.start,
            end: self.period.end,
            signals: &self.signals,
            transcript,
            engagement: self.engagement,
        })
    }
}

/// The config's instructions when they enable recommendations.
fn instructions(config: &RealtimeConfig) -> Option<&str> {
    config
        .realtime_recommendation_instructions
        .as_deref()
        .filter(|text| !text.trim().is_empty())
}

/// Decides when a realtime session's next recommendation is due. One per
/// session; see the module docs for the rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecommendationPacer {
    /// Start of the open period; `None` until the first window, since the
    /// first period starts with the media, not with the session.
    period_start: Option<Seconds>,
    /// End of the latest window observed: where a due period ends.
    analyzed_until: Option<Seconds>,
    /// Media analyzed in the open period: the pacing clock.
    analyzed_seconds: Seconds,
    /// Signals present in the open period's windows.
    signals: Vec<Signal>,
    /// Engagement of the latest window, for the recommender.
    engagement: Option<EngagementLevel>,
    /// Whether a transcript arrived since the previous recommendation.
    transcript_pending: bool,
}

impl RecommendationPacer {
    /// A pacer for a session that has analyzed nothing yet.
    pub fn new() -> RecommendationPacer {
        RecommendationPacer::default()
    }

    /// Records one analyzed window (after the session kept only the evidence
    /// of the active analysis groups).
    pub fn observe_window(&mut self, window: &ClosedWindow) {
        let period_start = *self.period_start.get_or_insert(window.start);
        if window.end <= period_start || window.end <= window.start {
            return;
        }
        self.analyzed_seconds += window.end - window.start.max(period_start);
        self.analyzed_until = Some(
            self.analyzed_until
                .map_or(window.end, |u| u.max(window.end)),
        );
        self.engagement = Some(window.engagement);
        self.signals
            .extend(window.detections.iter().map(|detection| Signal {
                signal_type: detection.signal_type,
                start: window.start,
                end: window.end,
                probability: Some(detection.probability),
                rationale: (!detection.rationale.is_empty()).then(|| detection.rationale.clone()),
                modality: (!detection.modality.is_empty()).then(|| detection.modality.clone()),
            }));
    }

    /// A transcript arrived: a `transcript.updated` frame was accepted, or the server's
    /// transcript gained a segment while the client sent none.
    pub fn transcript_arrived(&mut self) {
        self.transcript_pending = true;
    }

    /// The period a recommendation is due for under `config`, or `None`
    /// while any condition fails.
    pub fn due(&self, config: &RealtimeConfig) -> Option<Period> {
        instructions(config)?;
        let (start, end) = (self.period_start?, self.analyzed_until?);
        let length = config.realtime_recommendation_frequency.period_seconds();
        let ready = self.analyzed_seconds + EPSILON >= length
            && !self.signals.is_empty()
            && self.transcript_pending;
        ready.then_some(Period { start, end })
    }

    /// A recommendation was generated for the period ending at `end`: the
    /// next period starts there with no signals, and the transcript is
    /// used up.
    pub fn generated(&mut self, end: Seconds) {
        self.end_period(end);
        self.transcript_pending = false;
    }

    /// When due, ends the period as [`generated`](Self::generated) does and
    /// hands out what was observed in it. For callers that produce the text
    /// later (an asynchronous recommender): the period is closed at once, so
    /// windows arriving meanwhile start the next one. If the recommender then
    /// produces nothing, call [`declined`](Self::declined).
    pub fn take_due(&mut self, config: &RealtimeConfig) -> Option<DuePeriod> {
        let period = self.due(config)?;
        let due = DuePeriod {
            period,
            signals: std::mem::take(&mut self.signals),
            engagement: self.engagement,
        };
        self.generated(period.end);
        Some(due)
    }

    /// The recommender found nothing to advise for the period last taken:
    /// no recommendation was sent, so the transcript still counts as new.
    pub fn declined(&mut self) {
        self.transcript_pending = true;
    }

    /// Signals present in the open period so far.
    pub fn period_signals(&self) -> &[Signal] {
        &self.signals
    }

    /// Engagement state of the latest window observed.
    pub fn engagement(&self) -> Option<EngagementLevel> {
        self.engagement
    }

    fn end_period(&mut self, end: Seconds) {
        self.period_start = Some(end);
        self.analyzed_seconds = self
            .analyzed_until
            .map_or(0.0, |until| (until - end).max(0.0));
        self.signals.retain(|signal| signal.end > end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::signals::Detection;
    use crate::wire::{Modality, Probability, RecommendationFrequency, SignalType};

    fn config(instructions: Option<&str>, frequency: RecommendationFrequency) -> RealtimeConfig {
        RealtimeConfig {
            realtime_recommendation_instructions: instructions.map(str::to_owned),
            realtime_recommendation_frequency: frequency,
            ..RealtimeConfig::default()
        }
    }

    fn window(start: Seconds, end: Seconds, signals: &[SignalType]) -> ClosedWindow {
        ClosedWindow {
            start,
            end,
            engagement: EngagementLevel::Neutral,
            detections: signals
                .iter()
                .map(|&signal_type| Detection {
                    signal_type,
                    probability: Probability::Medium,
                    rationale: format!("{signal_type} cue"),
                    modality: vec![Modality::Audio],
                })
                .collect(),
        }
    }

    /// Feeds contiguous 5 s windows from `from` to `to`, each with `signals`.
    fn feed(pacer: &mut RecommendationPacer, from: Seconds, to: Seconds, signals: &[SignalType]) {
        let mut start = from;
        while start < to {
            pacer.observe_window(&window(start, start + 5.0, signals));
            start += 5.0;
        }
    }

    const STRESS: &[SignalType] = &[SignalType::Stress];

    #[test]
    fn each_frequency_paces_by_its_length_of_analyzed_media() {
        for (frequency, length) in [
            (RecommendationFrequency::High, 10.0),
            (RecommendationFrequency::Medium, 20.0),
            (RecommendationFrequency::Low, 30.0),
        ] {
            let config = config(Some("coach me"), frequency);
            let mut pacer = RecommendationPacer::new();
            pacer.transcript_arrived();
            feed(&mut pacer, 0.0, length - 5.0, STRESS);
            assert_eq!(pacer.due(&config), None, "{frequency} before {length} s");
            feed(&mut pacer, length - 5.0, length, STRESS);
            assert_eq!(
                pacer.due(&config),
                Some(Period {
                    start: 0.0,
                    end: length
                }),
                "{frequency}"
            );
        }
    }

    #[test]
    fn recommendations_recur_each_period_when_transcripts_keep_arriving() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        let mut periods = Vec::new();
        let mut start = 0.0;
        while start < 35.0 {
            pacer.transcript_arrived();
            pacer.observe_window(&window(start, start + 5.0, STRESS));
            if let Some(due) = pacer.take_due(&config) {
                periods.push((due.period.start, due.period.end));
            }
            start += 5.0;
        }
        assert_eq!(periods, [(0.0, 10.0), (10.0, 20.0), (20.0, 30.0)]);
    }

    #[test]
    fn no_instructions_means_no_recommendation() {
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 40.0, STRESS);
        assert_eq!(
            pacer.due(&config(None, RecommendationFrequency::High)),
            None
        );
        assert_eq!(
            pacer.due(&config(Some("  \n"), RecommendationFrequency::High)),
            None,
            "blank instructions enable nothing"
        );
        // Instructions arriving later enable the period that grew meanwhile.
        assert_eq!(
            pacer.due(&config(Some("sales"), RecommendationFrequency::High)),
            Some(Period {
                start: 0.0,
                end: 40.0
            })
        );
    }

    #[test]
    fn a_period_without_any_signal_is_not_due() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 30.0, &[]);
        assert_eq!(pacer.due(&config), None);
        // One signal later in the period is enough.
        feed(&mut pacer, 30.0, 35.0, STRESS);
        assert_eq!(
            pacer.due(&config),
            Some(Period {
                start: 0.0,
                end: 35.0
            })
        );
    }

    #[test]
    fn signals_of_a_previous_period_do_not_count_for_the_next() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 10.0, STRESS);
        let due = pacer.take_due(&config).expect("first period due");
        assert_eq!(due.signals.len(), 2, "one entry per window");
        pacer.transcript_arrived();
        feed(&mut pacer, 10.0, 20.0, &[]);
        assert_eq!(pacer.due(&config), None, "10-20 s had no signal");
        assert!(pacer.period_signals().is_empty());
    }

    #[test]
    fn a_transcript_is_needed_since_the_previous_recommendation() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        feed(&mut pacer, 0.0, 10.0, STRESS);
        assert_eq!(pacer.due(&config), None, "no transcript yet");
        pacer.transcript_arrived();
        assert!(pacer.due(&config).is_some());
        pacer.generated(10.0);
        feed(&mut pacer, 10.0, 30.0, STRESS);
        assert_eq!(pacer.due(&config), None, "the first transcript was used");
        pacer.transcript_arrived();
        assert_eq!(
            pacer.due(&config),
            Some(Period {
                start: 10.0,
                end: 30.0
            })
        );
    }

    #[test]
    fn a_declined_period_ends_but_keeps_the_transcript_new() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 10.0, STRESS);
        let due = pacer.take_due(&config).expect("due");
        assert_eq!(
            pacer.due(&config),
            None,
            "taken periods are not offered twice"
        );
        pacer.declined();
        feed(&mut pacer, 10.0, 20.0, STRESS);
        assert_eq!(
            pacer.due(&config),
            Some(Period {
                start: due.period.end,
                end: 20.0
            }),
            "the unused transcript still counts"
        );
    }

    #[test]
    fn pacing_counts_analyzed_media_not_the_timeline() {
        let config = config(Some("coach me"), RecommendationFrequency::Medium);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        // 15 s analyzed, then the stream jumps 60 s ahead (dropped media).
        feed(&mut pacer, 0.0, 15.0, STRESS);
        pacer.observe_window(&window(75.0, 80.0, STRESS));
        assert!(pacer.due(&config).is_some(), "15 + 5 s analyzed");
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 10.0, STRESS);
        pacer.observe_window(&window(70.0, 75.0, STRESS));
        assert_eq!(pacer.due(&config), None, "only 15 s analyzed, 75 s elapsed");
    }

    #[test]
    fn uneven_windows_end_the_period_at_the_first_window_past_the_length() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        for i in 0..4 {
            let start = f64::from(i) * 3.3;
            pacer.observe_window(&window(start, start + 3.3, STRESS));
            if i < 3 {
                assert_eq!(pacer.due(&config), None, "{} s", start + 3.3);
            }
        }
        let period = pacer.due(&config).expect("13.2 s analyzed");
        assert!((period.end - 13.2).abs() < 1e-9);
        pacer.generated(period.end);
        pacer.transcript_arrived();
        for i in 4..7 {
            let start = f64::from(i) * 3.3;
            pacer.observe_window(&window(start, start + 3.3, STRESS));
        }
        assert_eq!(pacer.due(&config), None, "9.9 s into the second period");
    }

    #[test]
    fn a_frequency_change_applies_to_the_open_period_at_once() {
        let low = config(Some("coach me"), RecommendationFrequency::Low);
        let high = config(Some("coach me"), RecommendationFrequency::High);
        let medium = config(Some("coach me"), RecommendationFrequency::Medium);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 15.0, STRESS);
        assert_eq!(pacer.due(&low), None, "15 of 30 s");
        // The client switches to high: 15 s already passed 10 s.
        assert_eq!(
            pacer.due(&high),
            Some(Period {
                start: 0.0,
                end: 15.0
            })
        );
        pacer.generated(15.0);
        pacer.transcript_arrived();
        feed(&mut pacer, 15.0, 30.0, STRESS);
        // Then back to medium: 15 s of 20 s since the last recommendation.
        assert_eq!(pacer.due(&medium), None);
        feed(&mut pacer, 30.0, 35.0, STRESS);
        assert_eq!(
            pacer.due(&medium),
            Some(Period {
                start: 15.0,
                end: 35.0
            })
        );
    }

    #[test]
    fn the_first_period_starts_with_the_first_window() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        assert_eq!(pacer.due(&config), None, "nothing analyzed");
        feed(&mut pacer, 42.0, 52.0, STRESS);
        assert_eq!(
            pacer.due(&config),
            Some(Period {
                start: 42.0,
                end: 52.0
            })
        );
    }

    #[test]
    fn late_windows_before_the_open_period_are_ignored() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        feed(&mut pacer, 0.0, 10.0, &[]);
        pacer.generated(10.0);
        pacer.transcript_arrived();
        pacer.observe_window(&window(5.0, 10.0, STRESS));
        assert!(pacer.period_signals().is_empty());
        feed(&mut pacer, 10.0, 20.0, &[]);
        assert_eq!(pacer.due(&config), None);
    }

    #[test]
    fn the_due_period_carries_its_signals_and_latest_engagement() {
        let config = config(Some("coach me"), RecommendationFrequency::High);
        let mut pacer = RecommendationPacer::new();
        pacer.transcript_arrived();
        pacer.observe_window(&window(0.0, 5.0, &[SignalType::Stress]));
        let mut last = window(5.0, 10.0, &[SignalType::Interest]);
        last.engagement = EngagementLevel::Engaged;
        last.detections[0].rationale.clear();
        pacer.observe_window(&last);
        let due = pacer.take_due(&config).expect("due");
        assert_eq!(due.engagement, Some(EngagementLevel::Engaged));
        let types: Vec<_> = due.signals.iter().map(|s| s.signal_type).collect();
        assert_eq!(types, [SignalType::Stress, SignalType::Interest]);
        assert_eq!((due.signals[1].start, due.signals[1].end), (5.0, 10.0));
        assert_eq!(due.signals[0].rationale.as_deref(), Some("stress cue"));
        assert_eq!(due.signals[1].rationale, None, "empty rationale omitted");
        let transcript = [TranscriptSegment {
            start: 0.0,
            end: 2.0,
            text: "hi".into(),
            speaker: 0,
        }];
        let input = due.input(&config, &transcript).expect("instructions set");
        assert_eq!(input.instructions, "coach me");
        assert_eq!((input.start, input.end), (0.0, 10.0));
        assert_eq!(input.signals.len(), 2);
        assert!(due.input(&RealtimeConfig::default(), &transcript).is_none());
    }
}
