//! A last line of defence around third-party decoders: a panic inside one becomes an error.
//!
//! This crate's own parsers never index by a size read from the input and never panic on bad
//! input; Symphonia and opus-pure are written to the same standard, but they are large and an
//! upload is untrusted, so each call into them goes through [`catch`]. A caught panic reports the
//! input as unreadable (`ih5002`) instead of taking down the worker.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::MediaError;

/// Runs `f`, turning a panic into [`MediaError::Unreadable`].
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, MediaError> {
    // AssertUnwindSafe: after a panic the decoder state that `f` touched is dropped by the caller
    // (the error ends the decode), so no broken invariant is observed afterwards.
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| MediaError::unreadable(None, "a decoder failed on malformed data"))
}
