//! The `attune` binary (work in progress).
fn main() {}
