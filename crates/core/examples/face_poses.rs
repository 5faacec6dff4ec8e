//! Prints what the visual track read of a video's faces: every face sample (time, face, yaw,
//! pitch) and every nod and shake movement, over the whole video and per 5 s upload window;
//! with `--signals`, the signals of the v1 upload analysis (`inter-2`, the picture read even
//! without audio) per window. For comparing one clip across codecs, sample by sample.
//!
//! ```text
//! cargo run --release -p attune-core --example face_poses -- FILE [--samples] [--signals]
//! ```

use attune_core::pipeline::{analyze_bytes, AnalysisOptions};
use attune_core::visual::visual_track;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: face_poses FILE [--samples] [--signals]");
        std::process::exit(2);
    };
    let samples = args.iter().any(|a| a == "--samples");
    let signals = args.iter().any(|a| a == "--signals");
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("face_poses: {path}: {e}");
            std::process::exit(1);
        }
    };
    let track = match visual_track(&bytes) {
        Ok(Some(t)) => t,
        Ok(None) => {
            eprintln!("face_poses: {path}: no video");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("face_poses: {path}: {e}");
            std::process::exit(1);
        }
    };
    let end = track.frames().last().map_or(0.0, |f| f.pts) + 1.0;
    let whole = track.measure_window(0.0, end);
    let Some(faces) = whole.faces else {
        println!("no pixels");
        return;
    };
    println!(
        "pictures {} frozen {} faceless {}",
        faces.pictures, faces.frozen, faces.faceless
    );
    for f in &faces.faces {
        println!(
            "face {} x {:.2}: {} samples",
            f.id + 1,
            f.x,
            f.samples.len()
        );
        if samples {
            for s in &f.samples {
                println!(
                    "  t {:6.2} yaw {:6.1} pitch {:6.1} away {:5.1}",
                    s.t, s.yaw, s.pitch, s.away
                );
            }
        }
    }
    let mut start = 0.0;
    while start < end - 1.0 {
        let w = track.measure_window(start, start + 5.0);
        for f in w.faces.iter().flat_map(|m| &m.faces) {
            for (kind, list) in [("nods", &f.nods), ("shakes", &f.shakes)] {
                for g in list {
                    println!(
                        "window {start:4.0}-{:<4.0} face {} {kind} {} at {:.2}-{:.2} s, amplitude {:.1}",
                        start + 5.0,
                        f.id + 1,
                        g.count,
                        g.start,
                        g.end,
                        g.amplitude
                    );
                }
            }
        }
        start += 5.0;
    }
    if signals {
        match analyze_bytes(&bytes, &AnalysisOptions::v1_upload()) {
            Ok(a) => {
                for w in &a.windows {
                    for s in &w.signals {
                        println!(
                            "window {:4.0}-{:<4.0} {:?}: {}",
                            w.start_seconds,
                            w.end_seconds,
                            s.signal_type,
                            s.rationale.as_deref().unwrap_or("")
                        );
                    }
                }
            }
            Err(e) => println!("analysis: {e}"),
        }
    }
}
