//! How a session ends: a client close, a graceful end after draining, going
//! away, a revoked credential, an oversized message or backlog, a failure.

use super::{Action, Phase, Revoked, StreamSession};
use crate::error::{ErrorCode, ServiceError};
use crate::wire::{ErrorEvent, EventData, Seconds, SessionClosing};

impl StreamSession {
    pub(super) fn begin_close(&mut self, now: Seconds) -> Vec<Action> {
        if self.phase != Phase::Open {
            // A duplicate close is ignored.
            return Vec::new();
        }
        let drain = self.setup.limits.max_drain_seconds;
        self.phase = Phase::Closing {
            deadline: now + drain as f64,
        };
        // Nothing is decoding any more once the client stopped sending.
        self.undecoded_since = None;
        vec![
            Action::Send(EventData::SessionClosing(SessionClosing {
                max_drain_seconds: drain,
            })),
            Action::FinishMedia,
        ]
    }

    /// Final lifecycle events, `session.ended`, close 1000.
    pub(super) fn end_gracefully(&mut self) -> Vec<Action> {
        self.phase = Phase::Closed;
        let mut actions: Vec<Action> = self
            .lifecycle
            .close()
            .into_iter()
            .map(Action::Send)
            .collect();
        actions.push(Action::Close {
            code: 1000,
            reason: "session ended".into(),
        });
        actions
    }

    /// Server shutdown: open signals end, `ih6005`, close 1001.
    pub(super) fn go_away(&mut self) -> Vec<Action> {
        let mut actions: Vec<Action> = self
            .lifecycle
            .close()
            .into_iter()
            .filter(|e| matches!(e, EventData::SignalEnded(_)))
            .map(Action::Send)
            .collect();
        actions.extend(self.fail(ServiceError::new(ErrorCode::Ih6005)));
        actions
    }

    /// The credential the session was opened with stopped authenticating while the session
    /// ran (checked by the server at each chunk or window): the session ends now, as a
    /// handshake with that credential would be refused, with the catalog's close code.
    pub fn on_credential_revoked(&mut self, revoked: Revoked) -> Vec<Action> {
        let error = match revoked {
            Revoked::Token => ServiceError::with_message(
                ErrorCode::Ih2014,
                "the client token of this session was revoked (or the key that minted it)",
            ),
            // A key's refusal never says why, as at the handshake.
            Revoked::Key => ServiceError::new(ErrorCode::Ih2001),
        };
        self.fail(error)
    }

    /// A message over the socket's read cap arrived (`size` bytes when the frame header
    /// said so). It cannot be skipped: its bytes were not read, so the frames after it
    /// cannot be found. The session ends with `ih6002` and close 1009 (message too big),
    /// not as if the client had left.
    pub fn on_message_too_large(&mut self, size: Option<u64>, limit: u64) -> Vec<Action> {
        let message = match size {
            Some(size) => format!(
                "a message of {size} bytes is over this server's limit of {limit} bytes per \
                 WebSocket message; send binary frames of at most {} bytes",
                self.setup.limits.max_segment_size_bytes
            ),
            None => format!(
                "a message is over this server's limit of {limit} bytes per WebSocket \
                 message; send binary frames of at most {} bytes",
                self.setup.limits.max_segment_size_bytes
            ),
        };
        self.fail(ServiceError::with_message(ErrorCode::Ih6002, message))
    }

    /// The session's media arrives faster than even decoding keeps up with and its unread
    /// bytes reached the hard bound. Discarding frames would corrupt a continuous container
    /// (every later frame depends on the bytes before it), so the session ends cleanly with
    /// `ih1002` and close 1013 (try again later) instead.
    pub fn on_media_backlog_overflow(&mut self, queued_bytes: u64, limit: u64) -> Vec<Action> {
        self.fail(ServiceError::with_message(
            ErrorCode::Ih1002,
            format!(
                "media arrives faster than this server can read it: {queued_bytes} bytes are \
                 waiting, over the limit of {limit}; reconnect and send at the media's pace"
            ),
        ))
    }

    /// Sends the error and closes with its close code. Any caller-side fatal
    /// condition (revoked token `ih2014`, budget `ih3006`, internal `ih1001`)
    /// goes through here too.
    pub fn fail(&mut self, error: ServiceError) -> Vec<Action> {
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        self.phase = Phase::Closed;
        let code = error.code.info().close_code.unwrap_or(1011);
        vec![
            self.error_action(&error, None),
            Action::Close {
                code,
                reason: error.code.info().meaning.to_owned(),
            },
        ]
    }

    pub(super) fn error_action(&self, error: &ServiceError, segment: Option<u64>) -> Action {
        Action::Send(EventData::Error(ErrorEvent::new(
            error,
            &self.setup.docs_url,
            segment,
        )))
    }
}
