//! Wall-clock time behind a trait, so expiry, rate windows and daily quotas
//! can be tested by moving a clock instead of sleeping.
//!
//! Only decisions about calendar time read this clock (token and job expiry,
//! requests per minute, the daily quota's day). Waiting on the runtime
//! (`wait_seconds`, shutdown grace) uses tokio's timers as usual.

use attune_core::wire::Timestamp;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use time::{Date, Duration, Time};

/// A source of the current UTC time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stands still until moved: for tests of expiry and rate
/// windows.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward by `seconds` (backward when negative).
    pub fn advance(&self, seconds: i64) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now = now.plus_seconds(seconds);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: Timestamp) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = at;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The UTC calendar day of `at`: the unit of the daily quota.
pub fn utc_day(at: Timestamp) -> Date {
    at.datetime().date()
}

/// The first instant of the UTC day after `at`'s: when a daily quota resets.
pub fn next_utc_midnight(at: Timestamp) -> Timestamp {
    let day = utc_day(at);
    let next = day.next_day().unwrap_or(day);
    let midnight = next.with_time(Time::MIDNIGHT).assume_utc();
    Timestamp::from_datetime(midnight)
}

/// Milliseconds from `from` to `to` (negative when `to` is earlier).
pub fn millis_between(from: Timestamp, to: Timestamp) -> i64 {
    to.unix_millis() - from.unix_millis()
}

/// `at` moved by `millis` milliseconds.
pub fn plus_millis(at: Timestamp, millis: i64) -> Timestamp {
    Timestamp::from_datetime(at.datetime().saturating_add(Duration::milliseconds(millis)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let start = Timestamp::from_unix_millis(1_800_000_000_000).unwrap();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(3600);
        assert_eq!(millis_between(start, clock.now()), 3_600_000);
        clock.set(start);
        assert_eq!(clock.now(), start);
    }

    #[test]
    fn the_daily_quota_resets_at_the_next_utc_midnight() {
        let at: Timestamp = serde_json::from_str("\"2026-11-22T23:59:59.999Z\"").unwrap();
        assert_eq!(
            next_utc_midnight(at).to_string(),
            "2026-11-23T00:00:00.000Z"
        );
        let midnight: Timestamp = serde_json::from_str("\"2026-11-23T00:00:00Z\"").unwrap();
        assert_eq!(
            next_utc_midnight(midnight).to_string(),
            "2026-11-24T00:00:00.000Z"
        );
        assert_eq!(utc_day(at).to_string(), "2026-11-22");
        assert_eq!(plus_millis(at, 1), midnight);
    }
}
