//! Attune's sans-I/O heart (work in progress).
#![deny(missing_docs)]

pub mod error;
pub mod wire;

pub use error::{ErrorCode, ServiceError};
