//! The client token's video budget (`max_video_seconds`): what is billed and what a refusal
//! says. Uploads, streams and realtime share one budget; the store that holds it is the
//! caller's, the rules are here.
//!
//! - An upload is billed its media's duration, all or nothing, after validation; a token
//!   whose budget is already used up is refused before the body is read.
//! - A stream is billed per analyzed window, in order, as the windows close; windows skipped
//!   because analysis fell behind (`coverage.dropped`) are not billed. The first window the
//!   budget cannot cover is not reported and the session ends with `ih3006`
//!   ([`crate::session::StreamSession::on_billed_output`]).

use crate::error::{ErrorCode, ServiceError};
use crate::live::LiveOutput;
use crate::wire::Seconds;

/// Whether a budget with `left` seconds (`None`: the token has no budget) can bill nothing
/// more.
pub fn is_spent(left: Option<Seconds>) -> bool {
    left.is_some_and(|left| left <= 0.0)
}

/// `ih3006` for `seconds` of media a budget with `remaining` seconds cannot cover.
pub fn exhausted(seconds: Seconds, remaining: Seconds) -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih3006,
        format!(
            "The media is {seconds:.1} s long and the client token's video budget has \
             {remaining:.1} s left."
        ),
    )
}

/// `ih3006` for an upload whose token's budget is already used up (before its body is read).
pub fn upload_refused() -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih3006,
        "The client token's video budget (max_video_seconds) is used up.",
    )
}

/// `ih3006` for a stream handshake whose token's budget is already spent.
pub fn session_refused() -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih3006,
        "The client token's video budget is spent.",
    )
}

/// The seconds to bill for each analyzed window of `output`, in window order. Dropped
/// windows are not in `output.windows`, so they are never billed.
pub fn window_charges(output: &LiveOutput) -> Vec<Seconds> {
    output
        .windows
        .iter()
        .map(|window| (window.end - window.start).max(0.0))
        .collect()
}

/// What the budget answered for a batch's windows, charged in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Billed {
    /// Every window was charged (or the credential has no budget).
    All,
    /// The first `covered` windows were charged; the next one was refused with `refusal`
    /// (`ih3006`, or `ih1003` when the store could not answer).
    Partly {
        /// Windows charged before the refusal.
        covered: usize,
        /// Why the next window was not.
        refusal: ServiceError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::ClosedWindow;
    use crate::wire::EngagementLevel;

    #[test]
    fn spent_means_nothing_left_and_no_budget_is_never_spent() {
        assert!(is_spent(Some(0.0)));
        assert!(is_spent(Some(-1.0)));
        assert!(!is_spent(Some(0.5)));
        assert!(!is_spent(None));
    }

    #[test]
    fn windows_are_billed_their_length_in_order() {
        let window = |start: f64, end: f64| ClosedWindow {
            start,
            end,
            engagement: EngagementLevel::Neutral,
            detections: Vec::new(),
        };
        let output = LiveOutput {
            windows: vec![window(0.0, 5.0), window(5.0, 7.5)],
            ..LiveOutput::default()
        };
        assert_eq!(window_charges(&output), [5.0, 2.5]);
        let error = exhausted(5.0, 1.25);
        assert_eq!(error.code, ErrorCode::Ih3006);
        assert!(
            error.message().contains("1.2 s left"),
            "{}",
            error.message()
        );
    }
}
