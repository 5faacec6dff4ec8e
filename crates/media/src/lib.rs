//! Attune's media layer (work in progress).
#![deny(missing_docs)]
