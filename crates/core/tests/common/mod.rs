//! Helpers shared by the integration tests.

mod par;
pub mod real_speech;
pub mod variants;

#[allow(unused_imports)] // not every test program maps in parallel
pub use par::par_map;
