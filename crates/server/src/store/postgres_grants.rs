//! What this instance holds of the shared request limits, in memory: places and rate
//! tokens granted per account, and what is due to go back (see `postgres_limits`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};

/// What this instance holds for one account.
#[derive(Debug, Default)]
pub(super) struct Grant {
    /// Places granted to this instance (its `limit_holds.held`).
    pub(super) places: u32,
    /// Of which in use by requests in flight.
    pub(super) in_flight: u32,
    /// The fewest unused places since the last return: those went unused
    /// for the whole period.
    pub(super) min_unused: u32,
    /// Whether the account was near its limit at the last visit: unused
    /// places then go back as soon as a request ends.
    pub(super) near_limit: bool,
    /// Rate tokens reserved and not yet used.
    pub(super) tokens: u32,
    /// When they expire (Unix ms, this process's clock).
    pub(super) tokens_until_ms: i64,
    /// The GCRA arrival time the store set at the reservation, when the
    /// unused tokens may go back; `None` when they may not.
    pub(super) tokens_tat: Option<i64>,
    /// The interval they were reserved at.
    pub(super) interval_ms: i64,
    /// The next batch's size.
    pub(super) batch: u32,
}

impl Grant {
    pub(super) fn unused(&self) -> u32 {
        self.places.saturating_sub(self.in_flight)
    }

    /// Takes a place and, unless the rate is `unlimited`, a token, if both
    /// are at hand.
    pub(super) fn take(&mut self, max: u32, real_now: i64, unlimited: bool) -> bool {
        let place = self.in_flight < self.places.min(max);
        let token = unlimited || (self.tokens > 0 && real_now < self.tokens_until_ms);
        if place && token {
            self.in_flight += 1;
            if !unlimited {
                self.tokens -= 1;
            }
            self.min_unused = self.min_unused.min(self.unused());
            true
        } else {
            false
        }
    }
}

/// Something to give back to the store.
#[derive(Debug, Default, PartialEq)]
pub(super) struct GiveBack {
    pub(super) places: u32,
    pub(super) tokens: u32,
    pub(super) interval_ms: i64,
    pub(super) tat: i64,
}

/// This instance's grants of every account, and how long its lease is
/// known to be live. Shared by the store's clones and its heartbeat.
#[derive(Debug, Default)]
pub(super) struct LocalGrants {
    pub(super) accounts: Mutex<HashMap<i64, Grant>>,
    /// Until when (Unix ms) grants may be used: the lease's end at the last
    /// renewal, less a margin.
    pub(super) usable_until_ms: AtomicI64,
    /// The lease's end at the last renewal (Unix ms).
    pub(super) lease_end_ms: AtomicI64,
}

impl LocalGrants {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Grant>> {
        // Every update leaves the map consistent.
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a lease renewed at `renewed_ms` comes after the previous
    /// one ended: the store may then have swept this instance's places, so
    /// its grants must be dropped ([`LocalGrants::drop_grants`]) before they
    /// are used again.
    pub(super) fn lapsed(&self, renewed_ms: i64) -> bool {
        let end = self.lease_end_ms.load(Ordering::Acquire);
        end != 0 && renewed_ms >= end
    }

    /// Forgets every place and token granted to this instance.
    pub(super) fn drop_grants(&self) {
        for grant in self.lock().values_mut() {
            grant.places = 0;
            grant.min_unused = 0;
            grant.tokens = 0;
            grant.tokens_tat = None;
        }
    }

    /// Records a lease renewed at `renewed_ms` until `until_ms`: grants are
    /// usable until then, less a third of the lease (at most 1 s).
    pub(super) fn lease_renewed(&self, renewed_ms: i64, until_ms: i64) {
        let margin = ((until_ms - renewed_ms) / 3).min(1_000);
        self.lease_end_ms.store(until_ms, Ordering::Release);
        self.usable_until_ms
            .store(until_ms - margin, Ordering::Release);
    }

    pub(super) fn usable(&self, real_now: i64) -> bool {
        real_now < self.usable_until_ms.load(Ordering::Acquire)
    }

    /// Frees the place of a request of `account_id` that was answered;
    /// answers what to give back at once, if anything.
    pub(super) fn release(&self, account_id: i64) -> Option<GiveBack> {
        let mut accounts = self.lock();
        let grant = accounts.get_mut(&account_id)?;
        grant.in_flight = grant.in_flight.saturating_sub(1);
        if grant.near_limit && grant.unused() > 0 {
            let places = grant.unused();
            grant.places -= places;
            grant.min_unused = 0;
            return Some(GiveBack {
                places,
                ..GiveBack::default()
            });
        }
        None
    }

    /// Takes out of the grants what went unused for a whole period and the
    /// tokens that expired by `real_now`, and forgets idle accounts.
    pub(super) fn due(&self, real_now: i64) -> Vec<(i64, GiveBack)> {
        let mut due = Vec::new();
        self.lock().retain(|&account_id, grant| {
            let places = grant.min_unused.min(grant.unused());
            grant.places -= places;
            grant.min_unused = grant.unused();
            let mut back = GiveBack {
                places,
                ..GiveBack::default()
            };
            if grant.tokens > 0 && real_now >= grant.tokens_until_ms {
                grant.batch = (grant.batch / 2).max(1);
                if let Some(tat) = grant.tokens_tat.take() {
                    back.tokens = grant.tokens;
                    back.tat = tat;
                    back.interval_ms = grant.interval_ms;
                }
                grant.tokens = 0;
            }
            if back != GiveBack::default() {
                due.push((account_id, back));
            }
            grant.places > 0 || grant.in_flight > 0 || grant.tokens > 0
        });
        due
    }

    /// Puts back places that could not be given back: the store still
    /// counts them for this instance.
    pub(super) fn keep(&self, account_id: i64, places: u32) {
        if places > 0 {
            self.lock().entry(account_id).or_default().places += places;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(places: u32, in_flight: u32, tokens: u32) -> Grant {
        Grant {
            places,
            in_flight,
            tokens,
            tokens_until_ms: 1_000,
            tokens_tat: Some(5_000),
            interval_ms: 100,
            batch: tokens,
            ..Grant::default()
        }
    }

    #[test]
    fn a_request_needs_a_free_place_and_a_live_token() {
        let mut g = grant(2, 1, 1);
        assert!(
            !g.take(1, 0, false),
            "the limit was lowered to the place in use"
        );
        assert!(!g.take(2, 1_000, false), "the token expired");
        assert!(g.take(2, 999, false));
        assert_eq!((g.in_flight, g.tokens), (2, 0));
        assert!(!g.take(3, 0, false), "no place left");
        // Above 60 000 a minute, places alone count.
        let mut g = grant(1, 0, 0);
        assert!(g.take(1, 0, true));
        assert!(!g.take(1, 0, true));
    }

    #[test]
    fn places_unused_for_a_whole_period_and_expired_tokens_go_back() {
        let grants = LocalGrants::default();
        grants.lock().insert(7, grant(3, 1, 4));
        // A request answered: two unused, but not for a whole period yet.
        assert_eq!(grants.due(0), vec![]);
        grants.release(7);
        assert_eq!(grants.lock()[&7].unused(), 3);
        // One period on: the two unused throughout go back; the one freed
        // since stays for another period. The tokens expired at 1 000.
        assert_eq!(
            grants.due(1_000),
            vec![(
                7,
                GiveBack {
                    places: 2,
                    tokens: 4,
                    interval_ms: 100,
                    tat: 5_000
                }
            )]
        );
        assert_eq!(grants.due(1_250)[0].1.places, 1);
        // Nothing held: the account is forgotten.
        assert!(grants.lock().is_empty());
    }

    #[test]
    fn near_its_limit_an_account_gives_back_a_place_as_soon_as_it_is_free() {
        let grants = LocalGrants::default();
        grants.lock().insert(
            7,
            Grant {
                near_limit: true,
                ..grant(2, 2, 0)
            },
        );
        assert_eq!(grants.release(7).map(|b| b.places), Some(1));
        assert_eq!(grants.lock()[&7].places, 1);
    }

    #[test]
    fn grants_are_usable_only_while_the_lease_is_known_live() {
        let grants = LocalGrants::default();
        assert!(!grants.usable(0), "no lease yet");
        grants.lease_renewed(0, 3_000);
        assert!(grants.usable(1_999) && !grants.usable(2_000));
        assert!(!grants.lapsed(2_999) && grants.lapsed(3_000));
        grants.lock().insert(7, grant(3, 1, 4));
        grants.drop_grants();
        let g = &grants.lock()[&7];
        assert_eq!((g.places, g.tokens, g.in_flight), (0, 0, 1));
    }
}
