//! Replays the committed fuzz corpora and crash regressions of the server's parser targets
//! through the functions the targets call (`attune_server::fuzzing`), so CI reruns every input
//! a campaign kept in seconds, and an input that once crashed a target fails this test if it
//! does again.
//!
//! Inputs live in `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`; the replay is
//! `fuzz/replay.rs`, shared with the media corpus test.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use replay::{replay_all, Body};

/// Every server target and the function its `fuzz_target!` calls.
const TARGETS: &[(&str, Body)] = &[
    ("upload_form", attune_server::fuzzing::upload_form),
    ("handshake", attune_server::fuzzing::handshake),
    ("client_frame", attune_server::fuzzing::client_frame),
];

#[test]
fn every_committed_server_fuzz_input_runs_without_a_panic() {
    replay_all(TARGETS);
}
