//! Property: a stream fed in chunks of any sizes gives the windows of the same file analyzed,
//! for every container the live path reads (WebM, fragmented MP4, MPEG-TS, raw PCM).
//!
//! The file is decoded by the file path (`attune_media::decode_audio`) and analyzed with
//! [`Diarization::Online`], the speaker attribution a stream has (it hears each unit once,
//! in order); the stream is the same bytes cut at proptest-chosen boundaries. Every full window
//! must be the same verdict with the same evidence, to the word. The fixtures are one 11 s
//! speech recording (`tests/fixtures/speech/hesitant.*`, made by `speech/make.sh`), so two full
//! windows each.

use super::*;
use crate::pipeline::{analyze_media_with, Diarization};
use crate::wire::AudioEncoding;
use proptest::prelude::*;
use std::sync::OnceLock;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A window as compared: bounds, engagement, and each signal with its probability and
/// rationale.
use super::tests::{summary, WindowSummary as Summary};

/// The file's full windows, analyzed as a stream hears it.
fn file_windows(samples: &[f32]) -> Vec<Summary> {
    let duration = samples.len() as f64 / RATE;
    let file = analyze_media_with(
        samples,
        None,
        duration,
        Model::Inter2Audio,
        Diarization::Online,
    );
    let full = (duration / 5.0).floor() as usize;
    let windows: Vec<Summary> = file.windows[..full]
        .iter()
        .map(|w| {
            (
                w.start_seconds,
                w.end_seconds,
                w.engagement_status.to_string(),
                w.signals
                    .iter()
                    .map(|s| {
                        (
                            s.signal_type.to_string(),
                            s.probability.map(|p| p.to_string()).unwrap_or_default(),
                            s.rationale.clone().unwrap_or_default(),
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    assert!(windows.len() >= 2, "the fixture has two full windows");
    windows
}

/// The stream's windows over the file's full windows, `bytes` cut into `sizes` (cycled).
fn stream_windows(
    mut live: LiveAnalyzer,
    bytes: &[u8],
    sizes: &[usize],
    full: usize,
) -> Vec<Summary> {
    let mut out = LiveOutput::default();
    let mut at = 0;
    let mut segment = 0u64;
    while at < bytes.len() {
        let size = sizes[segment as usize % sizes.len()].clamp(1, bytes.len() - at);
        out.extend(live.push(segment, &bytes[at..at + size], false));
        at += size;
        segment += 1;
    }
    out.extend(live.finish());
    assert!(out.problems.is_empty(), "{:?}", out.problems);
    assert!(out.fatal.is_none(), "{:?}", out.fatal);
    assert!(out.dropped.is_empty(), "{:?}", out.dropped);
    assert!(out.windows.len() >= full, "{} windows", out.windows.len());
    summary(&out.windows[..full])
}

/// A container's bytes and its file analysis, computed once per test run.
struct Case {
    bytes: Vec<u8>,
    file: Vec<Summary>,
}

fn container(name: &str) -> Case {
    let bytes = fixture(name);
    let pcm = attune_media::decode_audio(&bytes).expect("the fixture decodes");
    let file = file_windows(&pcm.samples);
    Case { bytes, file }
}

fn webm() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| container("speech/hesitant.webm"))
}

fn fmp4() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| container("speech/hesitant_frag.mp4"))
}

fn ts() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| container("speech/hesitant.ts"))
}

fn pcm() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| {
        let wav = fixture("speech/hesitant.wav");
        // Canonical 44-byte header written by sox for these fixtures.
        let bytes = wav[44..].to_vec();
        let samples: Vec<f32> = bytes
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect();
        let file = file_windows(&samples);
        Case { bytes, file }
    })
}

fn check(case: &Case, live: LiveAnalyzer, sizes: &[usize]) {
    let full = case.file.len();
    assert_eq!(stream_windows(live, &case.bytes, sizes, full), case.file);
}

/// Chunk sizes: single bytes and odd sizes cut headers, frames and samples anywhere; large
/// ones deliver several frames at once.
fn sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![1usize..64, 64usize..4_096, 4_096usize..40_000],
        1..6,
    )
}

proptest! {
    // Each case analyzes 11 s of speech in a test build; a few cases per container, each with
    // a different cut, on top of the fixed cuts of `live/tests.rs`.
    #![proptest_config(ProptestConfig::with_cases(3))]

    #[test]
    fn a_webm_stream_in_any_chunks_equals_the_file(sizes in sizes()) {
        check(webm(), LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2), &sizes);
    }

    #[test]
    fn an_fmp4_stream_in_any_chunks_equals_the_file(sizes in sizes()) {
        check(fmp4(), LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2), &sizes);
    }

    #[test]
    fn a_ts_stream_in_any_chunks_equals_the_file(sizes in sizes()) {
        check(ts(), LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2), &sizes);
    }

    #[test]
    fn a_raw_pcm_stream_in_any_chunks_equals_the_file(sizes in sizes()) {
        let mut live = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2);
        live.set_audio_format(AudioFormat {
            encoding: AudioEncoding::PcmS16le,
            sample_rate: 16_000,
            channels: 1,
        })
        .expect("16 kHz is allowed");
        check(pcm(), live, &sizes);
    }
}
