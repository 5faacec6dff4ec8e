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
