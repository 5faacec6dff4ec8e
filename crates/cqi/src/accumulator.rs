//! Evidence records and the incremental accumulator that turns them into scores.

use crate::values::QualityValues;
use crate::vocab::{EngagementLevel, Probability, SignalType};
use crate::weights::{Cue, GAIN};

/// A detected signal over a span of media, as the index reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalEvidence {
    /// Which signal.
    pub signal_type: SignalType,
    /// How likely; `None` (a merged whole-file entry without a level) counts
    /// as medium, the middle of the scale, because nothing says otherwise.
    pub probability: Option<Probability>,
    /// Span start in seconds.
    pub start: f64,
    /// Span end in seconds.
    pub end: f64,
}

impl SignalEvidence {
    /// The probability weight this signal counts with.
    pub fn probability_weight(&self) -> f64 {
        self.probability.unwrap_or(Probability::Medium).weight()
    }
}

/// The engagement state of a span of media.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngagementEvidence {
    /// The state over the span.
    pub level: EngagementLevel,
    /// Span start in seconds.
    pub start: f64,
    /// Span end in seconds.
    pub end: f64,
}

/// The longest span counted as evidence, about 31.7 years; anything longer
/// is a corrupt time, not media.
///
/// The cap also keeps every sum far from overflow, so scores cannot depend on
/// the order in which evidence arrives even for hostile input.
pub const MAX_SPAN_SECONDS: f64 = 1e9;

/// The length of `[start, end)`, or `None` when it covers no time or is not
/// a usable span (non-finite bounds, inverted, or longer than
/// [`MAX_SPAN_SECONDS`]).
pub(crate) fn span_length(start: f64, end: f64) -> Option<f64> {
    let length = end - start;
    (start.is_finite() && end.is_finite() && length > 0.0 && length <= MAX_SPAN_SECONDS)
        .then_some(length)
}

/// Running CQI evidence: fold signals and engagement spans in, in any order,
/// and read the scores at any time.
///
/// It keeps a fixed handful of sums, never the evidence itself, so a stream
/// session can hold a cumulative score for hours and an upload can fold all
/// its windows. See the crate docs for the formula.
///
/// Spans that cover no time (zero-length, inverted, or with NaN or infinite
/// bounds) or are longer than [`MAX_SPAN_SECONDS`] are ignored: they carry no
/// evidence and never make a score leave 0..=100.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QualityAccumulator {
    /// Per dimension: Σ cue weight × probability weight × seconds.
    net: [f64; 5],
    /// Seconds covered by engagement spans: the analyzed media, since the
    /// analyzer assigns every analyzed span exactly one state.
    engagement_seconds: f64,
    /// Smallest start and largest end of any signal span, so signals alone
    /// (without engagement spans) still have a span to be a density over.
    signal_hull: Option<(f64, f64)>,
}

impl QualityAccumulator {
    /// An accumulator with no evidence; its values are all 50.
    pub fn new() -> Self {
        QualityAccumulator::default()
    }

    /// Folds in one detected signal.
    pub fn add_signal(&mut self, signal: &SignalEvidence) {
        let Some(seconds) = span_length(signal.start, signal.end) else {
            return;
        };
        let scale = signal.probability_weight() * seconds;
        self.add_weighted(Cue::Signal(signal.signal_type), scale);
        self.signal_hull = Some(match self.signal_hull {
            Some((lo, hi)) => (lo.min(signal.start), hi.max(signal.end)),
            None => (signal.start, signal.end),
        });
    }

    /// Folds in the engagement state of one span. A neutral span carries no
    /// evidence but still counts as analyzed media, so it dilutes the
    /// evidence around it.
    pub fn add_engagement(&mut self, engagement: &EngagementEvidence) {
        let Some(seconds) = span_length(engagement.start, engagement.end) else {
            return;
        };
        self.add_weighted(Cue::Engagement(engagement.level), seconds);
        self.engagement_seconds += seconds;
    }

    /// Folds in everything another accumulator holds, as if its evidence had
    /// been added here.
    pub fn merge(&mut self, other: &QualityAccumulator) {
        for (mine, theirs) in self.net.iter_mut().zip(other.net) {
            *mine += theirs;
        }
        self.engagement_seconds += other.engagement_seconds;
        self.signal_hull = match (self.signal_hull, other.signal_hull) {
            (Some((a_lo, a_hi)), Some((b_lo, b_hi))) => Some((a_lo.min(b_lo), a_hi.max(b_hi))),
            (hull, None) | (None, hull) => hull,
        };
    }

    /// Whether nothing covering any time has been added.
    pub fn is_empty(&self) -> bool {
        self.engagement_seconds <= 0.0 && self.signal_hull.is_none()
    }

    /// The seconds the evidence is a density over: the engagement-covered
    /// media, or the stretch from the first to the last signal when that is
    /// longer (signals given without engagement spans).
    pub fn covered_seconds(&self) -> f64 {
        let hull = self.signal_hull.map_or(0.0, |(lo, hi)| hi - lo);
        self.engagement_seconds.max(hull)
    }

    /// The scores for the evidence so far; all 50 when there is none.
    pub fn values(&self) -> QualityValues {
        self.values_over(self.covered_seconds())
    }

    /// The scores with the evidence spread over at least `seconds`, for a
    /// caller that knows more media was analyzed than the evidence covers
    /// (a timeline period that is analyzed from end to end).
    pub(crate) fn values_over(&self, seconds: f64) -> QualityValues {
        let span = seconds.max(self.covered_seconds());
        if !(span.is_finite() && span > 0.0) {
            return QualityValues::NEUTRAL;
        }
        // A non-finite density (sums overflowed) becomes 50 inside
        // `from_dimensions`, so no input can push a score out of range.
        QualityValues::from_dimensions(self.net.map(|net| 50.0 + 50.0 * (GAIN * net / span).tanh()))
    }

    fn add_weighted(&mut self, cue: Cue, scale: f64) {
        for (net, weight) in self.net.iter_mut().zip(cue.weights()) {
            *net += weight * scale;
        }
    }
}

/// The scores of a set of evidence: [`QualityAccumulator`] in one call.
pub fn score(engagement: &[EngagementEvidence], signals: &[SignalEvidence]) -> QualityValues {
    let mut accumulator = QualityAccumulator::new();
    engagement
        .iter()
        .for_each(|e| accumulator.add_engagement(e));
    signals.iter().for_each(|s| accumulator.add_signal(s));
    accumulator.values()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Dimension;

    fn signal(
        signal_type: SignalType,
        probability: Probability,
        start: f64,
        end: f64,
    ) -> SignalEvidence {
        SignalEvidence {
            signal_type,
            probability: Some(probability),
            start,
            end,
        }
    }

    fn state(level: EngagementLevel, start: f64, end: f64) -> EngagementEvidence {
        EngagementEvidence { level, start, end }
    }

    /// Scores of one high-probability signal over ten seconds of neutral media.
    fn with_signal(signal_type: SignalType) -> QualityValues {
        score(
            &[state(EngagementLevel::Neutral, 0.0, 10.0)],
            &[signal(signal_type, Probability::High, 0.0, 10.0)],
        )
    }

    #[test]
    fn no_evidence_is_exactly_neutral() {
        assert_eq!(score(&[], &[]), QualityValues::NEUTRAL);
        assert_eq!(QualityAccumulator::new().values(), QualityValues::NEUTRAL);
        assert!(QualityAccumulator::new().is_empty());
    }

    #[test]
    fn neutral_engagement_alone_is_neutral_but_not_empty() {
        let mut acc = QualityAccumulator::new();
        acc.add_engagement(&state(EngagementLevel::Neutral, 0.0, 30.0));
        assert_eq!(acc.values(), QualityValues::NEUTRAL);
        assert!(!acc.is_empty());
    }

    #[test]
    fn confidence_raises_authority() {
        let values = with_signal(SignalType::Confidence);
        assert_eq!(values.authority, 88.0);
        assert!(values.clarity > 50.0 && values.energy > 50.0);
        assert_eq!(values.rapport, 50.0);
    }

    #[test]
    fn hesitation_lowers_clarity_and_authority() {
        let values = with_signal(SignalType::Hesitation);
        assert!(values.clarity < 50.0);
        assert!(values.authority < 50.0);
        assert!(
            values.clarity < values.authority,
            "disfluency is a clarity cue first"
        );
    }

    #[test]
    fn uncertainty_lowers_authority() {
        assert!(with_signal(SignalType::Uncertainty).authority < 50.0);
    }

    #[test]
    fn confusion_lowers_clarity() {
        assert!(with_signal(SignalType::Confusion).clarity < 50.0);
    }

    #[test]
    fn agreement_raises_rapport_and_tension_lowers_it() {
        assert!(with_signal(SignalType::Agreement).rapport > 50.0);
        assert!(with_signal(SignalType::Tension).rapport < 50.0);
    }

    #[test]
    fn interest_raises_learning_and_frustration_lowers_it() {
        assert!(with_signal(SignalType::Interest).learning > 50.0);
        assert!(with_signal(SignalType::Frustration).learning < 50.0);
    }

    #[test]
    fn engaged_raises_energy_rapport_learning_and_disengaged_lowers_them() {
        let engaged = score(&[state(EngagementLevel::Engaged, 0.0, 10.0)], &[]);
        assert_eq!(
            engaged,
            QualityValues::from_dimensions([50.0, 50.0, 73.0, 65.0, 65.0])
        );
        let disengaged = score(&[state(EngagementLevel::Disengaged, 0.0, 10.0)], &[]);
        assert_eq!(
            disengaged,
            QualityValues::from_dimensions([50.0, 50.0, 27.0, 35.0, 35.0])
        );
    }

    #[test]
    fn stronger_probability_moves_further() {
        let at = |p| {
            score(
                &[state(EngagementLevel::Neutral, 0.0, 10.0)],
                &[signal(SignalType::Confidence, p, 0.0, 10.0)],
            )
            .authority
        };
        assert!(at(Probability::Low) < at(Probability::Medium));
        assert!(at(Probability::Medium) < at(Probability::High));
    }

    #[test]
    fn missing_probability_counts_as_medium() {
        let unknown = SignalEvidence {
            probability: None,
            ..signal(SignalType::Confidence, Probability::Low, 0.0, 10.0)
        };
        let medium = signal(SignalType::Confidence, Probability::Medium, 0.0, 10.0);
        assert_eq!(score(&[], &[unknown]), score(&[], &[medium]));
    }

    #[test]
    fn density_not_count_drives_the_score() {
        // The same signal over 5 s of a 10 s span or 50 s of a 100 s span
        // is the same share of the conversation.
        let short = score(
            &[state(EngagementLevel::Neutral, 0.0, 10.0)],
            &[signal(SignalType::Interest, Probability::High, 0.0, 5.0)],
        );
        let long = score(
            &[state(EngagementLevel::Neutral, 0.0, 100.0)],
            &[signal(SignalType::Interest, Probability::High, 0.0, 50.0)],
        );
        assert_eq!(short, long);
        // And a brief signal in a long span barely moves it.
        let brief = score(
            &[state(EngagementLevel::Neutral, 0.0, 100.0)],
            &[signal(SignalType::Interest, Probability::High, 0.0, 5.0)],
        );
        assert!(brief.learning < short.learning);
        assert!(brief.learning > 50.0);
    }

    #[test]
    fn signals_without_engagement_are_a_density_over_their_own_stretch() {
        let values = score(
            &[],
            &[
                signal(SignalType::Agreement, Probability::High, 0.0, 5.0),
                signal(SignalType::Tension, Probability::High, 15.0, 20.0),
            ],
        );
        let mut acc = QualityAccumulator::new();
        acc.add_signal(&signal(SignalType::Agreement, Probability::High, 0.0, 5.0));
        acc.add_signal(&signal(SignalType::Tension, Probability::High, 15.0, 20.0));
        assert_eq!(acc.covered_seconds(), 20.0);
        assert_eq!(acc.values(), values);
    }

    #[test]
    fn degenerate_spans_are_ignored() {
        let mut acc = QualityAccumulator::new();
        for (start, end) in [
            (5.0, 5.0),
            (5.0, 1.0),
            (f64::NAN, 1.0),
            (0.0, f64::NAN),
            (0.0, f64::INFINITY),
            (f64::NEG_INFINITY, 0.0),
            (-f64::MAX, f64::MAX),
        ] {
            acc.add_signal(&signal(SignalType::Stress, Probability::High, start, end));
            acc.add_engagement(&state(EngagementLevel::Disengaged, start, end));
        }
        assert!(acc.is_empty());
        assert_eq!(acc.values(), QualityValues::NEUTRAL);
    }

    #[test]
    fn spans_longer_than_the_cap_are_ignored_and_shorter_ones_count() {
        let mut acc = QualityAccumulator::new();
        acc.add_signal(&signal(SignalType::Confidence, Probability::High, 0.0, 2e9));
        acc.add_engagement(&state(EngagementLevel::Engaged, 0.0, f64::MAX));
        assert!(acc.is_empty());

        for _ in 0..4 {
            acc.add_signal(&signal(
                SignalType::Confidence,
                Probability::High,
                0.0,
                MAX_SPAN_SECONDS,
            ));
            acc.add_engagement(&state(EngagementLevel::Engaged, 0.0, MAX_SPAN_SECONDS));
        }
        let values = acc.values();
        assert!(values.authority > 50.0 && values.energy > 50.0);
        assert!(values
            .dimensions()
            .iter()
            .all(|s| (0.0..=100.0).contains(s)));
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let a_signals = [signal(SignalType::Interest, Probability::Low, 0.0, 5.0)];
        let b_signals = [signal(SignalType::Hesitation, Probability::High, 7.0, 12.0)];
        let mut a = QualityAccumulator::new();
        a.add_engagement(&state(EngagementLevel::Engaged, 0.0, 5.0));
        a.add_signal(&a_signals[0]);
        let mut b = QualityAccumulator::new();
        b.add_engagement(&state(EngagementLevel::Neutral, 5.0, 12.0));
        b.add_signal(&b_signals[0]);
        a.merge(&b);
        let all = score(
            &[
                state(EngagementLevel::Engaged, 0.0, 5.0),
                state(EngagementLevel::Neutral, 5.0, 12.0),
            ],
            &[a_signals[0], b_signals[0]],
        );
        assert_eq!(a.values(), all);
    }

    #[test]
    fn values_over_a_longer_span_dilutes() {
        let mut acc = QualityAccumulator::new();
        acc.add_signal(&signal(SignalType::Interest, Probability::High, 0.0, 5.0));
        let own = acc.values().get(Dimension::Learning);
        let diluted = acc.values_over(10.0).get(Dimension::Learning);
        assert!(50.0 < diluted && diluted < own);
        // A shorter span than the evidence covers never concentrates it.
        assert_eq!(acc.values_over(1.0), acc.values());
    }
}
