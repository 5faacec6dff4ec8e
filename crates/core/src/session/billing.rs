//! A batch of analysis output after the client token's budget was charged for its windows
//! (see [`crate::billing`]): the windows the budget covered are reported, the first it could
//! not cover ends the session.

use super::{Action, StreamSession};
use crate::billing::Billed;
use crate::live::LiveOutput;
use crate::wire::Seconds;

impl StreamSession {
    /// [`StreamSession::on_live_output`] for a batch whose windows were charged, in order, to
    /// a budget ([`crate::billing::window_charges`]): with [`Billed::Partly`], only the
    /// windows charged are reported, then the session ends with the refusal (`ih3006`).
    pub fn on_billed_output(
        &mut self,
        now: Seconds,
        mut output: LiveOutput,
        billed: Billed,
    ) -> Vec<Action> {
        match billed {
            Billed::All => self.on_live_output(now, output),
            Billed::Partly { covered, refusal } => {
                output.windows.truncate(covered);
                let mut actions = self.on_live_output(now, output);
                actions.extend(self.fail(refusal));
                actions
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{negotiate, Scopes, ALL_SCOPES};
    use crate::billing;
    use crate::error::ErrorCode;
    use crate::lifecycle::ClosedWindow;
    use crate::session::SessionSetup;
    use crate::wire::{Endpoint, EngagementLevel, EventData, Model};

    fn session() -> StreamSession {
        let scopes: Scopes = ALL_SCOPES.iter().copied().collect();
        let negotiated = negotiate(Endpoint::StreamV2, None, &scopes, Model::SERVED).unwrap();
        let setup = SessionSetup::new(Endpoint::StreamV2, negotiated, "https://docs.example");
        StreamSession::open(setup, 0.0).0
    }

    fn output() -> LiveOutput {
        let window = |start: f64, engagement| ClosedWindow {
            start,
            end: start + 5.0,
            engagement,
            detections: Vec::new(),
        };
        LiveOutput {
            windows: vec![
                window(0.0, EngagementLevel::Engaged),
                window(5.0, EngagementLevel::Disengaged),
            ],
            ..LiveOutput::default()
        }
    }

    fn engagement_updates(actions: &[Action]) -> usize {
        actions
            .iter()
            .filter(|a| matches!(a, Action::Send(EventData::EngagementUpdated(_))))
            .count()
    }

    #[test]
    fn a_budget_that_covers_every_window_reports_them_all() {
        let actions = session().on_billed_output(10.0, output(), Billed::All);
        assert_eq!(engagement_updates(&actions), 2);
        assert!(!actions.iter().any(|a| matches!(a, Action::Close { .. })));
    }

    /// The window the budget could not cover is not reported; the session ends with `ih3006`
    /// and its close code, after the windows that were charged.
    #[test]
    fn the_first_window_the_budget_cannot_cover_ends_the_session_with_ih3006() {
        let refusal = billing::exhausted(5.0, 1.0);
        let billed = Billed::Partly {
            covered: 1,
            refusal,
        };
        let actions = session().on_billed_output(10.0, output(), billed);
        assert_eq!(engagement_updates(&actions), 1);
        let error = actions
            .iter()
            .find_map(|a| match a {
                Action::Send(EventData::Error(e)) => Some(e),
                _ => None,
            })
            .expect("an error event");
        assert_eq!(error.code, ErrorCode::Ih3006);
        assert!(error
            .link
            .as_deref()
            .unwrap_or("")
            .starts_with("https://docs.example"));
        assert!(matches!(
            actions.last(),
            Some(Action::Close { code: 4029, .. })
        ));
    }
}
