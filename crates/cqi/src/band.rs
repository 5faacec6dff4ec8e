//! The interface's interpretation bands for a 0-100 score.

use std::fmt;

/// How a score reads: the interface's bands 0-30 weak, 30-50 below average,
/// 50-65 moderate, 65-80 good, 80-100 excellent.
///
/// The interface's ranges share their end points; here every band is
/// half-open, `[lower, upper)`, so a boundary score belongs to the band above
/// it (30 is below average, 50 moderate, 65 good, 80 excellent) and the
/// neutral 50 reads moderate. Excellent also takes 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Band {
    /// `[0, 30)`.
    Weak,
    /// `[30, 50)`.
    BelowAverage,
    /// `[50, 65)`.
    Moderate,
    /// `[65, 80)`.
    Good,
    /// `[80, 100]`.
    Excellent,
}

impl Band {
    /// Every band, weakest first.
    pub const ALL: [Band; 5] = [
        Band::Weak,
        Band::BelowAverage,
        Band::Moderate,
        Band::Good,
        Band::Excellent,
    ];

    /// The band a score falls in. Scores below 0 read weak and above 100
    /// excellent; NaN is treated like a missing score, the neutral 50
    /// (moderate), as [`crate::QualityValues::from_dimensions`] does.
    pub fn of(score: f64) -> Band {
        if score.is_nan() {
            Band::Moderate
        } else if score < 30.0 {
            Band::Weak
        } else if score < 50.0 {
            Band::BelowAverage
        } else if score < 65.0 {
            Band::Moderate
        } else if score < 80.0 {
            Band::Good
        } else {
            Band::Excellent
        }
    }

    /// The interface's name of the band, e.g. `"below average"`.
    pub const fn label(self) -> &'static str {
        match self {
            Band::Weak => "weak",
            Band::BelowAverage => "below average",
            Band::Moderate => "moderate",
            Band::Good => "good",
            Band::Excellent => "excellent",
        }
    }

    /// The lowest score in the band.
    pub const fn lower(self) -> f64 {
        match self {
            Band::Weak => 0.0,
            Band::BelowAverage => 30.0,
            Band::Moderate => 50.0,
            Band::Good => 65.0,
            Band::Excellent => 80.0,
        }
    }
}

impl fmt::Display for Band {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_boundary_belongs_to_the_band_above() {
        let cases = [
            (0.0, Band::Weak),
            (29.999, Band::Weak),
            (30.0, Band::BelowAverage),
            (49.999, Band::BelowAverage),
            (50.0, Band::Moderate),
            (64.999, Band::Moderate),
            (65.0, Band::Good),
            (79.999, Band::Good),
            (80.0, Band::Excellent),
            (100.0, Band::Excellent),
        ];
        for (score, band) in cases {
            assert_eq!(Band::of(score), band, "score {score}");
        }
    }

    #[test]
    fn out_of_range_scores_still_have_a_band() {
        assert_eq!(Band::of(-5.0), Band::Weak);
        assert_eq!(Band::of(f64::NEG_INFINITY), Band::Weak);
        assert_eq!(Band::of(150.0), Band::Excellent);
        assert_eq!(Band::of(f64::INFINITY), Band::Excellent);
        assert_eq!(Band::of(f64::NAN), Band::Moderate);
    }

    #[test]
    fn labels_are_the_interface_names() {
        let labels: Vec<_> = Band::ALL.iter().map(|b| b.to_string()).collect();
        assert_eq!(
            labels,
            ["weak", "below average", "moderate", "good", "excellent"]
        );
    }

    #[test]
    fn lower_bounds_map_back_to_their_band() {
        for band in Band::ALL {
            assert_eq!(Band::of(band.lower()), band);
        }
    }
}
