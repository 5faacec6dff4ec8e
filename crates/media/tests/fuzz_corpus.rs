//! Replays the committed fuzz corpora and crash regressions of the media targets through the
//! functions the targets call (`attune_media::fuzzing`), so CI reruns every input a campaign
//! kept in seconds, and an input that once crashed a target fails this test if it does again.
//!
//! Inputs live in `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`; the replay is
//! `fuzz/replay.rs`, shared with the server's corpus test.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use replay::{inputs, replay_all, Body};
use std::path::{Path, PathBuf};

/// Every media target and the function its `fuzz_target!` calls.
const TARGETS: &[(&str, Body)] = &[
    ("mp4", attune_media::fuzzing::mp4),
    ("mkv", attune_media::fuzzing::mkv),
    ("avi", attune_media::fuzzing::avi),
    ("ts", attune_media::fuzzing::ts),
    ("wav", attune_media::fuzzing::wav),
    ("flac", attune_media::fuzzing::flac),
    ("mp3", attune_media::fuzzing::mp3),
    ("ogg", attune_media::fuzzing::ogg),
    ("elementary", attune_media::fuzzing::elementary),
    ("decode", attune_media::fuzzing::decode),
    ("live", attune_media::fuzzing::live),
    ("h264", attune_media::fuzzing::h264),
    ("mjpeg", attune_media::fuzzing::mjpeg),
    ("vp8", attune_media::fuzzing::vp8),
    ("vp9", attune_media::fuzzing::vp9),
];

#[test]
fn every_committed_media_fuzz_input_runs_without_a_panic() {
    replay_all(TARGETS);
}

/// The luma targets' input layout reaches the pixel decoders: a fixture's frames, written as
/// its seed is, decode to pictures (else the `h264` and `mjpeg` targets would fuzz nothing).
#[test]
fn luma_seeds_decode_to_pictures() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    for (name, codec) in [
        ("mp4_h264_aac.mp4", attune_media::Codec::H264),
        ("ts_h264_aac.ts", attune_media::Codec::H264),
        ("avi_mjpeg_pcm_s16le.avi", attune_media::Codec::Mjpeg),
    ] {
        let file = std::fs::read(fixtures.join(name)).expect("fixture");
        for flags in [0u8, 0x0a] {
            let (found, input) = attune_media::fuzzing::luma_input(&file, flags).expect("video");
            assert_eq!(found, codec, "{name}");
            let pictures = attune_media::fuzzing::luma(&codec, &input);
            assert!(pictures > 0, "{name} with flags {flags:#x}: no picture");
        }
    }
}

/// Writes the luma targets' seeds from the video fixtures (`fuzz/seed.sh` runs it): each
/// file's encoded frames in `attune_media::fuzzing::luma`'s layout, into
/// `$ATTUNE_FUZZ_SEED_DIR/<codec target>/`.
#[test]
#[ignore = "writes seed corpora; run by fuzz/seed.sh"]
fn write_luma_seeds() {
    let Some(out) = std::env::var_os("ATTUNE_FUZZ_SEED_DIR").map(PathBuf::from) else {
        panic!("set ATTUNE_FUZZ_SEED_DIR");
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut files = inputs(&fixtures);
    files.extend(inputs(&fixtures.join("segments")));
    for path in files {
        let Ok(file) = std::fs::read(&path) else {
            continue;
        };
        // Flags 0 (analyzer width) and 0x0a (width 1, hidden odd frames).
        for flags in [0u8, 0x0a] {
            let Some((codec, input)) = attune_media::fuzzing::luma_input(&file, flags) else {
                break;
            };
            let target = match codec {
                attune_media::Codec::H264 => "h264",
                attune_media::Codec::Mjpeg => "mjpeg",
                attune_media::Codec::Vp8 => "vp8",
                attune_media::Codec::Vp9 => "vp9",
                _ => break,
            };
            let dir = out.join(target);
            std::fs::create_dir_all(&dir).expect("seed dir");
            let name = format!(
                "{}.{flags:02x}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            std::fs::write(dir.join(name), input).expect("seed written");
        }
    }
}
