//! Attune: conversation analysis as a library (work in progress).
#![deny(missing_docs)]
pub use attune_core as core;
pub use attune_cqi as cqi;
pub use attune_media as media;
