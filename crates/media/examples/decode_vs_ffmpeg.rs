//! Compares this crate's pixel decoders with ffmpeg's on one file, frame by frame: the PSNR of
//! each presented frame's full-size luma against ffmpeg's decode of the same frame (the Y plane
//! of `ffmpeg -i FILE -f rawvideo -pix_fmt yuv420p -`, ffmpeg on the PATH), and the frame counts
//! of both. A decoder that drifts from the reference (a wrong prediction carried from
//! frame to frame until the next key frame) shows as PSNR falling between key frames.
//!
//! ```text
//! cargo run --release -p attune-media --example decode_vs_ffmpeg -- FILE [--frames]
//! ```
//!
//! Prints the frame counts, the mean and lowest PSNR (identical frames count as 99 dB) and,
//! with `--frames`, one line per frame.

use std::process::{Command, ExitCode};

use attune_media::video::{decode_pictures_each, PictureOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: decode_vs_ffmpeg FILE [--frames]");
        return ExitCode::from(2);
    };
    let per_frame = args.iter().any(|a| a == "--frames");
    match compare(path, per_frame) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("decode_vs_ffmpeg: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn compare(path: &str, per_frame: bool) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut ours = Vec::new();
    let options = PictureOptions {
        luma_width: u32::MAX,
        rgb_width: None,
        sample_fps: None,
    };
    let summary =
        decode_pictures_each(&bytes, options, |p| ours.push(p.luma)).map_err(|e| e.to_string())?;
    let first = ours.first().ok_or("no decoded frames")?;
    let (w, h) = (first.width as usize, first.height as usize);
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-threads", "1", "-i", path, "-map", "0:v:0"])
        .args([
            "-vsync",
            "passthrough",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "yuv420p",
            "-",
        ])
        .output()
        .map_err(|e| format!("ffmpeg: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let chroma = w.div_ceil(2) * h.div_ceil(2);
    let theirs: Vec<&[u8]> = out
        .stdout
        .chunks_exact(w * h + 2 * chroma)
        .map(|frame| &frame[..w * h])
        .collect();
    println!(
        "{path}: {w}x{h}, ours {} frames (skipped {}), ffmpeg {} frames",
        ours.len(),
        summary.skipped,
        theirs.len()
    );
    let mut psnrs = Vec::new();
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        if a.data.len() != b.len() {
            return Err(format!("frame {i}: size differs"));
        }
        let mse = a
            .data
            .iter()
            .zip(b.iter())
            .map(|(&x, &y)| f64::from(x.abs_diff(y)).powi(2))
            .sum::<f64>()
            / b.len() as f64;
        let psnr = if mse == 0.0 {
            99.0
        } else {
            10.0 * (255.0 * 255.0 / mse).log10()
        };
        if per_frame {
            println!("frame {i:5} t {:8.3} psnr {psnr:6.2}", a.pts);
        }
        psnrs.push(psnr);
    }
    let mean = psnrs.iter().sum::<f64>() / psnrs.len().max(1) as f64;
    let (worst, at) = psnrs
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i))
        .fold((f64::MAX, 0), |a, b| if b.0 < a.0 { b } else { a });
    println!("psnr mean {mean:.2} dB, lowest {worst:.2} dB at frame {at}");
    Ok(())
}
