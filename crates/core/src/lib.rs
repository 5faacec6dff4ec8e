//! Attune's sans-I/O heart (work in progress).
#![deny(missing_docs)]

pub mod error;
pub mod lifecycle;
pub mod merge;
pub mod window;
pub mod wire;

pub use error::{ErrorCode, ServiceError};
