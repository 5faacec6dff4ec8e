//! Replays the committed fuzz corpora and crash regressions of the media targets through the
//! functions the targets call (`attune_media::fuzzing`), so CI reruns every input a campaign
//! kept in seconds, and an input that once crashed a target fails this test if it does again.
//!
//! Inputs live in `fuzz/corpus/<target>/` (minimised with `-merge=1` by `fuzz/campaign.sh`)
//! and `fuzz/regressions/<target>/` (each crash a campaign found, minimised).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A target's body: the function its `fuzz_target!` calls.
type Body = fn(&[u8]);

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

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs every input of `target` through `run`; returns the inputs that panicked.
fn replay(target: &str, run: Body) -> (usize, Vec<String>) {
    let mut failed = Vec::new();
    let mut count = 0;
    for kind in ["corpus", "regressions"] {
        for path in inputs(&fuzz_dir().join(kind).join(target)) {
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            count += 1;
            if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                failed.push(path.display().to_string());
            }
        }
    }
    (count, failed)
}

#[test]
fn every_committed_media_fuzz_input_runs_without_a_panic() {
    let mut failed = Vec::new();
    for &(target, run) in TARGETS {
        let (count, bad) = replay(target, run);
        // A missing corpus would make this test pass on nothing.
        assert!(count > 0, "no committed inputs for the `{target}` target");
        failed.extend(bad);
    }
    assert!(failed.is_empty(), "inputs that panic: {failed:#?}");
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
