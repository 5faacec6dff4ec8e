//! The one table of evidence weights behind every CQI score, and its version.
//!
//! The table is data, not code: the crate docs print the same table with the
//! literature behind each row, and a test checks the two never drift apart.

use crate::vocab::{Dimension, EngagementLevel, SignalType};

/// Version of the scoring formula (weights, gain and normalisation).
///
/// Bump it whenever a weight or [`GAIN`] changes, because the same evidence
/// then scores differently and stored results are no longer comparable.
pub const FORMULA_VERSION: &str = "1.0";

/// How steeply evidence density moves a score away from 50.
///
/// With gain 1, a dimension's strongest cue (weight 1) present at high
/// probability over the whole span scores `50 + 50·tanh(1)` = 88 (excellent);
/// the same cue at low probability scores 66 (good).
pub const GAIN: f64 = 1.0;

/// One piece of behavioural evidence the index reads: a detected signal or
/// an engagement state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cue {
    /// A detected social signal.
    Signal(SignalType),
    /// The engagement state of a span.
    Engagement(EngagementLevel),
}

/// Weight of each cue for each dimension, in interface order
/// (clarity, authority, energy, rapport, learning).
///
/// Positive weights are evidence for a dimension, negative against it, zero
/// means the cue says nothing about it. A signal's weight is further scaled by
/// its probability ([`crate::Probability::weight`]); an engagement state
/// counts at full weight because the state is the analyzer's decision, not a
/// likelihood.
pub const WEIGHTS: [(Cue, [f64; 5]); 16] = [
    (
        Cue::Signal(SignalType::Agreement),
        [0.0, 0.0, 0.0, 0.8, 0.3],
    ),
    (
        Cue::Signal(SignalType::Confidence),
        [0.4, 1.0, 0.3, 0.0, 0.0],
    ),
    (
        Cue::Signal(SignalType::Confusion),
        [-0.8, 0.0, 0.0, 0.0, 0.2],
    ),
    (
        Cue::Signal(SignalType::Disagreement),
        [0.0, 0.0, 0.0, -0.6, 0.0],
    ),
    (
        Cue::Signal(SignalType::Disengagement),
        [0.0, 0.0, -0.8, -0.4, -0.5],
    ),
    (
        Cue::Signal(SignalType::Engagement),
        [0.0, 0.0, 0.8, 0.4, 0.5],
    ),
    (
        Cue::Signal(SignalType::Frustration),
        [-0.2, 0.0, 0.0, -0.5, -0.6],
    ),
    (
        Cue::Signal(SignalType::Hesitation),
        [-0.8, -0.5, -0.2, 0.0, 0.0],
    ),
    (Cue::Signal(SignalType::Interest), [0.0, 0.0, 0.5, 0.3, 0.8]),
    (
        Cue::Signal(SignalType::Skepticism),
        [0.0, -0.3, 0.0, -0.2, 0.0],
    ),
    (
        Cue::Signal(SignalType::Stress),
        [-0.3, -0.5, 0.3, -0.3, 0.0],
    ),
    (
        Cue::Signal(SignalType::Tension),
        [-0.2, 0.0, 0.0, -0.8, 0.0],
    ),
    (
        Cue::Signal(SignalType::Uncertainty),
        [-0.4, -0.7, 0.0, 0.0, 0.0],
    ),
    (
        Cue::Engagement(EngagementLevel::Engaged),
        [0.0, 0.0, 0.5, 0.3, 0.3],
    ),
    (
        Cue::Engagement(EngagementLevel::Disengaged),
        [0.0, 0.0, -0.5, -0.3, -0.3],
    ),
    (
        Cue::Engagement(EngagementLevel::Neutral),
        [0.0, 0.0, 0.0, 0.0, 0.0],
    ),
];

impl Cue {
    /// This cue's weights for the five dimensions, in interface order.
    pub fn weights(self) -> [f64; 5] {
        WEIGHTS
            .iter()
            .find(|(cue, _)| *cue == self)
            .map(|(_, weights)| *weights)
            // Every cue is in the table (a test enforces it); a missing row
            // would mean "no evidence", never a panic.
            .unwrap_or([0.0; 5])
    }

    /// This cue's weight for one dimension.
    pub fn weight(self, dimension: Dimension) -> f64 {
        self.weights()[dimension_index(dimension)]
    }
}

/// Position of a dimension in interface order, matching [`WEIGHTS`] columns
/// and [`crate::QualityValues::dimensions`].
pub(crate) const fn dimension_index(dimension: Dimension) -> usize {
    match dimension {
        Dimension::Clarity => 0,
        Dimension::Authority => 1,
        Dimension::Energy => 2,
        Dimension::Rapport => 3,
        Dimension::Learning => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cue_has_exactly_one_row() {
        let cues = SignalType::ALL
            .iter()
            .map(|&s| Cue::Signal(s))
            .chain(EngagementLevel::ALL.iter().map(|&l| Cue::Engagement(l)));
        for cue in cues {
            let rows = WEIGHTS.iter().filter(|(c, _)| *c == cue).count();
            assert_eq!(rows, 1, "{cue:?} has {rows} rows");
        }
    }

    #[test]
    fn weights_are_bounded_and_neutral_is_silent() {
        for (cue, weights) in WEIGHTS {
            assert!(weights.iter().all(|w| (-1.0..=1.0).contains(w)), "{cue:?}");
        }
        assert_eq!(
            Cue::Engagement(EngagementLevel::Neutral).weights(),
            [0.0; 5]
        );
    }

    #[test]
    fn every_dimension_has_evidence_both_ways() {
        // A dimension that could only rise (or only fall) would make its
        // score a count of one kind of cue rather than a balance.
        for dimension in Dimension::ALL {
            let column = WEIGHTS.iter().map(|(_, w)| w[dimension_index(*dimension)]);
            let (mut up, mut down) = (false, false);
            for w in column {
                up |= w > 0.0;
                down |= w < 0.0;
            }
            assert!(up && down, "{dimension} is one-sided");
        }
    }

    /// The crate docs print the weight table; this keeps the printed copy
    /// identical to the one the code uses.
    #[test]
    fn documented_table_matches_the_code() {
        let docs = include_str!("lib.rs");
        let mut seen = 0;
        for line in docs.lines() {
            let Some(row) = line.strip_prefix("//! | `") else {
                continue;
            };
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells[0].trim_end_matches('`');
            let cue = SignalType::parse(name)
                .map(Cue::Signal)
                .or_else(|| {
                    name.strip_prefix("state ")
                        .and_then(EngagementLevel::parse)
                        .map(Cue::Engagement)
                })
                .unwrap_or_else(|| panic!("unknown cue {name:?} in the docs table"));
            let printed: Vec<f64> = cells[1..6]
                .iter()
                .map(|c| c.parse().unwrap_or_else(|_| panic!("bad weight {c:?}")))
                .collect();
            assert_eq!(printed, cue.weights(), "docs row for {name}");
            seen += 1;
        }
        assert_eq!(seen, WEIGHTS.len(), "docs table rows");
    }
}
