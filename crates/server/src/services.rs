//! What a server is built from besides its configuration: the stores, the
//! analysis runner and the clock, each behind a trait so tests and other
//! deployments can put their own in.

use crate::clock::{Clock, SystemClock};
use crate::jobs::JobRunner;
use crate::store::{JobStore, KeyStore, SqliteStore, TokenStore, UsageStore};

/// A store that is every store at once, as both built-in ones are.
pub trait AllStores: KeyStore + TokenStore + UsageStore + JobStore + 'static {}
impl<T: KeyStore + TokenStore + UsageStore + JobStore + 'static> AllStores for T {}
use std::sync::Arc;

/// The collaborators of a server.
#[derive(Clone)]
pub struct Services {
    /// Accounts and API keys.
    pub keys: Arc<dyn KeyStore>,
    /// Client tokens and their budgets.
    pub tokens: Arc<dyn TokenStore>,
    /// Account quotas.
    pub usage: Arc<dyn UsageStore>,
    /// v2 upload jobs.
    pub jobs: Arc<dyn JobStore>,
    /// The analysis.
    pub runner: Arc<dyn JobRunner>,
    /// Calendar time for expiry, rate windows and daily quotas.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Services {
    /// Every store in one SQLite database, `runner` for analysis and the
    /// system clock.
    pub fn new(store: SqliteStore, runner: Arc<dyn JobRunner>) -> Services {
        Services::with_store(store, runner)
    }

    /// Every store in `store` (SQLite or PostgreSQL), `runner` for analysis
    /// and the system clock.
    pub fn with_store(store: impl AllStores, runner: Arc<dyn JobRunner>) -> Services {
        let store = Arc::new(store);
        Services {
            keys: store.clone(),
            tokens: store.clone(),
            usage: store.clone(),
            jobs: store,
            runner,
            clock: Arc::new(SystemClock),
        }
    }

    /// These services reading time from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Services {
        self.clock = clock;
        self
    }
}
