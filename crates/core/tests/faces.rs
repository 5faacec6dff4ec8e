//! Faces on real video: the committed astronaut animation (`tests/fixtures/faces/video`, ground
//! truth in `events.json`) in H.264 MP4, VP8 and VP9 WebM (and its first 8 s as a webcam sends
//! it, in the same three codecs), through the visual track, the public
//! upload path (`pipeline::analyze_bytes`, `inter-2` as the v1 route reads a video without
//! audio) and the stream path (`live::LiveAnalyzer`).

use attune_core::lifecycle::ClosedWindow;
use attune_core::live::LiveAnalyzer;
use attune_core::pipeline::{analyze_bytes, AnalysisOptions, FileAnalysis};
use attune_core::visual::visual_track;
use attune_core::wire::{Endpoint, EngagementLevel, Model, SignalType};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const CODECS: [&str; 3] = [
    "astronaut_h264.mp4",
    "astronaut_vp8.webm",
    "astronaut_vp9.webm",
];
/// The first 8 s of the same animation as a browser's webcam would send it (640x480, 15 fps).
const WEBCAM: [&str; 3] = ["webcam_h264.mp4", "webcam_vp8.webm", "webcam_vp9.webm"];
/// Tolerance on a movement's start and end: one face sample (5 a second) and a bit.
const TIMING_S: f64 = 0.35;

fn video(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/faces/video/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `(type, start, end, face)` of every event in `events.json`.
fn events() -> Vec<(String, f64, f64, String)> {
    let json: Value = serde_json::from_slice(&video("events.json")).expect("events.json");
    json["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["type"].as_str().expect("type").to_owned(),
                e["start"].as_f64().expect("start"),
                e["end"].as_f64().expect("end"),
                e["face"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The nod or shake events of one face, merged into movements as the script plays them back to
/// back (two nods 0.4 s apart are one movement of two nods, or two of one).
fn truth(kind: &str, face: &str) -> Vec<(f64, f64)> {
    events()
        .into_iter()
        .filter(|e| e.0 == kind && e.3 == face)
        .map(|e| (e.1, e.2))
        .collect()
}

#[derive(Debug)]
struct Found {
    x: f64,
    start: f64,
    end: f64,
    count: u32,
    amplitude: f64,
    nod: bool,
}

/// Every nod and shake movement the visual track found, over the whole video (one window
/// holding all of it, so each movement comes once, whole).
fn gestures(name: &str) -> Vec<Found> {
    let track = visual_track(&video(name)).expect("parse").expect("video");
    let mut out = Vec::new();
    {
        let faces = track.measure_window(0.0, 19.0).faces.expect("pixels");
        for f in faces.faces {
            for (list, nod) in [(&f.nods, true), (&f.shakes, false)] {
                for g in list {
                    out.push(Found {
                        x: f.x,
                        start: g.start,
                        end: g.end,
                        count: g.count,
                        amplitude: g.amplitude,
                        nod,
                    });
                }
            }
        }
    }
    out
}

/// Checks that the found movements of one kind and face cover exactly the true events: the
/// right count, each event inside a movement (within the tolerance), no movement elsewhere.
fn assert_matches(name: &str, found: &[&Found], truth: &[(f64, f64)], what: &str) {
    let count: u32 = found.iter().map(|g| g.count).sum();
    assert_eq!(count as usize, truth.len(), "{name}: {what}: {found:?}");
    for (s, e) in truth {
        assert!(
            found
                .iter()
                .any(|g| g.start <= s + TIMING_S && g.end >= e - TIMING_S),
            "{name}: {what} at {s}-{e} s not found in {found:?}"
        );
    }
    for g in found {
        assert!(
            truth
                .iter()
                .any(|(s, e)| (g.start - s).abs() <= TIMING_S || (g.end - e).abs() <= TIMING_S),
            "{name}: {what} found at {:.1}-{:.1} s, where there is none",
            g.start,
            g.end
        );
        assert!(g.amplitude >= 5.0, "{name}: {what}: {g:?}");
    }
}

#[test]
fn nods_and_shakes_are_found_at_their_times_by_whom_in_every_codec() {
    for name in CODECS {
        let all = gestures(name);
        let centre: Vec<&Found> = all.iter().filter(|g| (0.4..0.6).contains(&g.x)).collect();
        let nods: Vec<&Found> = centre.iter().copied().filter(|g| g.nod).collect();
        let shakes: Vec<&Found> = centre.iter().copied().filter(|g| !g.nod).collect();
        assert_matches(name, &nods, &truth("nod", "centre"), "centre nods");
        assert_matches(name, &shakes, &truth("shake", "centre"), "centre shakes");
        // In the two-face span only the left face nods; the right one is still.
        let left: Vec<&Found> = all.iter().filter(|g| g.x < 0.4).collect();
        assert!(left.iter().all(|g| g.nod), "{name}: {left:?}");
        assert_matches(name, &left, &truth("nod", "left"), "left nods");
        assert!(
            all.iter().all(|g| g.x < 0.6),
            "{name}: the right face did not move: {all:?}"
        );
    }
}

fn rationale(a: &FileAnalysis, window: usize, signal: SignalType) -> Option<String> {
    a.windows[window]
        .signals
        .iter()
        .find(|s| s.signal_type == signal)
        .map(|s| s.rationale.clone().unwrap_or_default())
}

#[test]
fn uploads_read_nods_as_agreement_and_shakes_as_disagreement_naming_the_face() {
    for name in CODECS {
        let a = analyze_bytes(&video(name), &AnalysisOptions::v1_upload()).expect("analyzed");
        assert_eq!(a.windows.len(), 4, "{name}");
        let agree = rationale(&a, 0, SignalType::Agreement).expect("nods: agreement");
        assert!(
            agree.to_lowercase().contains("face 1: 2 nods in") && agree.contains("pitch amplitude"),
            "{name}: {agree}"
        );
        assert!(
            rationale(&a, 0, SignalType::Disagreement).is_none(),
            "{name}"
        );
        let disagree = rationale(&a, 1, SignalType::Disagreement).expect("shakes: disagreement");
        assert!(
            disagree.to_lowercase().contains("face 1: 2 head shakes in")
                && disagree.contains("yaw amplitude"),
            "{name}: {disagree}"
        );
        assert!(rationale(&a, 1, SignalType::Agreement).is_none(), "{name}");
        // 10-15 s: a card slides over the face, then a still picture without it: neither is a
        // gesture. The left face of the two from 14 s nods at 14.5-15.3 s: that nod crosses into
        // the window, so the window counts it, with the time that falls in it.
        assert!(
            rationale(&a, 2, SignalType::Disagreement).is_none(),
            "{name}: {:?}",
            a.windows[2]
        );
        let crossing = rationale(&a, 2, SignalType::Agreement).expect("the crossing nod");
        assert!(
            crossing.contains("(left): 1 nod in") && crossing.contains("-15.0 s)"),
            "{name}: {crossing}"
        );
        // 15-19 s: two faces; the nods are the left one's (the crossing one and the next) and
        // the rationale says so.
        let left = rationale(&a, 3, SignalType::Agreement).expect("left nods: agreement");
        assert!(
            left.contains("(left): 2 nods in") && left.contains("(15.0-"),
            "{name}: {left}"
        );
    }
}

#[test]
fn a_still_or_black_picture_shows_no_behaviour() {
    for name in ["still_h264.mp4", "black_vp8.webm"] {
        let a = analyze_bytes(&video(name), &AnalysisOptions::v1_upload()).expect("analyzed");
        for w in &a.windows {
            assert!(w.signals.is_empty(), "{name}: {w:?}");
            assert_eq!(w.engagement_status, EngagementLevel::Neutral, "{name}");
        }
    }
    // What the track saw: a frozen picture (read once, then repeated) versus no picture at all.
    let still = visual_track(&video("still_h264.mp4")).unwrap().unwrap();
    let m = still.measure_window(0.0, 5.0);
    assert!(m.coverage > 0.95, "{m:?}");
    // Every sampled picture repeats the first except at H.264 key frames (make.sh: one every
    // 2 s, at 0, 2 and 4 s here): a key frame is coded afresh, so its picture differs from the
    // last by the coding noise, and is read as live.
    let faces = m.faces.expect("pixels");
    assert!(
        faces.pictures >= 20 && faces.pictures - faces.frozen <= 3,
        "{faces:?}"
    );
    let black = visual_track(&video("black_vp8.webm")).unwrap().unwrap();
    let m = black.measure_window(0.0, 5.0);
    assert_eq!(m.coverage, 0.0, "a black picture is no video: {m:?}");
}

#[test]
fn streams_read_the_same_nods_and_shakes() {
    for name in ["astronaut_vp8.webm", "astronaut_vp9.webm"] {
        let bytes = video(name);
        let mut live = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV2);
        let mut windows = Vec::new();
        for (i, chunk) in bytes.chunks(16 * 1024).enumerate() {
            let out = live.push(i as u64, chunk, false);
            assert!(out.fatal.is_none(), "{name}: {:?}", out.fatal);
            windows.extend(out.windows);
        }
        windows.extend(live.finish().windows);
        assert_eq!(windows.len(), 4, "{name}");
        let find = |w: usize, s: SignalType| {
            windows[w]
                .detections
                .iter()
                .find(|d| d.signal_type == s)
                .map(|d| d.rationale.clone())
        };
        let agree = find(0, SignalType::Agreement).expect("agreement");
        assert!(
            agree.to_lowercase().contains("face 1: 2 nods"),
            "{name}: {agree}"
        );
        let disagree = find(1, SignalType::Disagreement).expect("disagreement");
        assert!(disagree.contains("2 head shakes"), "{name}: {disagree}");
        let left = find(3, SignalType::Agreement).expect("left agreement");
        assert!(left.contains("(left): 2 nods"), "{name}: {left}");
    }
}

/// A stream's windows when its bytes arrive in pieces of `chunk` bytes; with `defer`, the
/// pictures ahead of the windows are read by `read_ahead` after every other piece, as the server
/// does between a session's frames.
fn stream_windows(bytes: &[u8], chunk: usize, defer: bool) -> Vec<ClosedWindow> {
    let mut live = LiveAnalyzer::new(Model::Inter2, Endpoint::StreamV2);
    if defer {
        live = live.defer_video();
    }
    let mut windows = Vec::new();
    for (i, piece) in bytes.chunks(chunk).enumerate() {
        let out = live.push(i as u64, piece, false);
        assert!(out.fatal.is_none(), "{:?}", out.fatal);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        windows.extend(out.windows);
        if defer && i % 2 == 1 {
            live.read_ahead();
        }
    }
    windows.extend(live.finish().windows);
    windows
}

#[test]
fn a_streams_face_cues_do_not_depend_on_how_its_video_was_cut() {
    // The animation with speech: windows close while the video is still arriving, each read
    // from the pictures before its end (and a quarter second more), whenever they came.
    let bytes = video("astronaut_vp9_opus.webm");
    let whole = stream_windows(&bytes, bytes.len(), false);
    assert_eq!(whole.len(), 4);
    let find = |w: usize, s: SignalType| {
        whole[w]
            .detections
            .iter()
            .find(|d| d.signal_type == s)
            .map(|d| d.rationale.clone())
    };
    let agree = find(0, SignalType::Agreement).expect("agreement");
    assert!(agree.contains("2 nods"), "{agree}");
    let disagree = find(1, SignalType::Disagreement).expect("disagreement");
    assert!(disagree.contains("2 head shakes"), "{disagree}");
    // About a second of media a piece (as a browser's MediaRecorder sends), a few kilobytes,
    // and a second a piece with the pictures read between pieces.
    let second = bytes.len().div_ceil(19);
    for (chunk, defer) in [(second, false), (4 * 1024, false), (second, true)] {
        let cut = stream_windows(&bytes, chunk, defer);
        assert_eq!(cut, whole, "pieces of {chunk} bytes, deferred {defer}");
    }
}

/// One window of a clip as read from its faces: per face place (left, centre, right), the nods
/// and the shakes that fall in the window, and the signals the upload analysis gave.
#[derive(Debug)]
struct WindowReading {
    gestures: BTreeMap<(&'static str, &'static str), u32>,
    signals: BTreeSet<String>,
}

fn place(x: f64) -> &'static str {
    if x < 0.4 {
        "left"
    } else if x > 0.6 {
        "right"
    } else {
        "centre"
    }
}

fn reading(name: &str) -> Vec<WindowReading> {
    let bytes = video(name);
    let track = visual_track(&bytes).expect("parse").expect("video");
    let analysis = analyze_bytes(&bytes, &AnalysisOptions::v1_upload()).expect("analyzed");
    analysis
        .windows
        .iter()
        .map(|w| {
            let faces = track
                .measure_window(w.start_seconds, w.end_seconds)
                .faces
                .expect("pixels");
            let mut gestures = BTreeMap::new();
            for f in &faces.faces {
                for (kind, list) in [("nods", &f.nods), ("shakes", &f.shakes)] {
                    let count: u32 = list.iter().map(|g| g.count).sum();
                    if count > 0 {
                        *gestures.entry((place(f.x), kind)).or_default() += count;
                    }
                }
            }
            let signals = w
                .signals
                .iter()
                .map(|s| format!("{:?}", s.signal_type))
                .collect();
            WindowReading { gestures, signals }
        })
        .collect()
}

#[test]
fn the_same_clip_reads_the_same_in_h264_vp8_and_vp9() {
    // Two clips, each in the three codecs at one size and rate: the scripted animation at
    // 320x240 and 10 fps, and its first 8 s as a browser's webcam sends it (640x480, 15 fps,
    // sensor noise, realtime encoders). The same nods and shakes (counts within one) in the
    // same windows, by the same face, and the same signals in every window.
    for clip in [CODECS, WEBCAM] {
        let readings: Vec<(&str, Vec<WindowReading>)> =
            clip.iter().map(|&name| (name, reading(name))).collect();
        let (first, base) = &readings[0];
        for (name, other) in &readings[1..] {
            assert_eq!(base.len(), other.len(), "{first} vs {name}");
            for (i, (a, b)) in base.iter().zip(other).enumerate() {
                let keys: BTreeSet<_> = a.gestures.keys().chain(b.gestures.keys()).collect();
                for key in keys {
                    let (x, y) = (a.gestures.get(key), b.gestures.get(key));
                    assert!(
                        x.is_some() && y.is_some() && x.unwrap().abs_diff(*y.unwrap()) <= 1,
                        "window {i}, {key:?}: {first} {a:?} vs {name} {b:?}"
                    );
                }
                assert_eq!(
                    a.signals, b.signals,
                    "window {i}: {first} {a:?} vs {name} {b:?}"
                );
            }
        }
        // And what they read is the script: nods in the first window, shakes in the second.
        assert_eq!(
            base[0].gestures.get(&("centre", "nods")),
            Some(&2),
            "{first}"
        );
        assert_eq!(
            base[1].gestures.get(&("centre", "shakes")),
            Some(&2),
            "{first}"
        );
    }
}
