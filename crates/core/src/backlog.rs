//! Queue refusals: how much unread media a stream session may hold before its frames are
//! decoded only (`coverage.dropped`) or the session ends (`ih1002`), and the `ih1002`
//! refusals of an instance that holds as many upload jobs as it may or is shutting down.
//! The queues themselves are the caller's; the decisions are here.

use crate::error::{ErrorCode, ServiceError};

/// What becomes of a binary frame handed to a session's analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued for analysis.
    Queued,
    /// Queued to be demuxed and decoded only: the session held `max_queued_bytes` of unread
    /// frames with it. The windows it covers come back as `coverage.dropped`.
    DecodeOnly,
    /// Not queued: with it the session would hold more than `max_backlog_bytes`. The session
    /// must end ([`crate::session::StreamSession::on_media_backlog_overflow`]), since the
    /// stream now has a hole.
    Overflow,
}

/// The bounds of one session's unread media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaBacklog {
    max_queued_bytes: u64,
    max_backlog_bytes: u64,
}

impl MediaBacklog {
    /// Frames are analyzed while the session holds at most `max_queued_bytes` unread, decoded
    /// only up to `max_backlog_bytes` (raised to `max_queued_bytes` when lower), refused
    /// beyond.
    pub fn new(max_queued_bytes: u64, max_backlog_bytes: u64) -> Self {
        MediaBacklog {
            max_queued_bytes,
            max_backlog_bytes: max_backlog_bytes.max(max_queued_bytes),
        }
    }

    /// The hard bound on unread bytes.
    pub fn max_backlog_bytes(&self) -> u64 {
        self.max_backlog_bytes
    }

    /// What becomes of a frame of `size` bytes arriving while `held` bytes are unread. A lone
    /// frame always goes in, whatever its size (at most the segment limit): the bounds are
    /// about frames piling up, not about one large frame.
    pub fn admit(&self, held: u64, size: u64) -> Enqueued {
        let with_it = held.saturating_add(size);
        if held == 0 || with_it <= self.max_queued_bytes {
            Enqueued::Queued
        } else if with_it <= self.max_backlog_bytes {
            Enqueued::DecodeOnly
        } else {
            Enqueued::Overflow
        }
    }
}

/// `ih1002` for an upload arriving while the instance holds as many jobs (queued or running)
/// as it may: refused before its body is read.
pub fn jobs_full() -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih1002,
        "This instance holds as many jobs as it may. Retry after the delay in Retry-After.",
    )
}

/// `ih1002` for a synchronous analysis that found the instance shutting down.
pub fn shutting_down() -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih1002,
        "The server is shutting down. Retry after the delay in Retry-After.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_analyzed_then_decoded_only_then_refused() {
        let backlog = MediaBacklog::new(10, 25);
        assert_eq!(backlog.admit(0, 8), Enqueued::Queued);
        assert_eq!(backlog.admit(8, 8), Enqueued::DecodeOnly);
        assert_eq!(backlog.admit(16, 8), Enqueued::DecodeOnly);
        assert_eq!(backlog.admit(24, 8), Enqueued::Overflow);
        // A lone frame goes in whatever its size.
        assert_eq!(backlog.admit(0, 40), Enqueued::Queued);
        // The hard bound is never below the analysis bound.
        assert_eq!(MediaBacklog::new(30, 10).max_backlog_bytes(), 30);
    }

    #[test]
    fn queue_refusals_are_ih1002() {
        assert_eq!(jobs_full().code, ErrorCode::Ih1002);
        assert_eq!(shutting_down().code, ErrorCode::Ih1002);
    }
}
