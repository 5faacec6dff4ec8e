//! A session in time: its next deadline, the ticks that pass it (idle,
//! duration, drain and hold limits) and a scheduled server shutdown.

use super::{Action, Phase, Shutdown, StreamSession, FINAL_SHUTDOWN_WARNING_SECONDS};
use crate::error::{ErrorCode, ServiceError};
use crate::wire::{ErrorEvent, EventData, Seconds};

impl StreamSession {
    /// Schedules a server shutdown at session time `at`: an `ih6006` warning
    /// now with the seconds remaining, another [`FINAL_SHUTDOWN_WARNING_SECONDS`]
    /// before, then `ih6005` and close.
    pub fn on_shutdown_scheduled(&mut self, now: Seconds, at: Seconds) -> Vec<Action> {
        if self.phase == Phase::Closed || self.shutdown.is_some() {
            return Vec::new();
        }
        let remaining = (at - now).max(0.0);
        self.shutdown = Some(Shutdown {
            at,
            final_warning_sent: remaining <= FINAL_SHUTDOWN_WARNING_SECONDS,
        });
        let mut actions = vec![self.shutdown_warning(remaining)];
        actions.extend(self.on_tick(now));
        actions
    }

    pub(super) fn shutdown_warning(&self, remaining: Seconds) -> Action {
        let seconds = remaining.ceil() as u64;
        Action::Send(EventData::Error(ErrorEvent::shutdown_warning(
            seconds,
            &self.setup.docs_url,
        )))
    }

    /// The earliest session time at which [`StreamSession::on_tick`] has
    /// something to decide, if any.
    pub fn next_deadline(&self) -> Option<Seconds> {
        let limits = &self.setup.limits;
        let mut deadlines: Vec<Seconds> = Vec::new();
        match self.phase {
            Phase::Closed => return None,
            Phase::Open => {
                if limits.idle_timeout_seconds > 0 {
                    deadlines.push(self.last_inbound + limits.idle_timeout_seconds as f64);
                }
            }
            Phase::Closing { deadline } => deadlines.push(deadline),
        }
        if limits.max_duration_seconds > 0 {
            deadlines.push(self.setup.opened_at + limits.max_duration_seconds as f64);
        }
        if let Some(since) = self.undecoded_since {
            deadlines.push(since + limits.hold_limit_seconds);
        }
        if let Some(shutdown) = self.shutdown {
            if !shutdown.final_warning_sent {
                deadlines.push(shutdown.at - FINAL_SHUTDOWN_WARNING_SECONDS);
            }
            deadlines.push(shutdown.at);
        }
        deadlines.into_iter().reduce(f64::min)
    }

    /// Time passed: applies whichever timed rule is due at `now`.
    pub fn on_tick(&mut self, now: Seconds) -> Vec<Action> {
        let limits = self.setup.limits.clone();
        if self.phase == Phase::Closed {
            return Vec::new();
        }
        if let Some(mut shutdown) = self.shutdown {
            if now >= shutdown.at {
                return self.go_away();
            }
            if !shutdown.final_warning_sent && now >= shutdown.at - FINAL_SHUTDOWN_WARNING_SECONDS {
                shutdown.final_warning_sent = true;
                self.shutdown = Some(shutdown);
                return vec![self.shutdown_warning(shutdown.at - now)];
            }
        }
        if limits.max_duration_seconds > 0
            && now >= self.setup.opened_at + limits.max_duration_seconds as f64
        {
            return self.fail(ServiceError::with_message(
                ErrorCode::Ih6004,
                format!(
                    "the session reached its maximum duration of {} s",
                    limits.max_duration_seconds
                ),
            ));
        }
        match self.phase {
            Phase::Open => {
                if limits.idle_timeout_seconds > 0
                    && now >= self.last_inbound + limits.idle_timeout_seconds as f64
                {
                    return self.fail(ServiceError::with_message(
                        ErrorCode::Ih6003,
                        format!("no data arrived for {} s", limits.idle_timeout_seconds),
                    ));
                }
            }
            Phase::Closing { deadline } => {
                if now >= deadline {
                    return self.end_gracefully();
                }
            }
            Phase::Closed => {}
        }
        if let Some(since) = self.undecoded_since {
            if now >= since + limits.hold_limit_seconds {
                return self.fail(ServiceError::with_message(
                    ErrorCode::Ih6010,
                    format!(
                        "no container header and no decodable media arrived within {} s",
                        limits.hold_limit_seconds
                    ),
                ));
            }
        }
        Vec::new()
    }
}
