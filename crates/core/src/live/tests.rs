use super::*;
use crate::pipeline::{analyze_media_with, Diarization};
use crate::wire::AudioEncoding;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Three speech fixtures back to back (about 31.6 s): calm, hesitant, two voices; as s16le
/// bytes and as the f32 samples the PCM reader makes of them.
fn speech_pcm() -> (Vec<u8>, Vec<f32>) {
    let mut bytes = Vec::new();
    for name in ["baseline", "hesitant", "two_voices"] {
        let wav = fixture(&format!("speech/{name}.wav"));
        // Canonical 44-byte header written by sox for these fixtures.
        bytes.extend_from_slice(&wav[44..]);
    }
    let samples = bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    (bytes, samples)
}

fn pcm16() -> AudioFormat {
    AudioFormat {
        encoding: AudioEncoding::PcmS16le,
        sample_rate: 16_000,
        channels: 1,
    }
}

/// Feeds `bytes` cut into chunks of the given sizes (cycled) and finishes.
fn stream(analyzer: &mut LiveAnalyzer, bytes: &[u8], sizes: &[usize]) -> LiveOutput {
    let mut out = LiveOutput::default();
    let mut at = 0;
    let mut segment = 0u64;
    while at < bytes.len() {
        let size = sizes[segment as usize % sizes.len()].min(bytes.len() - at);
        out.extend(analyzer.push(segment, &bytes[at..at + size], false));
        at += size;
        segment += 1;
    }
    out.extend(analyzer.finish());
    out
}

/// A window as the stream reports it: bounds, state, and (signal, level, rationale) triples.
pub(super) type WindowSummary = (f64, f64, String, Vec<(String, String, String)>);

/// The comparable form of closed windows (also used by `chunk_props`).
pub(super) fn summary(windows: &[ClosedWindow]) -> Vec<WindowSummary> {
    windows
        .iter()
        .map(|w| {
            (
                w.start,
                w.end,
                w.engagement.to_string(),
                w.detections
                    .iter()
                    .map(|d| {
                        (
                            d.signal_type.to_string(),
                            d.probability.to_string(),
                            d.rationale.clone(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn raw_pcm_stream_matches_the_file_analysis_of_the_same_audio() {
    let (bytes, samples) = speech_pcm();
    let duration = samples.len() as f64 / 16_000.0;
    // A stream hears each unit once, in order: the file analysis it must
    // equal is the online one (uploads cluster the whole file instead).
    let file = analyze_media_with(
        &samples,
        None,
        duration,
        Model::Inter2Audio,
        Diarization::Online,
    );

    let mut live = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2);
    live.set_audio_format(pcm16()).expect("16 kHz is allowed");
    // Odd sizes: samples are split across frames.
    let out = stream(&mut live, &bytes, &[4097, 1, 333, 16_001]);
    assert!(out.problems.is_empty(), "{:?}", out.problems);
    assert!(out.fatal.is_none());
    assert!(out.dropped.is_empty());

    let full = (duration / 5.0).floor() as usize;
    assert!(out.windows.len() >= full, "{} windows", out.windows.len());
    let file_windows: Vec<ClosedWindow> = file
        .windows
        .iter()
        .map(|w| ClosedWindow {
            start: w.start_seconds,
            end: w.end_seconds,
            engagement: w.engagement_status,
            detections: w
                .signals
                .iter()
                .map(|s| crate::lifecycle::signals::Detection {
                    signal_type: s.signal_type,
                    probability: s.probability.expect("uploads carry probability"),
                    rationale: s.rationale.clone().unwrap_or_default(),
                    modality: s.modality.clone().unwrap_or_default(),
                })
                .collect(),
        })
        .collect();
    // Every full window is the same verdict with the same evidence, to the word.
    assert_eq!(
        summary(&out.windows[..full]),
        summary(&file_windows[..full])
    );
    // The stream found something to say about this speech.
    assert!(out.windows.iter().any(|w| !w.detections.is_empty()));
}

#[test]
fn chunking_does_not_change_a_continuous_webm_stream() {
    let bytes = fixture("segments/continuous.webm");
    let mut whole = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV1);
    let one = stream(&mut whole, &bytes, &[bytes.len()]);
    let mut cut = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV1);
    let many = stream(&mut cut, &bytes, &[1, 7, 4096, 333, 9000]);
    assert!(!one.windows.is_empty());
    assert_eq!(one.windows, many.windows);
    assert_eq!(one.degraded, many.degraded);
    assert!(one.problems.is_empty() && many.problems.is_empty());
    // Stream modality on inter-2 names the model's input.
    for d in one.windows.iter().flat_map(|w| &w.detections) {
        assert_eq!(d.modality, vec![crate::wire::Modality::Video]);
    }
}

#[test]
fn self_contained_segments_continue_the_session_clock() {
    let mut live = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV2);
    let mut out = LiveOutput::default();
    for (i, name) in ["seg0", "seg1", "seg2"].iter().enumerate() {
        out.extend(live.push(i as u64, &fixture(&format!("segments/{name}.webm")), false));
    }
    out.extend(live.finish());
    let end = live.media_end();
    assert!(out.problems.is_empty(), "{:?}", out.problems);
    assert!((end - 9.0).abs() < 0.1, "media end {end}");
    // One full window and a final 4 s one, on the session clock.
    let spans: Vec<(f64, f64)> = out.windows.iter().map(|w| (w.start, w.end)).collect();
    assert_eq!(spans.len(), 2, "{spans:?}");
    assert_eq!(spans[0], (0.0, 5.0));
    assert!((spans[1].1 - end).abs() < 1e-9);
}

#[test]
fn skipped_media_is_reported_dropped_and_analysis_resumes_after_it() {
    let (bytes, _) = speech_pcm();
    let mut live = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2);
    live.set_audio_format(pcm16()).expect("allowed");
    // The first 12 s arrive while the session is behind.
    let cut = 12 * 32_000;
    let mut out = LiveOutput::default();
    for (i, chunk) in bytes[..cut].chunks(32_000).enumerate() {
        out.extend(live.push(i as u64, chunk, true));
    }
    for (i, chunk) in bytes[cut..].chunks(32_000).enumerate() {
        out.extend(live.push(100 + i as u64, chunk, false));
    }
    out.extend(live.finish());
    // Windows [0,5) [5,10) [10,15) overlap skipped media: dropped, not analyzed.
    assert_eq!(
        out.dropped,
        vec![TimeRange {
            start: 0.0,
            end: 15.0
        }]
    );
    assert!(out.windows.iter().all(|w| w.start >= 15.0));
    assert!(out.windows.len() >= 3, "{} windows", out.windows.len());
}

#[test]
fn unreadable_frames_are_problems_of_their_segment_and_the_stream_goes_on() {
    let mut live = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV2);
    let bad = live.push(0, &fixture("text.txt"), false);
    assert_eq!(bad.problems.len(), 1, "{bad:?}");
    assert_eq!(bad.problems[0].segment, 0);
    assert_eq!(bad.problems[0].error.code, ErrorCode::Ih6007);
    let good = live.push(1, &fixture("segments/seg0.webm"), false);
    assert!(good.problems.is_empty(), "{good:?}");
    assert!(good.media_end.is_some());
}

#[test]
fn audio_without_video_is_reported_once_on_inter_2() {
    let mut live = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV2);
    let bytes = fixture("webm_opus.webm");
    let out = stream(&mut live, &bytes, &[5000]);
    let codes: Vec<ErrorCode> = out.problems.iter().map(|p| p.error.code).collect();
    assert_eq!(codes, vec![ErrorCode::Ih5001]);
}

#[test]
fn a_rate_the_interface_does_not_allow_is_refused() {
    let mut live = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2);
    let format = AudioFormat {
        sample_rate: 44_100,
        ..pcm16()
    };
    let err = live.set_audio_format(format).expect_err("44.1 kHz refused");
    assert_eq!(err.code, ErrorCode::Ih6001);
}

#[test]
fn a_long_session_holds_a_bounded_amount_of_features() {
    let (bytes, _) = speech_pcm();
    let mut live = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2);
    live.set_audio_format(pcm16()).expect("allowed");
    let mut most_frames = 0;
    let mut windows = 0;
    // About 5 minutes: the speech fixtures looped ten times, in one-second chunks.
    for (segment, chunk) in bytes.repeat(10).chunks(32_000).enumerate() {
        let out = live.push(segment as u64, chunk, false);
        windows += out.windows.len();
        most_frames = most_frames.max(live.extractor.features().frames.len());
    }
    assert!(windows >= 60, "{windows} windows");
    // 10 ms frames: everything would be 30 000; a window and its look-back is about 1 600.
    assert!(most_frames < 2_500, "{most_frames} frames held");
}

/// A session that reads its closing frames' video on a second thread beside their audio
/// (`with_spare_core` answering yes) closes the same windows as one that reads it after, with
/// the face cues in their rationales; the spare core is asked for each window that closes.
#[test]
fn reading_the_closing_video_beside_the_audio_changes_no_window() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let bytes = fixture("faces/video/astronaut_vp9_opus.webm");
    let run = |spare: bool| {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&asked);
        let mut analyzer = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV1)
            .defer_video()
            .with_spare_core(Arc::new(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                spare
            }));
        // About a second of media per frame, the video ahead read between frames, as the
        // server does.
        let mut out = LiveOutput::default();
        for (segment, chunk) in bytes.chunks(bytes.len() / 17 + 1).enumerate() {
            analyzer.read_ahead();
            out.extend(analyzer.push(segment as u64, chunk, false));
        }
        out.extend(analyzer.finish());
        (out, asked.load(Ordering::Relaxed))
    };
    let ((beside, asked), (after, _)) = (run(true), run(false));
    assert!(
        beside.windows.len() >= 3,
        "{} windows",
        beside.windows.len()
    );
    assert!(
        asked >= beside.windows.len() - 1,
        "asked {asked} times for {} windows",
        beside.windows.len()
    );
    assert_eq!(beside.windows, after.windows);
    assert_eq!(beside.degraded, after.degraded);
    let rationales: String = beside
        .windows
        .iter()
        .flat_map(|w| &w.detections)
        .map(|d| d.rationale.as_str())
        .collect();
    assert!(
        rationales.contains("face") || rationales.contains("head"),
        "no face cue in {rationales}"
    );
}
