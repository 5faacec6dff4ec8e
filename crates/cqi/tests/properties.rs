//! Invariants of the index that must hold for any evidence, checked with proptest.

use attune_cqi::{
    score, timeline, EngagementEvidence, EngagementLevel, Probability, QualityAccumulator,
    QualityValues, SignalEvidence, SignalType,
};
use proptest::prelude::*;

/// Times drawn mostly from a plausible session, with some hostile values.
fn time() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => 0.0..600.0f64,
        1 => -100.0..0.0f64,
        1 => prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            -f64::MAX,
            0.0,
            1e-300,
        ]),
    ]
}

fn signal() -> impl Strategy<Value = SignalEvidence> {
    (
        prop::sample::select(SignalType::ALL),
        prop::option::of(prop::sample::select(vec![
            Probability::Low,
            Probability::Medium,
            Probability::High,
        ])),
        time(),
        time(),
    )
        .prop_map(|(signal_type, probability, start, end)| SignalEvidence {
            signal_type,
            probability,
            start,
            end,
        })
}

fn engagement() -> impl Strategy<Value = EngagementEvidence> {
    (prop::sample::select(EngagementLevel::ALL), time(), time())
        .prop_map(|(level, start, end)| EngagementEvidence { level, start, end })
}

fn evidence() -> impl Strategy<Value = (Vec<EngagementEvidence>, Vec<SignalEvidence>)> {
    (
        prop::collection::vec(engagement(), 0..20),
        prop::collection::vec(signal(), 0..30),
    )
}

fn assert_well_formed(values: &QualityValues) {
    for s in values.dimensions() {
        assert!(
            (0.0..=100.0).contains(&s),
            "score {s} out of range in {values:?}"
        );
    }
    let mean = values.dimensions().iter().sum::<f64>() / 5.0;
    assert!(
        (values.quality_index - mean).abs() <= 1e-9,
        "index {} is not the mean {mean}",
        values.quality_index
    );
}

proptest! {
    #[test]
    fn every_score_is_in_range_and_the_index_is_the_mean((engagement, signals) in evidence()) {
        assert_well_formed(&score(&engagement, &signals));
    }

    #[test]
    fn accumulation_order_does_not_matter(
        (engagement, signals) in evidence(),
        seed in any::<u64>(),
    ) {
        let forward = score(&engagement, &signals);

        // Interleave the same evidence in a seed-driven order, backwards.
        let mut order: Vec<(bool, usize)> = (0..engagement.len())
            .map(|i| (true, i))
            .chain((0..signals.len()).map(|i| (false, i)))
            .collect();
        let mut state = seed | 1;
        for i in (1..order.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut acc = QualityAccumulator::new();
        for (is_engagement, i) in order {
            if is_engagement {
                acc.add_engagement(&engagement[i]);
            } else {
                acc.add_signal(&signals[i]);
            }
        }
        prop_assert_eq!(acc.values(), forward);
    }

    #[test]
    fn split_and_merged_equals_whole((engagement, signals) in evidence(), cut in 0usize..30) {
        let (mut left, mut right) = (QualityAccumulator::new(), QualityAccumulator::new());
        for (i, e) in engagement.iter().enumerate() {
            if i < cut { left.add_engagement(e) } else { right.add_engagement(e) }
        }
        for (i, s) in signals.iter().enumerate() {
            if i < cut { left.add_signal(s) } else { right.add_signal(s) }
        }
        left.merge(&right);
        let whole = score(&engagement, &signals);
        // Merging regroups the sums, which may differ in the last bit; the
        // whole-number rounding absorbs that except at an exact .5, which
        // tanh of a non-zero rational never produces.
        prop_assert_eq!(left.values(), whole);
    }

    #[test]
    fn only_neutral_engagement_is_neutral(
        spans in prop::collection::vec((time(), time()), 0..10),
    ) {
        let neutral: Vec<_> = spans
            .into_iter()
            .map(|(start, end)| EngagementEvidence { level: EngagementLevel::Neutral, start, end })
            .collect();
        prop_assert_eq!(score(&neutral, &[]), QualityValues::NEUTRAL);
    }

    #[test]
    fn timeline_has_one_entry_per_period_started(
        // Multiples of 1/8 are exact in binary, so `span / period` is
        // correctly rounded and its ceiling is the true period count.
        period_eighths in 1u32..800,
        span_eighths in 1u32..40_000,
        (engagement, signals) in evidence(),
    ) {
        let period = f64::from(period_eighths) / 8.0;
        let span_end = f64::from(span_eighths) / 8.0;
        let periods = timeline(period, span_end, &engagement, &signals);
        prop_assert_eq!(periods.len(), (span_end / period).ceil() as usize);
        prop_assert_eq!(periods[0].start, 0.0);
        prop_assert_eq!(periods[periods.len() - 1].end, span_end);
        for pair in periods.windows(2) {
            prop_assert_eq!(pair[0].end, pair[1].start);
        }
        for p in &periods {
            prop_assert!(p.end > p.start);
            assert_well_formed(&p.values);
        }
    }

    #[test]
    fn timeline_periods_without_evidence_are_neutral(
        period in 0.5..30.0f64,
        span_end in 1.0..600.0f64,
        evidence_start in 0.0..600.0f64,
        evidence_length in 0.1..60.0f64,
    ) {
        let evidence_end = evidence_start + evidence_length;
        let engaged = EngagementEvidence {
            level: EngagementLevel::Engaged,
            start: evidence_start,
            end: evidence_end,
        };
        let periods = timeline(period, span_end, &[engaged], &[]);
        prop_assert!(!periods.is_empty());
        for p in &periods {
            let overlap = p.end.min(evidence_end) - p.start.max(evidence_start);
            if overlap <= 0.0 {
                prop_assert_eq!(p.values, QualityValues::NEUTRAL, "period {}..{}", p.start, p.end);
            } else if overlap >= 0.05 * (p.end - p.start) {
                // Enough engaged time to move energy past rounding.
                prop_assert!(p.values.energy > 50.0, "period {}..{}", p.start, p.end);
            }
        }
    }

    #[test]
    fn timeline_with_hostile_arguments_never_panics(
        period in time(),
        span_end in time(),
        (engagement, signals) in evidence(),
    ) {
        for p in timeline(period, span_end, &engagement, &signals) {
            assert_well_formed(&p.values);
        }
    }
}
