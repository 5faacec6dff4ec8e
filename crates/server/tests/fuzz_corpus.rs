//! Replays the committed fuzz corpora and crash regressions of the server's parser targets
//! through the functions the targets call (`attune_server::fuzzing`), so CI reruns every input
//! a campaign kept in seconds, and an input that once crashed a target fails this test if it
//! does again.
//!
//! Inputs live in `fuzz/corpus/<target>/` (minimised with `-merge=1` by `fuzz/campaign.sh`)
//! and `fuzz/regressions/<target>/` (each crash a campaign found, minimised).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A target's body: the function its `fuzz_target!` calls.
type Body = fn(&[u8]);

/// Every server target and the function its `fuzz_target!` calls.
const TARGETS: &[(&str, Body)] = &[
    ("upload_form", attune_server::fuzzing::upload_form),
    ("handshake", attune_server::fuzzing::handshake),
    ("client_frame", attune_server::fuzzing::client_frame),
];

/// The files of `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
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

#[test]
fn every_committed_server_fuzz_input_runs_without_a_panic() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut failed = Vec::new();
    for &(target, run) in TARGETS {
        let mut count = 0;
        for kind in ["corpus", "regressions"] {
            for path in inputs(&fuzz.join(kind).join(target)) {
                let data =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                count += 1;
                if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                    failed.push(path.display().to_string());
                }
            }
        }
        // A missing corpus would make this test pass on nothing.
        assert!(count > 0, "no committed inputs for the `{target}` target");
    }
    assert!(failed.is_empty(), "inputs that panic: {failed:#?}");
}
