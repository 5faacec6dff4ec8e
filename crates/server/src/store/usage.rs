//! The analysis an account has used, against its total and daily quotas.

use super::StoreFuture;
use time::Date;

/// Seconds of media an account has had analyzed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Since the account was created.
    pub total_seconds: f64,
    /// On the UTC day asked about.
    pub day_seconds: f64,
}

/// The answer to a request to charge analysis seconds to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaOutcome {
    /// The seconds were charged.
    Granted,
    /// Charging them would pass the account's total quota (`ih3003`);
    /// nothing was charged.
    TotalExceeded,
    /// Charging them would pass the account's daily quota (`ih3004`);
    /// nothing was charged.
    DailyExceeded,
}

/// Per-account usage, charged against the limits stored with the account.
pub trait UsageStore: Send + Sync {
    /// What `account_id` has used in total and on `day`.
    fn usage(&self, account_id: i64, day: Date) -> StoreFuture<'_, Usage>;

    /// Charges `seconds` to the account on `day` if both quotas allow the
    /// whole amount, in one atomic step.
    fn charge_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, QuotaOutcome>;

    /// Gives back seconds charged on `day` for analysis that did not happen.
    fn refund_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, ()>;
}
