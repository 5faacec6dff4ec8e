//! How long each frame of a live session takes to analyze, in-process: the file is cut into
//! about one second of bytes per frame (`DURATION_S` is its length) and pushed through a
//! `LiveAnalyzer` as the server does it (`defer_video`, the video ahead read between frames),
//! twice in one process. Prints, per frame, the wall time of `push` (what the frame that closes
//! a window waits for) and of the read-ahead after it, then the process's CPU seconds.
//! `WARM=1` calls `attune_core::warm_up` first (as `attune serve` does); without it the first
//! run pays for building the networks' plans. `FRAMES=N` pushes the first N frames of each run
//! (30 by default).
//!
//! ```text
//! cargo run --release -p attune-core --features attune-media/ffmpeg --example live_chunk_cost -- FILE [audio|faces] [DURATION_S]
//! ```

use attune_core::live::LiveAnalyzer;
use attune_core::wire::{Endpoint, Model};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: live_chunk_cost FILE [audio|faces] [DURATION_S]");
        std::process::exit(2);
    };
    let (model, endpoint) = match args.get(1).map(String::as_str) {
        Some("audio") => (Model::Inter2Audio, Endpoint::StreamV2),
        _ => (Model::Inter2, Endpoint::StreamV1),
    };
    let duration: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(57.0);
    if std::env::var("WARM").is_ok_and(|v| v == "1") {
        let cpu = cpu_time::ProcessTime::now();
        let warmed = attune_core::warm_up();
        println!("{warmed:?}, {:.2} CPU s", cpu.elapsed().as_secs_f64());
    }
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let chunk = (bytes.len() as f64 / duration).ceil().max(1.0) as usize;
    // The first `FRAMES` frames (30 by default: a face file's first half minute), or all.
    let frames = std::env::var("FRAMES")
        .ok()
        .and_then(|f| f.parse().ok())
        .unwrap_or(30);
    let cpu = cpu_time::ProcessTime::now();
    for run in 0..2 {
        println!("run {run}");
        let mut analyzer = LiveAnalyzer::new(model, endpoint).defer_video();
        for (i, piece) in bytes.chunks(chunk).enumerate().take(frames) {
            let t = Instant::now();
            let out = analyzer.push(i as u64, piece, false);
            let push_ms = t.elapsed().as_secs_f64() * 1000.0;
            let t = Instant::now();
            while analyzer.has_work_ahead() {
                analyzer.read_ahead();
            }
            let ahead_ms = t.elapsed().as_secs_f64() * 1000.0;
            println!(
                "frame {i:2}  media to {:6.2} s  windows closed {}  push {push_ms:6.1} ms  read ahead {ahead_ms:6.1} ms",
                analyzer.media_end(),
                out.windows.len()
            );
        }
    }
    println!("process CPU {:.2} s", cpu.elapsed().as_secs_f64());
}
