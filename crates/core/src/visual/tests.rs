//! The visual measures on synthetic luma sequences with known motion, on encoded-size
//! sequences, and on the committed video fixtures.

use std::f64::consts::TAU;
use std::path::PathBuf;

use attune_media::video::LumaFrame;
use attune_media::VideoFrameInfo;

use super::*;

const W: u32 = 160;
const H: u32 = 120;
const FPS: f64 = 25.0;

/// A smooth, non-repeating test picture displaced by `(dx, dy)` pixels (right, down), with
/// `noise` (0 or 1 added per pixel, seeded by `seed`) as a camera would add.
fn picture(dx: f64, dy: f64, noise: bool, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity((W * H) as usize);
    for y in 0..H {
        for x in 0..W {
            let (u, v) = (f64::from(x) - dx, f64::from(y) - dy);
            let p = 128.0
                + 50.0 * (0.21 * u + 0.7 * (0.05 * v).sin()).sin()
                + 40.0 * (0.17 * v + 0.4 * (0.07 * u).cos()).cos();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = if noise { (state & 1) as f64 } else { 0.0 };
            out.push((p + n).round().clamp(0.0, 255.0) as u8);
        }
    }
    out
}

/// `seconds` of frames at [`FPS`] from `start`, the picture displaced by `offset(t)`.
fn sequence(start: f64, seconds: f64, offset: impl Fn(f64) -> (f64, f64)) -> Vec<LumaFrame> {
    (0..(seconds * FPS).round() as usize)
        .map(|k| {
            let t = start + k as f64 / FPS;
            let (dx, dy) = offset(t);
            LumaFrame {
                pts: t,
                width: W,
                height: H,
                data: picture(dx, dy, true, k as u64),
            }
        })
        .collect()
}

fn track_of(frames: &[LumaFrame]) -> VisualTrack {
    let mut track = VisualTrack::new();
    for f in frames {
        track.push_luma(f);
    }
    track
}

#[test]
fn a_static_picture_is_still_with_no_gesture() {
    let m = track_of(&sequence(0.0, 5.0, |_| (0.0, 0.0))).measure_window(0.0, 5.0);
    assert!(m.stillness.unwrap() > 0.95, "{m:?}");
    assert!(m.motion.unwrap() < 0.6, "{m:?}");
    assert!(m.nod.unwrap() < 0.1 && m.shake.unwrap() < 0.1, "{m:?}");
    assert!((m.coverage - 1.0).abs() < 1e-9, "{m:?}");
}

#[test]
fn periodic_vertical_motion_is_a_nod_not_a_shake() {
    let frames = sequence(0.0, 5.0, |t| (0.0, 3.0 * (TAU * 2.0 * t).sin()));
    let m = track_of(&frames).measure_window(0.0, 5.0);
    assert!(m.nod.unwrap() > 0.5, "{m:?}");
    assert!(m.shake.unwrap() < 0.1, "{m:?}");
    assert!(
        m.motion.unwrap() > STILL_MOTION && m.stillness.unwrap() < 0.2,
        "{m:?}"
    );
}

#[test]
fn periodic_horizontal_motion_is_a_shake_not_a_nod() {
    let frames = sequence(0.0, 5.0, |t| (3.0 * (TAU * 2.0 * t).sin(), 0.0));
    let m = track_of(&frames).measure_window(0.0, 5.0);
    assert!(m.shake.unwrap() > 0.5, "{m:?}");
    assert!(m.nod.unwrap() < 0.1, "{m:?}");
}

#[test]
fn a_slow_pan_and_irregular_jumps_are_not_gestures() {
    let pan = track_of(&sequence(0.0, 5.0, |t| (4.0 * t, 1.5 * t))).measure_window(0.0, 5.0);
    assert!(
        pan.nod.unwrap() < 0.15 && pan.shake.unwrap() < 0.15,
        "{pan:?}"
    );
    // Position jumps at irregular times, held in between.
    let jumps = [0.3, 1.1, 1.4, 2.9, 3.2, 4.6];
    let irregular = track_of(&sequence(0.0, 5.0, |t| {
        let k = jumps.iter().filter(|&&j| t >= j).count();
        (0.0, if k % 2 == 1 { 3.0 } else { 0.0 })
    }))
    .measure_window(0.0, 5.0);
    let nodding = track_of(&sequence(0.0, 5.0, |t| (0.0, 3.0 * (TAU * 2.0 * t).sin())))
        .measure_window(0.0, 5.0);
    assert!(
        irregular.nod.unwrap() < nodding.nod.unwrap() / 2.0,
        "{irregular:?} vs {nodding:?}"
    );
}

#[test]
fn a_window_with_frames_in_its_first_half_only_is_half_covered() {
    let m = track_of(&sequence(0.0, 2.5, |_| (0.0, 0.0))).measure_window(0.0, 5.0);
    assert!((m.coverage - 0.5).abs() < 0.03, "{m:?}");
    let empty = track_of(&sequence(0.0, 2.5, |_| (0.0, 0.0))).measure_window(10.0, 15.0);
    assert_eq!(empty, VideoMeasures::default());
}

#[test]
fn a_gap_in_the_frames_is_uncovered_and_gives_no_motion_across_it() {
    let mut frames = sequence(0.0, 5.0, |t| (2.0 * t, 0.0));
    // One second lost in the middle (frames that did not decode).
    frames.retain(|f| !(2.0..3.0).contains(&f.pts));
    let track = track_of(&frames);
    let m = track.measure_window(0.0, 5.0);
    let reach = MAX_GAP_INTERVALS / FPS;
    assert!((m.coverage - (0.8 + reach / 5.0)).abs() < 0.02, "{m:?}");
    let after_gap = track.frames().iter().find(|f| f.pts >= 3.0).unwrap();
    assert_eq!(after_gap.motion, None);
}

#[test]
fn forgetting_old_frames_leaves_later_windows_alone() {
    let mut track = track_of(&sequence(0.0, 10.0, |t| (0.0, 3.0 * (TAU * 2.5 * t).sin())));
    let before = track.measure_window(5.0, 10.0);
    track.forget_before(4.0);
    assert_eq!(track.measure_window(5.0, 10.0), before);
    assert!(track.frames()[0].pts >= 4.0);
}

/// Encoded frames at 10 fps with a keyframe every 2 s, sizes from `size(t)`.
fn encoded(seconds: f64, size: impl Fn(f64) -> u32) -> VisualTrack {
    let mut track = VisualTrack::new();
    for k in 0..(seconds * 10.0) as usize {
        let t = k as f64 / 10.0;
        let keyframe = k % 20 == 0;
        track.push_encoded(&VideoFrameInfo {
            pts: t,
            size: if keyframe { 9000 } else { size(t) },
            keyframe,
        });
    }
    track
}

#[test]
fn encoded_sizes_rank_windows_by_motion_and_find_still_ones() {
    let track = encoded(20.0, |t| match t {
        t if t < 10.0 => 600 + (t * 37.0) as u32 % 50,
        t if t < 15.0 => 2400,
        _ => 100,
    });
    let calm = track.measure_window(5.0, 10.0);
    let busy = track.measure_window(10.0, 15.0);
    let still = track.measure_window(15.0, 20.0);
    assert!((calm.motion.unwrap() - 1.0).abs() < 0.1, "{calm:?}");
    assert!(
        busy.motion.unwrap() > 2.0 * calm.motion.unwrap(),
        "{busy:?}"
    );
    assert!(still.stillness.unwrap() > 0.9 && calm.stillness.unwrap() < 0.1);
    // Sizes say nothing of direction.
    assert_eq!((busy.nod, busy.shake), (None, None));
    assert!(busy.coverage > 0.99);
}

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_h264_fixture_moves_and_is_fully_covered() {
    let track = visual_track(&fixture("mp4_h264_aac.mp4")).unwrap().unwrap();
    assert_eq!(track.frames().len(), 50);
    assert!(track
        .frames()
        .iter()
        .all(|f| f.source == MotionSource::Pixels));
    let m = track.measure_window(0.0, 5.0);
    assert!(m.coverage > 0.98, "{m:?}");
    assert!(m.motion.unwrap() > STILL_MOTION, "{m:?}");
    assert!(m.nod.is_some() && m.shake.is_some(), "{m:?}");
}

#[test]
fn vp8_and_vp9_fixtures_give_pixels() {
    for name in ["webm_vp8_vorbis.webm", "webm_vp9_opus.webm"] {
        let track = visual_track(&fixture(name)).unwrap().unwrap();
        assert!(
            track
                .frames()
                .iter()
                .all(|f| f.source == MotionSource::Pixels),
            "{name}"
        );
        let m = track.measure_window(0.0, 5.0);
        assert!(m.coverage > 0.98, "{name}: {m:?}");
    }
}

#[test]
fn an_mpeg4_fixture_falls_back_to_encoded_sizes() {
    let track = visual_track(&fixture("avi_mpeg4_mp3.avi"))
        .unwrap()
        .unwrap();
    let m = track.measure_window(0.0, 5.0);
    assert!(track
        .frames()
        .iter()
        .all(|f| f.source == MotionSource::EncodedSize));
    assert!(m.coverage > 0.98, "{m:?}");
    assert!(m.motion.unwrap() > 0.0);
    assert_eq!((m.nod, m.shake), (None, None));
    assert!(visual_track(&fixture("wav_pcm_s16le.wav"))
        .unwrap()
        .is_none());
}

/// A live session's reader makes colour only for the pictures faces are read from
/// ([`face_colour_filter`] through `LiveReader::with_rgb_filter`), in a session of two files
/// (a recorder that stops part-way and restarts: the second file's pictures must be asked
/// about on the session's clock, where the first file's ticks go on, not on the file's own),
/// and the faces, motion and gestures read are those of a reader that colours every picture.
/// The filtered reader defers its decoding, as a live session's does.
#[test]
fn a_live_reader_colours_only_the_faces_pictures_and_reads_the_same() {
    use attune_media::live::LiveReader;
    let bytes = fixture("faces/video/astronaut_vp9_opus.webm");
    let read = |filtered: bool| {
        let mut reader = LiveReader::new(true).with_pixels(live_pixels());
        if filtered {
            reader = reader
                .with_rgb_filter(face_colour_filter())
                .with_deferred_pictures();
        }
        let mut pictures = Vec::new();
        let mut first_file = 0;
        let mut segment = 0;
        // The first file stops at 45 % of its bytes, so the second starts at 7.52 s, off the
        // grid of the first file's face ticks: a filter asked on each file's own clock colours
        // the wrong pictures there (this test fails so).
        for file in [&bytes[..bytes.len() * 45 / 100], &bytes[..]] {
            first_file = pictures.len();
            for chunk in file.chunks(8 * 1024) {
                pictures.extend(reader.push(chunk, segment).pictures);
                let until = reader.media_end() - 1.0;
                pictures.extend(reader.decode_pictures(until).pictures);
                segment += 1;
            }
            pictures.extend(reader.finish().pictures);
        }
        let mut track = VisualTrack::new();
        for p in &pictures {
            track.push_picture(p);
        }
        track.finish();
        (pictures, track, first_file)
    };
    let (all, every, first_file) = read(false);
    let (some, filtered, _) = read(true);
    let coloured = some.iter().filter(|p| p.rgb.is_some()).count();
    assert!(
        all.len() > 250 && all.iter().all(|p| p.rgb.is_some()),
        "{} pictures",
        all.len()
    );
    assert_eq!(
        some.iter().map(|p| p.luma.pts).collect::<Vec<_>>(),
        all.iter().map(|p| p.luma.pts).collect::<Vec<_>>()
    );
    assert!(
        coloured * 10 < some.len() * 6 && coloured * 10 > some.len() * 4,
        "{coloured} of {} pictures coloured",
        some.len()
    );
    assert_eq!(filtered.frames(), every.frames());
    let end = every.frames().last().unwrap().pts.ceil() as usize;
    let second = all[first_file].luma.pts;
    assert!(
        (7.0..8.0).contains(&second),
        "the second file starts at {second} s"
    );
    assert!(end > 25, "the second file's pictures end at {end} s");
    let mut faces_seen = [0; 2];
    for s in 0..end {
        let (a, b) = (s as f64, s as f64 + 1.0);
        let m = filtered.measure_window(a, b);
        assert_eq!(m, every.measure_window(a, b), "window {a}-{b} s");
        faces_seen[usize::from(s as f64 >= second)] +=
            m.faces.map_or(0, |f| f.pictures - f.frozen - f.faceless);
    }
    assert!(
        faces_seen.iter().all(|&n| n > 10),
        "pictures with faces in each file: {faces_seen:?}"
    );
}

/// An upload's decoder makes colour only for the pictures faces are read from
/// ([`face_colour_filter`]): about half of those decoded, and the faces, motion and gestures
/// read are those of a decode that colours every picture.
#[test]
fn colour_only_for_the_faces_pictures_reads_the_same_as_colour_for_all() {
    for name in [
        "faces/video/astronaut_h264.mp4",
        "faces/video/astronaut_vp8.webm",
    ] {
        let bytes = fixture(name);
        let file = MediaFile::open(&bytes).unwrap();
        let (mut pictures, mut coloured) = (0usize, 0usize);
        file.decode_pictures_filtered(PICTURES, face_colour_filter(), |p| {
            pictures += 1;
            coloured += usize::from(p.rgb.is_some());
        })
        .unwrap();
        assert!(
            pictures > 100 && coloured * 10 < pictures * 6 && coloured * 10 > pictures * 4,
            "{name}: {coloured} of {pictures} pictures coloured"
        );

        let filtered = visual_track_of(&file).unwrap().unwrap();
        let mut every = VisualTrack::new();
        file.decode_pictures_each(PICTURES, |p| every.push_picture(&p))
            .unwrap();
        every.finish();
        assert_eq!(filtered.frames(), every.frames(), "{name}");
        let end = every.frames().last().unwrap().pts.ceil() as usize;
        let mut faces_seen = 0;
        for s in 0..end {
            let (a, b) = (s as f64, s as f64 + 1.0);
            let m = filtered.measure_window(a, b);
            assert_eq!(m, every.measure_window(a, b), "{name}: window {a}-{b} s");
            faces_seen += m.faces.map_or(0, |f| f.pictures - f.frozen - f.faceless);
        }
        assert!(faces_seen > 20, "{name}: {faces_seen} pictures with faces");
    }
}
