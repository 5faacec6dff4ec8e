//! Face detection + landmarks per 720p frame, one thread (tract runs single-threaded).
//!
//! The frame is built as `tests/fixtures/faces/reference/make.py --time` builds it, so the Python
//! reference's figure in BENCHMARKS.md is for the same pixels: the 180x180 crop at (30, 0) of
//! frames/astronaut.png, replicated 4x to 720x720, on a black 1280x720 canvas at x = 280.

use attune_vision::{FaceDetector, FaceMesh, Image};
use criterion::Criterion;
use std::hint::black_box;

fn bench_frame() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/faces/reference/frames/astronaut.png"
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("astronaut.png"),
    ));
    let mut reader = decoder.read_info().expect("png");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("frame");
    assert_eq!((info.width, info.color_type), (256, png::ColorType::Rgb));
    let (w, h) = (1280usize, 720usize);
    let mut frame = vec![0u8; w * h * 3];
    for y in 0..720 {
        for x in 0..720 {
            let (sx, sy) = (30 + x / 4, y / 4);
            let src = (sy * 256 + sx) * 3;
            let dst = (y * w + 280 + x) * 3;
            frame[dst..dst + 3].copy_from_slice(&buf[src..src + 3]);
        }
    }
    frame
}

fn faces(c: &mut Criterion) {
    let frame = bench_frame();
    let img = Image::new(1280, 720, &frame).expect("image");
    let detector = FaceDetector::new().expect("detector");
    let mesh = FaceMesh::new().expect("mesh");
    let found = detector.detect(&img).expect("detect");
    assert_eq!(found.len(), 1, "the bench frame has one face");
    // The detector's own input size: no resampling to speak of, so the difference from
    // detect_720p is the letterbox and resize.
    let small = vec![90u8; 128 * 128 * 3];
    let small = Image::new(128, 128, &small).expect("image");
    c.bench_function("detect_128x128", |b| {
        b.iter(|| detector.detect(black_box(&small)).expect("detect"))
    });
    c.bench_function("detect_720p", |b| {
        b.iter(|| detector.detect(black_box(&img)).expect("detect"))
    });
    c.bench_function("landmarks_720p", |b| {
        b.iter(|| mesh.landmarks(black_box(&img), &found[0]).expect("mesh"))
    });
    c.bench_function("detect_and_landmarks_720p", |b| {
        b.iter(|| {
            let faces = detector.detect(black_box(&img)).expect("detect");
            let marks: Vec<_> = faces
                .iter()
                .map(|f| mesh.landmarks(&img, f).expect("mesh"))
                .collect();
            marks
        })
    });
}

fn main() {
    let mut c = Criterion::default().sample_size(30).configure_from_args();
    faces(&mut c);
    c.final_summary();
}
