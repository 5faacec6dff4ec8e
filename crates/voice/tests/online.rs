//! The online diarizer fed the caller's voice activity (`with_scores_from_caller`, as the
//! analyzer's features feed it their own Silero scores) against one running its own detector,
//! on the committed real telephone call.

mod common;

use attune_voice::{OnlineDiarizer, OnlineParams, SileroVad, SpeakerTurn};
use common::read_wav;

fn call() -> Vec<f32> {
    read_wav(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/real/sample.wav"),
    )
}

/// Turns of a diarizer with its own detector, fed `chunk` samples at a time.
fn own_detector(pcm: &[f32], chunk: usize) -> Vec<SpeakerTurn> {
    let mut d = OnlineDiarizer::new(OnlineParams::default()).expect("networks load");
    let mut turns = Vec::new();
    for c in pcm.chunks(chunk) {
        turns.extend(d.push(c).expect("runs"));
    }
    turns.extend(d.finish().expect("runs"));
    turns
}

/// Turns of a diarizer given the scores of a detector the caller runs, fed `chunk` samples at
/// a time; with `ahead`, every score of the file is handed over before the first sample.
fn scores_from_caller(pcm: &[f32], chunk: usize, ahead: bool) -> Vec<SpeakerTurn> {
    let mut d =
        OnlineDiarizer::with_scores_from_caller(OnlineParams::default()).expect("networks load");
    let mut vad = SileroVad::new().expect("Silero loads");
    let mut probs = Vec::new();
    if ahead {
        vad.push(pcm, &mut probs).expect("runs");
        vad.finish(&mut probs).expect("runs");
        d.push_vad(&probs);
    }
    let mut turns = Vec::new();
    for c in pcm.chunks(chunk) {
        if !ahead {
            probs.clear();
            vad.push(c, &mut probs).expect("runs");
            d.push_vad(&probs);
        }
        turns.extend(d.push(c).expect("runs"));
    }
    if !ahead {
        probs.clear();
        vad.finish(&mut probs).expect("runs");
        d.push_vad(&probs);
    }
    turns.extend(d.finish().expect("runs"));
    turns
}

#[test]
fn a_diarizer_given_the_callers_voice_activity_finds_the_turns_of_one_running_its_own() {
    let pcm = call();
    let own = own_detector(&pcm, 8000);
    assert!(
        own.iter().map(|t| t.speaker).max() >= Some(1),
        "the call has two voices: {own:?}"
    );
    assert_eq!(scores_from_caller(&pcm, 8000, false), own);
    // Chunks that end mid-frame, and every score handed over at once: a step still reads only
    // the frames its samples complete.
    assert_eq!(
        scores_from_caller(&pcm, 3001, false),
        own_detector(&pcm, 3001)
    );
    assert_eq!(
        scores_from_caller(&pcm, 3001, true),
        own_detector(&pcm, 3001)
    );
}
