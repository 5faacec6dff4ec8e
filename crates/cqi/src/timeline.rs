//! The CQI timeline: evidence cut into fixed periods, one score block each.

use crate::accumulator::{span_length, EngagementEvidence, QualityAccumulator, SignalEvidence};
use crate::values::QualityValues;

/// The most entries [`timeline`] returns; a finer period is widened so the
/// whole span still fits. At the 10 s default this is over eleven days of
/// media, far beyond any upload or session the interface allows.
pub const MAX_TIMELINE_PERIODS: usize = 100_000;

/// One period of the timeline and its scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelinePeriod {
    /// Period start in seconds.
    pub start: f64,
    /// Period end in seconds.
    pub end: f64,
    /// Scores of the evidence inside the period.
    pub values: QualityValues,
}

/// Cuts `[0, span_end)` into periods of `period_seconds` (the last one
/// shorter when the span is not a whole number of periods) and scores each.
///
/// - There are `ceil(span_end / period_seconds)` entries, contiguous from 0
///   to `span_end`, at most [`MAX_TIMELINE_PERIODS`].
/// - Evidence overlapping two periods counts in each by its overlap; evidence
///   outside `[0, span_end)` is not counted.
/// - Each period is treated as analyzed from end to end, so its evidence is a
///   density over the whole period, and a period without evidence reads all 50.
/// - A non-positive or non-finite `period_seconds` or `span_end` gives no
///   entries.
pub fn timeline(
    period_seconds: f64,
    span_end: f64,
    engagement: &[EngagementEvidence],
    signals: &[SignalEvidence],
) -> Vec<TimelinePeriod> {
    let (step, bounds) = period_bounds(period_seconds, span_end);
    let mut periods = vec![QualityAccumulator::new(); bounds.len()];

    for e in engagement {
        for_each_overlap(&bounds, step, e.start, e.end, |index, start, end| {
            periods[index].add_engagement(&EngagementEvidence { start, end, ..*e });
        });
    }
    for s in signals {
        for_each_overlap(&bounds, step, s.start, s.end, |index, start, end| {
            periods[index].add_signal(&SignalEvidence { start, end, ..*s });
        });
    }

    bounds
        .iter()
        .zip(&periods)
        .map(|(&(start, end), accumulator)| TimelinePeriod {
            start,
            end,
            values: accumulator.values_over(end - start),
        })
        .collect()
}

/// The period length actually used (widened past [`MAX_TIMELINE_PERIODS`])
/// and the `(start, end)` of every period of `[0, span_end)`.
fn period_bounds(period_seconds: f64, span_end: f64) -> (f64, Vec<(f64, f64)>) {
    let usable = |x: f64| x.is_finite() && x > 0.0;
    if !usable(period_seconds) || !usable(span_end) {
        return (period_seconds, Vec::new());
    }
    let mut period = period_seconds;
    if span_end / period > MAX_TIMELINE_PERIODS as f64 {
        period = span_end / MAX_TIMELINE_PERIODS as f64;
    }
    let mut bounds = Vec::new();
    // Starts are computed as k·period rather than summed, so rounding never
    // accumulates over a long span.
    while bounds.len() < MAX_TIMELINE_PERIODS {
        let start = bounds.len() as f64 * period;
        if start >= span_end {
            break;
        }
        bounds.push((start, ((bounds.len() + 1) as f64 * period).min(span_end)));
    }
    // Only reachable when the period was widened and rounding left the last
    // sliver of the span after the last entry.
    if let Some(last) = bounds.last_mut() {
        last.1 = span_end;
    }
    (period, bounds)
}

/// Calls `f(index, start, end)` for every period `[start, end)` overlaps by a
/// positive length, with the overlap's bounds.
fn for_each_overlap(
    bounds: &[(f64, f64)],
    step: f64,
    start: f64,
    end: f64,
    mut f: impl FnMut(usize, f64, f64),
) {
    if span_length(start, end).is_none() {
        return;
    }
    // The estimate may be one off after rounding, so start one earlier and
    // let the overlap test decide.
    let first = (start / step).floor().max(0.0);
    let first = if first >= bounds.len() as f64 {
        return;
    } else {
        (first as usize).saturating_sub(1)
    };
    for (index, &(p_start, p_end)) in bounds.iter().enumerate().skip(first) {
        if p_start >= end {
            break;
        }
        let (lo, hi) = (start.max(p_start), end.min(p_end));
        if hi > lo {
            f(index, lo, hi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulator::score;
    use crate::vocab::{EngagementLevel, Probability, SignalType};

    fn engaged(start: f64, end: f64) -> EngagementEvidence {
        EngagementEvidence {
            level: EngagementLevel::Engaged,
            start,
            end,
        }
    }

    fn interest(start: f64, end: f64) -> SignalEvidence {
        SignalEvidence {
            signal_type: SignalType::Interest,
            probability: Some(Probability::High),
            start,
            end,
        }
    }

    #[test]
    fn periods_are_contiguous_and_the_last_is_partial() {
        let periods = timeline(10.0, 25.0, &[], &[]);
        let spans: Vec<_> = periods.iter().map(|p| (p.start, p.end)).collect();
        assert_eq!(spans, [(0.0, 10.0), (10.0, 20.0), (20.0, 25.0)]);
        assert!(periods.iter().all(|p| p.values == QualityValues::NEUTRAL));
    }

    #[test]
    fn evidence_is_split_by_overlap() {
        // 5 s of interest straddling the 10 s boundary: 2 s in the first
        // period, 3 s in the second.
        let periods = timeline(10.0, 20.0, &[], &[interest(8.0, 13.0)]);
        let first = periods[0].values.learning;
        let second = periods[1].values.learning;
        assert!(50.0 < first && first < second, "{first} {second}");
        let mut alone = QualityAccumulator::new();
        alone.add_signal(&interest(8.0, 10.0));
        assert_eq!(periods[0].values, alone.values_over(10.0));
    }

    #[test]
    fn a_period_is_scored_over_its_whole_length() {
        // Interest over 5 s of a 10 s period is half density, like 5 s of
        // interest inside 10 s of neutral engagement.
        let periods = timeline(10.0, 10.0, &[], &[interest(0.0, 5.0)]);
        let expected = score(
            &[EngagementEvidence {
                level: EngagementLevel::Neutral,
                start: 0.0,
                end: 10.0,
            }],
            &[interest(0.0, 5.0)],
        );
        assert_eq!(periods[0].values, expected);
    }

    #[test]
    fn engagement_alone_moves_its_period_only() {
        let periods = timeline(5.0, 15.0, &[engaged(5.0, 10.0)], &[]);
        assert_eq!(periods[0].values, QualityValues::NEUTRAL);
        assert!(periods[1].values.energy > 50.0);
        assert_eq!(periods[2].values, QualityValues::NEUTRAL);
    }

    #[test]
    fn evidence_outside_the_span_is_not_counted() {
        let periods = timeline(10.0, 10.0, &[engaged(-10.0, 0.0), engaged(10.0, 20.0)], &[]);
        assert_eq!(periods.len(), 1);
        assert_eq!(periods[0].values, QualityValues::NEUTRAL);
    }

    #[test]
    fn degenerate_arguments_give_no_entries() {
        for (period, end) in [
            (0.0, 10.0),
            (-1.0, 10.0),
            (f64::NAN, 10.0),
            (f64::INFINITY, 10.0),
            (10.0, 0.0),
            (10.0, -5.0),
            (10.0, f64::NAN),
            (10.0, f64::INFINITY),
        ] {
            assert!(timeline(period, end, &[engaged(0.0, 5.0)], &[]).is_empty());
        }
    }

    #[test]
    fn a_tiny_period_is_widened_to_the_cap() {
        let periods = timeline(1e-9, 1e6, &[engaged(0.0, 1e6)], &[]);
        assert_eq!(periods.len(), MAX_TIMELINE_PERIODS);
        assert_eq!(periods[0].start, 0.0);
        assert_eq!(periods.last().map(|p| p.end), Some(1e6));
        assert!(periods.iter().all(|p| p.values.energy > 50.0));
    }
}
