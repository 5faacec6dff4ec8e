//! CPU time per frame of this crate's pixel decoders on one file, for comparing with
//! `ffmpeg -benchmark -threads 1 -i FILE -map 0:v:0 -f null -` (whose `utime` is its CPU time)
//! in the same run: `benches/decode_vs_ffmpeg.sh` runs both.
//!
//! ```text
//! cargo run --release -p attune-media --example decode_cpu -- FILE [MODE] [RUNS]
//! ```
//!
//! MODE: `all` (default: every frame decoded and shrunk to a 16 px luma thumbnail, the least
//! conversion there is), `sampled` (the analysis setting: every frame the later ones need
//! decoded, 10 pictures a second converted to 160 px luma and 640 px RGB), `decode` (every frame
//! the later ones need, none converted: H.264 pictures nothing predicts from are not decoded).
//! Prints the user + system CPU seconds of the decode loop (the file read and its demuxing
//! excluded), per run and per frame.

use std::process::ExitCode;

use attune_media::video::{decode_pictures_each, encoded_video, PictureOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: decode_cpu FILE [all|sampled|decode] [RUNS]");
        return ExitCode::from(2);
    };
    let mode = args.get(1).map_or("all", String::as_str);
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let options = match mode {
        "all" => PictureOptions {
            luma_width: 16,
            rgb_width: None,
            sample_fps: None,
        },
        "sampled" => PictureOptions {
            luma_width: 160,
            rgb_width: Some(640),
            sample_fps: Some(10.0),
        },
        "decode" => PictureOptions {
            luma_width: 16,
            rgb_width: None,
            sample_fps: Some(1e-6),
        },
        other => {
            eprintln!("decode_cpu: unknown mode {other}");
            return ExitCode::from(2);
        }
    };
    let Ok(bytes) = std::fs::read(path) else {
        eprintln!("decode_cpu: cannot read {path}");
        return ExitCode::FAILURE;
    };
    let frames = match encoded_video(&bytes) {
        Ok(Some(v)) => v.frames.len(),
        _ => {
            eprintln!("decode_cpu: {path}: no video");
            return ExitCode::FAILURE;
        }
    };
    for run in 0..runs {
        let before = cpu_seconds();
        let mut pictures = 0usize;
        let summary = decode_pictures_each(&bytes, options, |_| pictures += 1);
        let spent = cpu_seconds() - before;
        if let Err(e) = summary {
            eprintln!("decode_cpu: {path}: {e}");
            return ExitCode::FAILURE;
        }
        println!(
            "{path} {mode} run {run}: {spent:.3} s CPU, {frames} frames, {pictures} pictures, {:.3} ms/frame",
            1000.0 * spent / frames.max(1) as f64
        );
    }
    ExitCode::SUCCESS
}

/// CPU seconds (user and system) of this process so far.
fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}
