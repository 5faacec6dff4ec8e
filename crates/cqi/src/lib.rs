//! Conversation Quality Index math for Attune (work in progress).
#![deny(missing_docs)]

mod values;
mod vocab;

pub use values::QualityValues;
pub use vocab::{Dimension, EngagementLevel, Probability, SignalType};
