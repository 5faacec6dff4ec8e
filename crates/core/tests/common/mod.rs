//! Helpers shared by the integration tests.

pub mod real_speech;
pub mod variants;
