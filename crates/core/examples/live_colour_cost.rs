//! What a live session's reader costs with and without the faces' colour filter: the file is
//! streamed through `LiveReader` as a face session reads it (`visual::live_pixels`, deferred
//! pictures, 16 KiB chunks), `COPIES` times back to back as separate files, with
//! `visual::face_colour_filter` (the default) or colouring every picture (`--all`). Prints the
//! pictures handed out, how many were coloured, and the process's CPU seconds.
//!
//! ```text
//! cargo run --release -p attune-core --features attune-media/ffmpeg --example live_colour_cost -- FILE [COPIES] [--all]
//! ```

use attune_core::visual::{face_colour_filter, live_pixels};
use attune_media::live::LiveReader;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: live_colour_cost FILE [COPIES] [--all]");
        std::process::exit(2);
    };
    let copies: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let every = args.iter().any(|a| a == "--all");
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = cpu_time::ProcessTime::now();
    let mut reader = LiveReader::new(true)
        .with_pixels(live_pixels())
        .with_deferred_pictures();
    if !every {
        reader = reader.with_rgb_filter(face_colour_filter());
    }
    let (mut pictures, mut coloured, mut segment) = (0usize, 0usize, 0u64);
    let mut count = |pics: Vec<attune_media::video::VideoPicture>| {
        pictures += pics.len();
        coloured += pics.iter().filter(|p| p.rgb.is_some()).count();
    };
    for _ in 0..copies {
        for chunk in bytes.chunks(16 * 1024) {
            count(reader.push(chunk, segment).pictures);
            count(reader.decode_pictures(reader.media_end() - 1.0).pictures);
            segment += 1;
        }
        count(reader.finish().pictures);
    }
    println!(
        "{} colour filter: {coloured} of {pictures} pictures coloured, {:.1} s of media, {:.2} CPU s",
        if every { "without" } else { "with" },
        reader.media_end(),
        start.elapsed().as_secs_f64()
    );
}
