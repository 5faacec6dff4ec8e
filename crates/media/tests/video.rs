//! Pixel decoding against the committed fixtures (frame counts from ffprobe in
//! `tests/fixtures/manifest.json`), its behaviour on codecs without a pixel decoder, and on
//! corrupt input.

use std::path::{Path, PathBuf};

use attune_media::video::{
    decode_luma, decode_luma_each, decode_pictures_each, encoded_video, LumaDecoder, LumaFrame,
    PictureOptions, PixelSupport, VideoPicture, DEFAULT_LUMA_WIDTH,
};
use attune_media::{video_frames, Codec};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every readable fixture with a video stream: (file, ffprobe codec name, frame count, width,
/// height).
fn video_fixtures() -> Vec<(String, String, usize, u32, u32)> {
    let text = std::fs::read_to_string(fixtures_dir().join("manifest.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    manifest["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["intended_broken"].as_bool().unwrap_or(false))
        .filter_map(|e| {
            let s = e["streams"]
                .as_array()?
                .iter()
                .find(|s| s["codec_type"] == "video")?;
            Some((
                e["file"].as_str()?.to_string(),
                s["codec_name"].as_str()?.to_string(),
                s["frames"].as_u64()? as usize,
                s["width"].as_u64()? as u32,
                s["height"].as_u64()? as u32,
            ))
        })
        .collect()
}

fn mean_abs_diff(a: &LumaFrame, b: &LumaFrame) -> f64 {
    let sum: u64 = a
        .data
        .iter()
        .zip(&b.data)
        .map(|(&x, &y)| u64::from(x.abs_diff(y)))
        .sum();
    sum as f64 / a.data.len() as f64
}

#[test]
fn h264_vp8_vp9_and_mjpeg_fixtures_decode_every_frame_ffprobe_counted() {
    let mut checked = 0;
    for (name, codec, frames, width, height) in video_fixtures() {
        if !["h264", "mjpeg", "vp8", "vp9"].contains(&codec.as_str()) {
            continue;
        }
        checked += 1;
        let bytes = read(&name);
        let luma = decode_luma(&bytes, DEFAULT_LUMA_WIDTH).unwrap();
        assert_eq!(luma.pixels, PixelSupport::Decoded, "{name}");
        assert_eq!(luma.frames.len(), frames, "{name}: frames decoded");
        assert_eq!(luma.skipped, 0, "{name}: frames skipped");
        assert!(!luma.truncated, "{name}");
        // Same clock as the frame list: the analyzer matches the two by time.
        let listed: Vec<f64> = video_frames(&bytes)
            .unwrap()
            .iter()
            .map(|f| f.pts)
            .collect();
        let decoded: Vec<f64> = luma.frames.iter().map(|f| f.pts).collect();
        assert_eq!(decoded, listed, "{name}: frame times");
        for f in &luma.frames {
            let w = width.min(160);
            assert_eq!(
                (f.width, f.height),
                (w, (height * w + width / 2) / width),
                "{name}"
            );
            assert_eq!(f.data.len(), (f.width * f.height) as usize, "{name}");
            let (lo, hi) = (f.data.iter().min().unwrap(), f.data.iter().max().unwrap());
            assert!(hi - lo > 100, "{name} at {}: a flat picture", f.pts);
        }
        // The test pattern moves every frame.
        for pair in luma.frames.windows(2) {
            let d = mean_abs_diff(&pair[0], &pair[1]);
            assert!(
                d > 1.0,
                "{name}: {} and {} barely differ",
                pair[0].pts,
                pair[1].pts
            );
        }
    }
    assert!(
        checked >= 12,
        "H.264, VP8, VP9 and MJPEG fixtures in the manifest: {checked}"
    );
}

#[test]
fn the_same_picture_decodes_alike_from_every_container() {
    // One H.264 encode muxed five ways: the pictures must be identical, whatever the framing
    // (avcC length prefixes, fragments, Annex B).
    let reference = decode_luma(&read("mp4_h264_aac.mp4"), 160).unwrap();
    for name in [
        "mov_h264_aac.mov",
        "mp4frag_h264_aac.mp4",
        "mkv_h264_vorbis.mkv",
        "ts_h264_aac.ts",
    ] {
        let other = decode_luma(&read(name), 160).unwrap();
        for (a, b) in reference.frames.iter().zip(&other.frames) {
            assert_eq!(a.data, b.data, "{name}: picture {} differs", b.pts);
        }
    }
    // The two MJPEG files hold the same JPEGs.
    let mov = decode_luma(&read("mov_mjpeg_pcm_s16le.mov"), 160).unwrap();
    let avi = decode_luma(&read("avi_mjpeg_pcm_s16le.avi"), 160).unwrap();
    assert!(mov
        .frames
        .iter()
        .zip(&avi.frames)
        .all(|(a, b)| a.data == b.data));
}

#[test]
fn vp8_and_vp9_pictures_match_the_h264_encode_of_the_same_pattern() {
    // The three fixtures encode the same testsrc2 frames: a decoder that got inter prediction
    // wrong drifts away from the H.264 pictures within a few frames.
    let h264 = decode_luma(&read("mp4_h264_aac.mp4"), 160).unwrap();
    for name in ["webm_vp8_vorbis.webm", "webm_vp9_opus.webm"] {
        let other = decode_luma(&read(name), 160).unwrap();
        assert_eq!(other.frames.len(), h264.frames.len(), "{name}");
        let mut worst = 0.0f64;
        for (a, b) in h264.frames.iter().zip(&other.frames) {
            // WebM stores times in milliseconds (the encoder's 3 ms lead shows).
            assert!(
                (a.pts - b.pts).abs() < 0.01,
                "{name}: {} vs {}",
                a.pts,
                b.pts
            );
            worst = worst.max(mean_abs_diff(a, b));
        }
        eprintln!("{name}: worst mean |dY| against H.264 {worst:.2}");
        assert!(worst < MAX_CODEC_DIFF, "{name}: {worst:.2}");
    }
}

/// The most two lossy encodes of one picture may differ, in mean absolute luma per pixel.
const MAX_CODEC_DIFF: f64 = 6.0;

fn pictures(name: &str, rgb_width: Option<u32>, sample_fps: Option<f64>) -> Vec<VideoPicture> {
    let mut out = Vec::new();
    let options = PictureOptions {
        luma_width: 160,
        rgb_width,
        sample_fps,
    };
    let summary = decode_pictures_each(&read(name), options, |p| out.push(p)).unwrap();
    assert_eq!(summary.decoded, out.len(), "{name}");
    out
}

#[test]
fn every_pixel_decoder_gives_rgb_at_the_requested_width_agreeing_with_its_luma() {
    for name in [
        "mp4_h264_aac.mp4",
        "webm_vp8_vorbis.webm",
        "webm_vp9_opus.webm",
        "mov_mjpeg_pcm_s16le.mov",
    ] {
        let luma_only = decode_luma(&read(name), 160).unwrap();
        let both = pictures(name, Some(80), None);
        assert_eq!(both.len(), luma_only.frames.len(), "{name}");
        for (p, l) in both.iter().zip(&luma_only.frames) {
            // Asking for colour leaves the luma as it was (JPEG's is recomputed from the RGB
            // the decoder gives then, which rounds differently).
            if name.contains("mjpeg") {
                let d = mean_abs_diff(&p.luma, l);
                assert!(d < 2.0, "{name}: luma moved by {d}");
            } else {
                assert_eq!(p.luma, *l, "{name}");
            }
            let rgb = p.rgb.as_ref().unwrap();
            assert_eq!((rgb.width, rgb.height, rgb.pts), (80, 60, l.pts), "{name}");
            assert_eq!(rgb.data.len(), 80 * 60 * 3);
            // testsrc2 is saturated colour bars: some pixels are far from grey.
            let colourful = rgb
                .data
                .chunks(3)
                .filter(|px| px.iter().max().unwrap() - px.iter().min().unwrap() > 120)
                .count();
            assert!(
                colourful > 80 * 60 / 10,
                "{name}: {colourful} colourful pixels"
            );
            // The RGB brightness follows the luma plane (studio range for video).
            let rgb_y = rgb
                .data
                .chunks(3)
                .map(|px| {
                    0.299 * f64::from(px[0]) + 0.587 * f64::from(px[1]) + 0.114 * f64::from(px[2])
                })
                .sum::<f64>()
                / (80.0 * 60.0);
            let mut y = l.data.iter().map(|&v| f64::from(v)).sum::<f64>() / l.data.len() as f64;
            if !name.contains("mjpeg") {
                y = (y - 16.0) * 255.0 / 219.0;
            }
            assert!(
                (rgb_y - y).abs() < 4.0,
                "{name}: RGB mean {rgb_y:.1}, luma {y:.1}"
            );
        }
    }
}

#[test]
fn sampling_converts_only_frames_on_the_requested_rate() {
    for name in [
        "mp4_h264_aac.mp4",
        "webm_vp8_vorbis.webm",
        "webm_vp9_opus.webm",
        "mov_mjpeg_pcm_s16le.mov",
    ] {
        let all = pictures(name, None, None);
        let sampled = pictures(name, None, Some(5.0));
        // 10 fps sampled at 5 fps: every other picture, identical to the unsampled decode.
        assert_eq!(sampled.len(), all.len().div_ceil(2), "{name}");
        for (s, a) in sampled.iter().zip(all.iter().step_by(2)) {
            assert_eq!(s.luma, a.luma, "{name}");
        }
        let summary = decode_pictures_each(
            &read(name),
            PictureOptions {
                luma_width: 160,
                rgb_width: None,
                sample_fps: Some(5.0),
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(summary.unsampled, all.len() - sampled.len(), "{name}");
        assert_eq!(summary.skipped, 0, "{name}");
    }
}

#[test]
fn sampling_a_stream_with_b_frames_leaves_undecoded_only_pictures_nothing_needs() {
    // libx264 High profile with B-frames: at 3 of 10 fps most non-reference B pictures are
    // neither shown nor decoded. Every picture that is shown must be the very one the full
    // decode gives at that time (a skipped reference would corrupt the pictures after it),
    // and the sampler must pick the same times as over the full decode.
    let name = "faces/video/astronaut_h264.mp4";
    let all = pictures(name, None, None);
    let sampled = pictures(name, None, Some(3.0));
    let interval = 1.0 / 3.0;
    let mut next = f64::NEG_INFINITY;
    let mut expected = Vec::new();
    for p in &all {
        if p.luma.pts >= next - interval * 1e-3 {
            next = if p.luma.pts - next >= interval {
                p.luma.pts + interval
            } else {
                next + interval
            };
            expected.push(p);
        }
    }
    assert!(expected.len() > 50, "{} pictures", expected.len());
    assert_eq!(sampled.len(), expected.len());
    for (s, e) in sampled.iter().zip(expected) {
        assert_eq!(s.luma, e.luma, "picture at {} s", e.luma.pts);
    }
}

#[test]
fn an_edit_list_hides_its_leading_frames_but_decodes_from_the_keyframe_before_them() {
    // The file is cut at 1 s from a stream with keyframes at 0, 2 and 4 s: frames 0-0.9 s are
    // decoded only as references, the first shown picture is the source's 1.0 s one.
    let cut = decode_luma(&read("mp4_h264_aac_editlist.mp4"), 160).unwrap();
    let full = decode_luma(&read("mp4_h264_aac.mp4"), 160).unwrap();
    assert_eq!(cut.frames.len(), 40);
    assert_eq!(cut.frames[0].pts, 0.0);
    assert_eq!(cut.frames[0].data, full.frames[10].data);
    assert_eq!(cut.frames[39].data, full.frames[49].data);
}

#[test]
fn the_target_width_downscales_by_area_and_never_upscales() {
    let bytes = read("mp4_h264_aac.mp4");
    let full = decode_luma(&bytes, 4000).unwrap();
    let half = decode_luma(&bytes, 80).unwrap();
    assert_eq!((full.frames[0].width, full.frames[0].height), (160, 120));
    assert_eq!((half.frames[0].width, half.frames[0].height), (80, 60));
    // Each output pixel is the mean of its 2x2 block.
    let (f, h) = (&full.frames[7], &half.frames[7]);
    for (y, x) in [(0u32, 0u32), (10, 33), (59, 79)] {
        let block: u32 = [(0, 0), (1, 0), (0, 1), (1, 1)]
            .iter()
            .map(|(dx, dy)| u32::from(f.data[((2 * y + dy) * 160 + 2 * x + dx) as usize]))
            .sum();
        let got = i64::from(h.data[(y * 80 + x) as usize]);
        assert!(
            (got - i64::from((block + 2) / 4)).abs() <= 1,
            "pixel {x},{y}"
        );
    }
}

#[test]
fn codecs_without_a_pixel_decoder_report_it_and_keep_their_frame_data() {
    let mut checked = 0;
    for (name, codec, frames, _, _) in video_fixtures() {
        let want = match codec.as_str() {
            "mpeg4" => Codec::Mpeg4Part2,
            "mpeg2video" => Codec::Mpeg2Video,
            _ => continue,
        };
        checked += 1;
        let bytes = read(&name);
        let luma = decode_luma(&bytes, 160).unwrap();
        assert_eq!(luma.pixels, PixelSupport::NoPixelDecoder(want), "{name}");
        assert!(luma.frames.is_empty());
        assert_eq!(video_frames(&bytes).unwrap().len(), frames, "{name}");
    }
    assert!(checked >= 3, "MPEG-4 and MPEG-2 fixtures");
    let audio = decode_luma(&read("wav_pcm_s16le.wav"), 160).unwrap();
    assert_eq!(audio.pixels, PixelSupport::NoVideo);
}

#[test]
fn encoded_frames_are_the_listed_frames_in_decode_order() {
    for (name, _, _, _, _) in video_fixtures() {
        let bytes = read(&name);
        let video = encoded_video(&bytes).unwrap().expect("a video track");
        let mut shown: Vec<_> = video.frames.iter().filter(|f| f.presented).collect();
        shown.sort_by(|a, b| a.pts.total_cmp(&b.pts));
        let listed = video_frames(&bytes).unwrap();
        assert_eq!(shown.len(), listed.len(), "{name}");
        for (e, l) in shown.iter().zip(&listed) {
            assert_eq!((e.pts, e.keyframe), (l.pts, l.keyframe), "{name}");
            assert_eq!(e.data.len(), l.size as usize, "{name} at {}", l.pts);
        }
        // Decoding starts on a keyframe.
        assert!(video.frames[0].keyframe, "{name}");
    }
}

#[test]
fn a_decoder_joining_mid_stream_skips_to_the_next_keyframe() {
    let video = encoded_video(&read("mkv_h264_vorbis.mkv"))
        .unwrap()
        .unwrap();
    let mut decoder = LumaDecoder::new(&video.codec, video.config.as_deref(), 160).unwrap();
    let mut out = Vec::new();
    for f in &video.frames[5..] {
        out.extend(decoder.decode(f.pts, &f.data));
    }
    out.extend(decoder.finish());
    let first_key = video.frames[5..].iter().find(|f| f.keyframe).unwrap().pts;
    assert_eq!(out[0].pts, first_key);
    assert_eq!(
        out.len(),
        video.frames.iter().filter(|f| f.pts >= first_key).count()
    );
    assert_eq!(decoder.skipped(), 45 - out.len());
}

#[test]
fn an_annex_b_stream_decodes_without_a_configuration_record() {
    // MPEG-TS carries SPS/PPS in-band: a live reader passes no config.
    let video = encoded_video(&read("ts_h264_aac.ts")).unwrap().unwrap();
    assert!(video.config.is_none());
    let mut decoder = LumaDecoder::new(&Codec::H264, None, 160).unwrap();
    let n = video
        .frames
        .iter()
        .filter_map(|f| decoder.decode(f.pts, &f.data))
        .count()
        + decoder.finish().len();
    assert_eq!(n, 50);
}

#[test]
fn a_corrupt_frame_is_skipped_and_decoding_recovers_at_the_next_keyframe() {
    let bytes = read("mp4_h264_aac.mp4");
    let mut video = encoded_video(&bytes).unwrap().unwrap();
    // Frame 5 (0.5 s, a P frame) becomes noise of the same length.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for b in video.frames[5].data.iter_mut().skip(4) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *b = seed as u8;
    }
    let mut decoder = LumaDecoder::new(&video.codec, video.config.as_deref(), 160).unwrap();
    let mut out: Vec<LumaFrame> = video
        .frames
        .iter()
        .filter_map(|f| decoder.decode_frame(f))
        .collect();
    out.extend(decoder.finish());
    assert!(decoder.skipped() >= 1);
    assert!(
        out.iter().all(|f| f.pts != 0.5),
        "the corrupt frame gave a picture"
    );
    assert!(out.iter().any(|f| f.pts == 0.4));
    // From the keyframe at 2 s on, every frame is back.
    assert_eq!(out.iter().filter(|f| f.pts >= 2.0 - 1e-9).count(), 30);
    // A frame that is not a JPEG at all is skipped alone.
    let mut mjpeg = encoded_video(&read("avi_mjpeg_pcm_s16le.avi"))
        .unwrap()
        .unwrap();
    mjpeg.frames[3].data = b"definitely not a JPEG".to_vec();
    let mut decoder = LumaDecoder::new(&Codec::Mjpeg, None, 160).unwrap();
    let n = mjpeg
        .frames
        .iter()
        .filter_map(|f| decoder.decode_frame(f))
        .count();
    assert_eq!((n, decoder.skipped()), (49, 1));
}

/// xorshift64*, seeded: a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_files_and_frames_never_panic_and_stay_in_bounds() {
    let mutants: usize = std::env::var("ATTUNE_MEDIA_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for name in [
        "mp4_h264_aac.mp4",
        "mp4frag_h264_aac.mp4",
        "mkv_h264_vorbis.mkv",
        "ts_h264_aac.ts",
        "mov_mjpeg_pcm_s16le.mov",
        "avi_mjpeg_pcm_s16le.avi",
    ] {
        mutate_and_decode(name, mutants, &mut rng);
    }
}

#[test]
fn corrupt_vp8_and_vp9_data_never_panics() {
    let mutants: usize = std::env::var("ATTUNE_MEDIA_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    for name in ["webm_vp8_vorbis.webm", "webm_vp9_opus.webm"] {
        mutate_and_decode(name, mutants, &mut rng);
        // Frames that are not VP8/VP9 at all, fed to each decoder.
        let codec = encoded_video(&read(name)).unwrap().unwrap().codec;
        let mut decoder = LumaDecoder::new(&codec, None, 160).unwrap().with_rgb(64);
        for len in [1, 2, 3, 10, 100, 1000] {
            let junk: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            assert!(
                decoder.decode(0.0, &junk).is_none(),
                "{name}: {len} random bytes"
            );
        }
    }
}

/// Damages `name` whole and frame by frame `mutants` times and decodes each: no panic, and no
/// more pictures than frames, each inside its bounds.
fn mutate_and_decode(name: &str, mutants: usize, rng: &mut Rng) {
    {
        let original = read(name);
        let video = encoded_video(&original).unwrap().unwrap();
        for _ in 0..mutants {
            // Whole-file damage: the container may refuse it, the decoder must not crash.
            let mut bytes = original.clone();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(bytes.len());
                match rng.below(3) {
                    0 => bytes[at] ^= 1 << rng.below(8),
                    1 => bytes[at] = rng.next() as u8,
                    _ => {
                        let len = rng.below(64).min(bytes.len() - at);
                        bytes.drain(at..at + len);
                    }
                }
            }
            if let Ok(luma) = decode_luma(&bytes, 160) {
                assert!(luma.frames.len() <= video.frames.len() + 1, "{name}");
                for f in &luma.frames {
                    assert!(f.width <= 160 && f.width > 0, "{name}");
                    assert_eq!(f.data.len(), (f.width * f.height) as usize);
                }
            }
            // Frame-level damage: the container is intact, the payloads are not.
            let mut frames = video.frames.clone();
            for _ in 0..1 + rng.below(6) {
                let i = rng.below(frames.len());
                let data = &mut frames[i].data;
                match rng.below(4) {
                    0 => data.truncate(rng.below(data.len())),
                    1 => {
                        for b in data.iter_mut().skip(rng.below(64)).take(1 + rng.below(32)) {
                            *b = rng.next() as u8;
                        }
                    }
                    2 => data.iter_mut().for_each(|b| *b = rng.next() as u8),
                    _ => {
                        let at = rng.below(data.len());
                        data[at] ^= 0xff;
                    }
                }
            }
            let mut decoder = LumaDecoder::new(&video.codec, video.config.as_deref(), 160)
                .unwrap()
                .with_rgb(96);
            let mut decoded = 0;
            for f in &frames {
                if let Some(p) = decoder.decode_picture(f) {
                    decoded += 1;
                    let rgb = p.rgb.expect("RGB asked for");
                    assert!(rgb.width <= 96 && rgb.width > 0, "{name}");
                    assert_eq!(rgb.data.len(), (rgb.width * rgb.height * 3) as usize);
                }
            }
            decoded += decoder.finish().len();
            assert!(decoded + decoder.skipped() <= frames.len(), "{name}");
        }
    }
}

#[test]
fn the_streaming_decode_hands_over_what_decode_luma_keeps() {
    let bytes = read("mov_mjpeg_pcm_s16le.mov");
    let kept = decode_luma(&bytes, 160).unwrap();
    let mut seen = Vec::new();
    let summary = decode_luma_each(&bytes, 160, |f| seen.push(f)).unwrap();
    assert_eq!((summary.decoded, summary.skipped), (50, 0));
    assert_eq!(seen, kept.frames);
}

/// `jpeg` without its `DHT` segments, as many MJPEG sources store frames.
fn strip_huffman_tables(jpeg: &[u8]) -> Vec<u8> {
    let mut out = jpeg[..2].to_vec();
    let mut at = 2;
    while at + 4 <= jpeg.len() && jpeg[at] == 0xff {
        let marker = jpeg[at + 1];
        if marker == 0xda {
            break;
        }
        let len = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
        if marker != 0xc4 {
            out.extend_from_slice(&jpeg[at..at + 2 + len]);
        }
        at += 2 + len;
    }
    out.extend_from_slice(&jpeg[at..]);
    out
}

#[test]
fn mjpeg_frames_without_huffman_tables_use_the_standard_ones() {
    // A colour frame coded with the standard tables (ITU T.81 Annex K), as webcams send it.
    let (w, h) = (160u16, 120u16);
    let rgb: Vec<u8> = (0..usize::from(w) * usize::from(h))
        .flat_map(|i| {
            let (x, y) = (i % 160, i / 160);
            [
                (x * 255 / 159) as u8,
                (y * 2) as u8,
                ((x + y) % 64 * 4) as u8,
            ]
        })
        .collect();
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 90)
        .encode(&rgb, w, h, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    let stripped = strip_huffman_tables(&jpeg);
    assert!(stripped.len() < jpeg.len(), "the encoder wrote a DHT");
    let mut decoder = LumaDecoder::new(&Codec::Mjpeg, None, 160).unwrap();
    let with = decoder.decode(0.0, &jpeg).unwrap();
    let without = decoder.decode(0.1, &stripped).unwrap();
    assert_eq!(with.data, without.data);
    // And it is the picture: luma of the top-right pixel (255, 0, ...) is about 0.299 * 255.
    let luma = |x: usize, y: usize| {
        let p = &rgb[(y * 160 + x) * 3..][..3];
        0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])
    };
    let mean_error = (0..120)
        .flat_map(|y| (0..160).map(move |x| (x, y)))
        .map(|(x, y)| (f64::from(without.data[y * 160 + x]) - luma(x, y)).abs())
        .sum::<f64>()
        / 19200.0;
    assert!(mean_error < 3.0, "mean luma error {mean_error}");
}

#[test]
fn a_decode_budget_skips_to_the_next_key_frame_and_never_shows_a_broken_picture() {
    for name in [
        "mp4_h264_aac.mp4",
        "webm_vp8_vorbis.webm",
        "webm_vp9_opus.webm",
    ] {
        let full = decode_luma(&read(name), 160).unwrap();
        let video = encoded_video(&read(name)).unwrap().unwrap();
        let pixels_per_frame = 160.0 * 120.0;
        // A 10 fps stream given 4 frames' worth a second of media.
        let mut decoder = LumaDecoder::new(&video.codec, video.config.as_deref(), 160)
            .unwrap()
            .with_pixel_budget(4.0 * pixels_per_frame);
        let mut shown = Vec::new();
        for f in &video.frames {
            shown.extend(decoder.decode_frame(f));
        }
        shown.extend(decoder.finish());
        assert!(decoder.over_budget() > 0, "{name}");
        assert!(!shown.is_empty(), "{name}");
        assert!(
            shown.len() + decoder.over_budget() <= video.frames.len(),
            "{name}"
        );
        // What is decoded is whole: the same picture as an unbudgeted decode at that time.
        for p in &shown {
            let same = full.frames.iter().find(|f| f.pts == p.pts).unwrap();
            assert_eq!(p, same, "{name} at {}", p.pts);
        }
        // Plenty of budget: nothing skipped.
        let mut decoder = LumaDecoder::new(&video.codec, video.config.as_deref(), 160)
            .unwrap()
            .with_pixel_budget(30.0 * pixels_per_frame);
        let n = video
            .frames
            .iter()
            .filter(|f| decoder.decode_frame(f).is_some())
            .count()
            + decoder.finish().len();
        assert_eq!((n, decoder.over_budget()), (full.frames.len(), 0), "{name}");
    }
}

/// The face animation of `tests/fixtures/faces/video` in each codec.
const FACE_VIDEOS: [&str; 3] = [
    "faces/video/astronaut_h264.mp4",
    "faces/video/astronaut_vp8.webm",
    "faces/video/astronaut_vp9.webm",
];

fn mean(data: &[u8]) -> f64 {
    data.iter().map(|&v| f64::from(v)).sum::<f64>() / data.len() as f64
}

#[test]
fn the_face_videos_decode_to_every_scripted_frame_in_colour() {
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join("faces/video/events.json")).unwrap(),
    )
    .unwrap();
    let count = truth["frame_count"].as_u64().unwrap() as usize;
    for name in FACE_VIDEOS {
        let all = pictures_at(name, 320, Some(320), None);
        assert_eq!(all.len(), count, "{name}");
        for (i, p) in all.iter().enumerate() {
            assert!(
                (p.luma.pts - i as f64 / 10.0).abs() < 0.01,
                "{name}: frame {i}"
            );
            assert_eq!((p.luma.width, p.luma.height), (320, 240), "{name}");
            let rgb = p.rgb.as_ref().unwrap();
            assert_eq!((rgb.width, rgb.height), (320, 240), "{name}");
            assert_eq!(rgb.data.len(), 320 * 240 * 3, "{name}");
        }
        // The analysis rate: 5 of the 10 frames a second.
        assert_eq!(
            pictures_at(name, 160, Some(160), Some(5.0)).len(),
            count / 2,
            "{name}"
        );
    }
}

#[test]
fn the_face_animation_has_the_same_brightness_in_every_codec() {
    let decoded: Vec<Vec<VideoPicture>> = FACE_VIDEOS
        .iter()
        .map(|name| pictures_at(name, 160, Some(80), None))
        .collect();
    for (name, other) in FACE_VIDEOS.iter().zip(&decoded).skip(1) {
        assert_eq!(other.len(), decoded[0].len(), "{name}");
        // Pictures are in the right order (H.264 here has B-frames, so they leave the decoder
        // reordered): each is closer to the other codec's picture of the same time than to its
        // neighbours'.
        let distance = |shift: usize| -> f64 {
            (1..other.len() - 1)
                .map(|i| mean_abs_diff(&decoded[0][i].luma, &other[i + shift - 1].luma))
                .sum()
        };
        assert!(
            distance(1) < distance(0).min(distance(2)),
            "{name}: frames out of order"
        );
        let mut worst_mean = 0.0f64;
        let mut worst_pixels = 0.0f64;
        for (a, b) in decoded[0].iter().zip(other) {
            worst_mean = worst_mean.max((mean(&a.luma.data) - mean(&b.luma.data)).abs());
            worst_pixels = worst_pixels.max(mean_abs_diff(&a.luma, &b.luma));
            // Colour too: the RGB means agree channel by channel.
            let (ra, rb) = (a.rgb.as_ref().unwrap(), b.rgb.as_ref().unwrap());
            for c in 0..3 {
                let ma = mean(
                    &ra.data
                        .iter()
                        .skip(c)
                        .step_by(3)
                        .copied()
                        .collect::<Vec<_>>(),
                );
                let mb = mean(
                    &rb.data
                        .iter()
                        .skip(c)
                        .step_by(3)
                        .copied()
                        .collect::<Vec<_>>(),
                );
                assert!(
                    (ma - mb).abs() < 3.0,
                    "{name} at {}: channel {c}",
                    a.luma.pts
                );
            }
        }
        eprintln!(
            "{name}: worst |mean luma diff| {worst_mean:.2}, worst mean |dY| {worst_pixels:.2}"
        );
        assert!(worst_mean < 1.5, "{name}: {worst_mean:.2}");
        assert!(worst_pixels < MAX_CODEC_DIFF, "{name}: {worst_pixels:.2}");
    }
}

fn pictures_at(
    name: &str,
    luma_width: u32,
    rgb_width: Option<u32>,
    sample_fps: Option<f64>,
) -> Vec<VideoPicture> {
    let mut out = Vec::new();
    let options = PictureOptions {
        luma_width,
        rgb_width,
        sample_fps,
    };
    decode_pictures_each(&read(name), options, |p| out.push(p)).unwrap();
    out
}
