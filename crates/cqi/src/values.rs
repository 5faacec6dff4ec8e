//! The scores object of the index: five dimensions and their mean, each 0-100.

use crate::vocab::Dimension;
use serde::{Deserialize, Serialize, Serializer};

/// The interface's values object: `quality_index` and the five dimension
/// scores, each a number from 0 to 100.
///
/// Dimension scores are whole numbers (as in the interface's examples), and
/// `quality_index` is their exact arithmetic mean, so it is a multiple of 0.2.
/// Whole values serialize as JSON integers (`72`, not `72.0`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityValues {
    /// Arithmetic mean of the five dimension scores.
    #[serde(serialize_with = "whole_if_integral")]
    pub quality_index: f64,
    /// Clarity / Structure.
    #[serde(serialize_with = "whole_if_integral")]
    pub clarity: f64,
    /// Authority / Credibility.
    #[serde(serialize_with = "whole_if_integral")]
    pub authority: f64,
    /// Energy / Presence.
    #[serde(serialize_with = "whole_if_integral")]
    pub energy: f64,
    /// Rapport / Relational Safety.
    #[serde(serialize_with = "whole_if_integral")]
    pub rapport: f64,
    /// Learning / Exploration.
    #[serde(serialize_with = "whole_if_integral")]
    pub learning: f64,
}

impl QualityValues {
    /// The neutral block: every dimension 50, so the index is 50 too.
    pub const NEUTRAL: QualityValues = QualityValues {
        quality_index: 50.0,
        clarity: 50.0,
        authority: 50.0,
        energy: 50.0,
        rapport: 50.0,
        learning: 50.0,
    };

    /// Builds the block from five dimension scores: each is clamped to 0..=100
    /// and rounded to a whole number, and `quality_index` is their mean
    /// rounded to one decimal (exact, since the mean of five integers is a
    /// multiple of 0.2). A non-finite score counts as "no evidence" (50).
    pub fn from_dimensions(scores: [f64; 5]) -> QualityValues {
        let whole = scores.map(|s| {
            if s.is_finite() {
                s.clamp(0.0, 100.0).round()
            } else {
                50.0
            }
        });
        let mean = whole.iter().sum::<f64>() / 5.0;
        QualityValues {
            quality_index: (mean * 10.0).round() / 10.0,
            clarity: whole[0],
            authority: whole[1],
            energy: whole[2],
            rapport: whole[3],
            learning: whole[4],
        }
    }

    /// The score of one dimension.
    pub fn get(&self, dimension: Dimension) -> f64 {
        match dimension {
            Dimension::Clarity => self.clarity,
            Dimension::Authority => self.authority,
            Dimension::Energy => self.energy,
            Dimension::Rapport => self.rapport,
            Dimension::Learning => self.learning,
        }
    }

    /// The five dimension scores in interface order.
    pub fn dimensions(&self) -> [f64; 5] {
        [
            self.clarity,
            self.authority,
            self.energy,
            self.rapport,
            self.learning,
        ]
    }
}

impl Default for QualityValues {
    fn default() -> Self {
        QualityValues::NEUTRAL
    }
}

/// Writes a whole number as a JSON integer, anything else as a float.
fn whole_if_integral<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // Scores are bounded to 0..=100, so the cast is exact whenever fract() is 0.
    if value.fract() == 0.0 && value.abs() <= 1e15 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}
