//! The engagement lifecycle of one session: decides when a window's
//! engagement level becomes an `engagement.updated` event.
//!
//! The interface emits `engagement.updated` once when engagement is first
//! established and again only when the level differs from the last emitted
//! level. "Established" here means the first level the caller observes: a
//! window in which the analyzer could not judge engagement (nothing heard or
//! seen) is simply not observed, so it neither establishes nor changes it.

use crate::wire::{EngagementLevel, EngagementUpdated, Seconds};

/// Tracks the last emitted engagement level of one session.
#[derive(Debug, Clone, Default)]
pub struct EngagementTracker {
    /// Compared against the last *emitted* level, not the last observed one,
    /// so the event stream never repeats a level whatever the input.
    last_emitted: Option<EngagementLevel>,
}

impl EngagementTracker {
    /// A tracker with engagement not yet established.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the level of a window starting at `start` (session seconds) and
    /// returns the event to send, if any: on the first observation, and on
    /// each change of level after it.
    pub fn observe(&mut self, start: Seconds, level: EngagementLevel) -> Option<EngagementUpdated> {
        if self.last_emitted == Some(level) {
            return None;
        }
        self.last_emitted = Some(level);
        Some(EngagementUpdated {
            state: level,
            start,
        })
    }

    /// The last emitted level; `None` until engagement is established.
    pub fn current(&self) -> Option<EngagementLevel> {
        self.last_emitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EngagementLevel::{Disengaged, Engaged, Neutral};

    #[test]
    fn first_observation_establishes_engagement() {
        let mut tracker = EngagementTracker::new();
        assert_eq!(tracker.current(), None);
        assert_eq!(
            tracker.observe(5.0, Neutral),
            Some(EngagementUpdated {
                state: Neutral,
                start: 5.0
            })
        );
        assert_eq!(tracker.current(), Some(Neutral));
    }

    #[test]
    fn change_of_level_emits_with_the_window_start() {
        let mut tracker = EngagementTracker::new();
        tracker.observe(0.0, Engaged);
        assert_eq!(
            tracker.observe(5.0, Disengaged),
            Some(EngagementUpdated {
                state: Disengaged,
                start: 5.0
            })
        );
        assert_eq!(
            tracker.observe(10.0, Engaged),
            Some(EngagementUpdated {
                state: Engaged,
                start: 10.0
            }),
            "returning to an earlier level is a change"
        );
    }

    #[test]
    fn repeating_the_level_never_emits() {
        let mut tracker = EngagementTracker::new();
        tracker.observe(0.0, Engaged);
        for start in [5.0, 10.0, 15.0] {
            assert_eq!(tracker.observe(start, Engaged), None);
        }
        assert_eq!(tracker.current(), Some(Engaged));
    }
}
