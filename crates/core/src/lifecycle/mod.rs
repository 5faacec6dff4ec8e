//! Per-session state machines turning window results into the interface's events.
//!
//! Each machine is sans-I/O: it takes one input (a closed analysis window, a
//! config change, a close) and returns zero or more event payloads. The stream
//! session engine owns one of each per session and wraps the payloads in
//! envelopes.

pub mod cadence;
pub mod engagement;
mod session;
pub mod signals;

pub use session::SessionLifecycle;
pub use signals::ClosedWindow;
