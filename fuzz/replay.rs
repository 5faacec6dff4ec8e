//! Replaying the committed fuzz corpora and crash regressions in a plain test: included by
//! `crates/media/tests/fuzz_corpus.rs` and `crates/server/tests/fuzz_corpus.rs` (through
//! `#[path]`), so both crates replay their targets' inputs the same way.
//!
//! Inputs live in `fuzz/corpus/<target>/` (minimised with `-merge=1` by `fuzz/campaign.sh`)
//! and `fuzz/regressions/<target>/` (each crash a campaign found, minimised).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A target's body: the function its `fuzz_target!` calls.
pub type Body = fn(&[u8]);

/// This directory, `fuzz/`, seen from a crate under `crates/`.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
pub fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs every committed input of `target` through `run`; returns how many there were and
/// the ones that panicked.
fn replay(target: &str, run: Body) -> (usize, Vec<String>) {
    let mut failed = Vec::new();
    let mut count = 0;
    for kind in ["corpus", "regressions"] {
        for path in inputs(&fuzz_dir().join(kind).join(target)) {
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            count += 1;
            if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                failed.push(path.display().to_string());
            }
        }
    }
    (count, failed)
}

/// Replays every input of every target; fails naming the inputs that panicked, or a target
/// with no committed input (a missing corpus would make the test pass on nothing).
pub fn replay_all(targets: &[(&str, Body)]) {
    let mut failed = Vec::new();
    for &(target, run) in targets {
        let (count, bad) = replay(target, run);
        assert!(count > 0, "no committed inputs for the `{target}` target");
        failed.extend(bad);
    }
    assert!(failed.is_empty(), "inputs that panic: {failed:#?}");
}
