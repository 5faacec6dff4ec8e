//! A speaker's running baseline for one measurement: mean and spread of what
//! this speaker has done so far, shrunk toward a population prior while
//! little has been heard.
//!
//! The baseline after `n` observations is the precision-weighted blend of a
//! prior worth `prior_weight` pseudo-observations and the running sample
//! (Welford's algorithm), so the first windows are judged mostly against
//! population norms and later ones against the speaker's own habits. A
//! measurement with no sensible population norm (loudness depends on the
//! microphone, mean pitch on the speaker) has `prior_weight` 0: it yields no
//! z-score until the speaker has been heard in [`MIN_OBSERVATIONS`] windows,
//! since one window says nothing about how much a speaker varies.

/// Observations (prior weight included) a baseline needs before it judges.
pub const MIN_OBSERVATIONS: f64 = 2.0;

/// A population norm: mean, standard deviation and how many windows it is
/// worth against the speaker's own observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// Population mean.
    pub mean: f64,
    /// Population standard deviation (also the spread used while only the
    /// prior is known).
    pub sd: f64,
    /// Pseudo-observations the prior counts for; 0 means no prior.
    pub weight: f64,
    /// Smallest spread ever used, so a very steady speaker does not turn
    /// noise into large z-scores.
    pub sd_floor: f64,
}

/// Running statistics of one measurement for one speaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Baseline {
    prior: Prior,
    n: f64,
    mean: f64,
    m2: f64,
}

impl Baseline {
    /// An empty baseline with `prior`.
    pub fn new(prior: Prior) -> Baseline {
        Baseline {
            prior,
            n: 0.0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    /// Observations folded in so far.
    pub fn count(&self) -> f64 {
        self.n
    }

    /// The blended mean, or `None` before anything is known.
    pub fn mean(&self) -> Option<f64> {
        let w = self.prior.weight;
        if w + self.n <= 0.0 {
            return None;
        }
        Some((w * self.prior.mean + self.n * self.mean) / (w + self.n))
    }

    /// The blended standard deviation, never below the floor.
    pub fn sd(&self) -> f64 {
        let w = self.prior.weight;
        let total = w + self.n;
        let variance = if total > 0.0 {
            (w * self.prior.sd * self.prior.sd + self.m2) / total
        } else {
            self.prior.sd * self.prior.sd
        };
        variance.sqrt().max(self.prior.sd_floor)
    }

    /// How many spreads `value` lies above (positive) or below the baseline,
    /// or `None` when the baseline rests on fewer than [`MIN_OBSERVATIONS`]
    /// or the value is not finite.
    pub fn z(&self, value: f64) -> Option<f64> {
        if !value.is_finite() || self.prior.weight + self.n < MIN_OBSERVATIONS {
            return None;
        }
        let mean = self.mean()?;
        Some((value - mean) / self.sd())
    }

    /// Folds an observation in (Welford); non-finite values are ignored.
    pub fn observe(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.n += 1.0;
        let delta = value - self.mean;
        self.mean += delta / self.n;
        self.m2 += delta * (value - self.mean);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: Prior = Prior {
        mean: 4.5,
        sd: 1.0,
        weight: 3.0,
        sd_floor: 0.3,
    };

    #[test]
    fn starts_at_the_prior_and_moves_toward_the_speaker() {
        let mut b = Baseline::new(RATE);
        assert_eq!(b.mean(), Some(4.5));
        assert_eq!(b.z(2.5), Some(-2.0));
        for _ in 0..30 {
            b.observe(3.0);
        }
        let mean = b.mean().unwrap();
        assert!((mean - 3.136).abs() < 0.01, "{mean}");
        assert!(
            b.z(3.0).unwrap().abs() < 0.5,
            "a slow speaker's own rate is normal for them"
        );
    }

    #[test]
    fn without_a_prior_there_is_no_z_until_heard_twice() {
        let mut b = Baseline::new(Prior {
            mean: 0.0,
            sd: 3.0,
            weight: 0.0,
            sd_floor: 1.5,
        });
        assert_eq!(b.z(-20.0), None);
        b.observe(-20.0);
        assert_eq!(b.z(-20.0), None, "one window says nothing about spread");
        b.observe(-20.0);
        assert_eq!(b.z(-20.0), Some(0.0));
        assert_eq!(
            b.sd(),
            1.5,
            "the floor holds a steady speaker's zero spread"
        );
        assert_eq!(b.z(-17.0), Some(2.0));
        b.observe(f64::NAN);
        assert_eq!(b.count(), 2.0);
    }
}
