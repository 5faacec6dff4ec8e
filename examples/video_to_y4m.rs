//! Decodes a video file's first video track with `attune-media`'s pixel decoders and writes it as
//! an uncompressed YUV4MPEG2 (`.y4m`) file, 4:2:0 (`C420`), at the video's own size and frame
//! rate. Chromium plays such a file as a fake camera
//! (`--use-file-for-fake-video-capture=FILE.y4m`), looping it: that is how the `/demo` browser
//! test (`tests/browser/`) shows the page a face that nods and shakes its head, from the
//! committed fixture videos in `tests/fixtures/faces/video/`.
//!
//! The output is a function of the input alone (same bytes in, same bytes out). Pictures are the
//! decoder's RGB (BT.601) converted back to BT.601 studio-range Y'CbCr, chroma averaged over each
//! 2x2 block.
//!
//! Run: `cargo run --example video_to_y4m -- INPUT OUTPUT.y4m`

use attune::media::{decode_pictures_each, PictureOptions, RgbFrame};
use std::io::{BufWriter, Write};
use std::process::ExitCode;

/// Wider pictures are scaled down to this (never up): the face fixtures are 320 px across.
const MAX_WIDTH: u32 = 1920;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: video_to_y4m INPUT OUTPUT.y4m");
        return ExitCode::from(2);
    };
    match convert(input, output) {
        Ok(frames) => {
            eprintln!("{output}: {frames} frames");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{input}: {message}");
            ExitCode::FAILURE
        }
    }
}

fn convert(input: &str, output: &str) -> Result<usize, String> {
    let bytes = std::fs::read(input).map_err(|e| e.to_string())?;
    let mut pictures: Vec<RgbFrame> = Vec::new();
    let options = PictureOptions {
        luma_width: 16,
        rgb_width: Some(MAX_WIDTH),
        sample_fps: None,
    };
    decode_pictures_each(&bytes, options, |picture| pictures.extend(picture.rgb))
        .map_err(|e| e.to_string())?;
    let Some(first) = pictures.first() else {
        return Err("no decoded pictures (no video track, or a codec without a decoder)".into());
    };
    let (width, height) = (first.width, first.height);
    if pictures
        .iter()
        .any(|p| (p.width, p.height) != (width, height))
    {
        return Err("the picture size changes within the video".into());
    }
    let (num, den) = frame_rate(&pictures);
    let file = std::fs::File::create(output).map_err(|e| format!("{output}: {e}"))?;
    let mut out = BufWriter::new(file);
    let write = |out: &mut BufWriter<std::fs::File>| -> std::io::Result<()> {
        writeln!(
            out,
            "YUV4MPEG2 W{width} H{height} F{num}:{den} Ip A1:1 C420"
        )?;
        for picture in &pictures {
            out.write_all(b"FRAME\n")?;
            out.write_all(&to_i420(picture))?;
        }
        out.flush()
    };
    write(&mut out).map_err(|e| format!("{output}: {e}"))?;
    Ok(pictures.len())
}

/// The frame rate as a fraction, from the median interval between presentation times (10 fps
/// when there is only one picture).
fn frame_rate(pictures: &[RgbFrame]) -> (u64, u64) {
    let mut steps: Vec<f64> = pictures
        .windows(2)
        .map(|w| w[1].pts - w[0].pts)
        .filter(|d| d.is_finite() && *d > 0.0)
        .collect();
    if steps.is_empty() {
        return (10, 1);
    }
    steps.sort_by(f64::total_cmp);
    let fps = 1.0 / steps[steps.len() / 2];
    let whole = fps.round();
    if (fps - whole).abs() < 0.01 && whole >= 1.0 {
        return (whole as u64, 1);
    }
    let num = (fps * 1000.0).round().max(1.0) as u64;
    let divisor = gcd(num, 1000);
    (num / divisor, 1000 / divisor)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// One RGB picture as planar 4:2:0 Y'CbCr (BT.601, studio range): the Y plane, then Cb, then
/// Cr, each chroma sample the mean of its 2x2 block (odd sizes round the chroma planes up).
fn to_i420(picture: &RgbFrame) -> Vec<u8> {
    let (w, h) = (picture.width as usize, picture.height as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let rgb = |x: usize, y: usize| {
        let i = (y * w + x) * 3;
        let p = &picture.data[i..i + 3];
        (f64::from(p[0]), f64::from(p[1]), f64::from(p[2]))
    };
    let clamp = |v: f64| v.round().clamp(0.0, 255.0) as u8;
    let mut out = Vec::with_capacity(w * h + 2 * cw * ch);
    for y in 0..h {
        for x in 0..w {
            let (r, g, b) = rgb(x, y);
            out.push(clamp(
                16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0,
            ));
        }
    }
    let mut cb = Vec::with_capacity(cw * ch);
    let mut cr = Vec::with_capacity(cw * ch);
    for cy in 0..ch {
        for cx in 0..cw {
            let (mut r, mut g, mut b, mut n) = (0.0, 0.0, 0.0, 0.0);
            for y in (2 * cy)..(2 * cy + 2).min(h) {
                for x in (2 * cx)..(2 * cx + 2).min(w) {
                    let (pr, pg, pb) = rgb(x, y);
                    (r, g, b, n) = (r + pr, g + pg, b + pb, n + 1.0);
                }
            }
            let (r, g, b) = (r / n, g / n, b / n);
            cb.push(clamp(
                128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0,
            ));
            cr.push(clamp(128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0));
        }
    }
    out.extend(cb);
    out.extend(cr);
    out
}
