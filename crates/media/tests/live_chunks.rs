//! For every container the live reader reads incrementally (WebM/Matroska, fragmented MP4,
//! MPEG-TS, raw PCM), the same bytes fed in chunks of any size, with boundaries proptest picks
//! (single bytes included), give exactly the PCM and the video frame list of the bytes read at
//! once: by the file path (`decode_audio`, `video_frames`) and by the live reader fed one frame.

use std::sync::OnceLock;

use attune_media::live::LiveReader;
use attune_media::{decode_audio, video_frames, VideoFrameInfo};
use proptest::prelude::*;

fn read(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One input and how it is read.
struct Input {
    name: &'static str,
    data: Vec<u8>,
    /// The raw PCM rate, for raw PCM.
    pcm_rate: Option<u32>,
    /// What reading it at once gives.
    pcm: Vec<f32>,
    frames: Vec<(u64, u32, bool)>,
}

/// Video frames in presentation order, times as bits so that equality is exact.
fn frame_keys(frames: &[VideoFrameInfo]) -> Vec<(u64, u32, bool)> {
    let mut frames = frames.to_vec();
    frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
    frames
        .iter()
        .map(|f| (f.pts.to_bits(), f.size, f.keyframe))
        .collect()
}

fn reader(input: &Input) -> LiveReader {
    match input.pcm_rate {
        Some(rate) => LiveReader::pcm(rate).expect("an interface rate"),
        None => LiveReader::new(false),
    }
}

/// What a read gave: PCM, frames (as [`frame_keys`]) and the codes of its problems.
type Read = (Vec<f32>, Vec<(u64, u32, bool)>, Vec<&'static str>);

/// The live reader fed `data` cut by `sizes` (used in turn and over again), then finished.
fn live(mut reader: LiveReader, data: &[u8], sizes: &[usize]) -> Read {
    let (mut pcm, mut frames, mut codes) = (Vec::new(), Vec::new(), Vec::new());
    let mut rest = data;
    for (segment, &size) in (0u64..).zip(sizes.iter().cycle()) {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.clamp(1, rest.len()));
        rest = tail;
        let r = reader.push(chunk, segment);
        pcm.extend(reader.drain_samples());
        frames.extend(r.video_frames.iter().copied());
        codes.extend(r.problems.iter().map(|p| p.problem.code_str()));
        assert!(r.fatal.is_none(), "fatal: {:?}", r.fatal);
    }
    let r = reader.finish();
    pcm.extend(reader.drain_samples());
    frames.extend(r.video_frames.iter().copied());
    codes.extend(r.problems.iter().map(|p| p.problem.code_str()));
    (pcm, frame_keys(&frames), codes)
}

/// A WAV around raw s16le mono PCM, for the file path's reading of the same samples.
fn wav(pcm: &[u8], rate: u32) -> Vec<u8> {
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(36 + pcm.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&[1, 0, 1, 0]);
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&[2, 0, 16, 0]);
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(pcm.len() as u32).to_le_bytes());
    out.extend_from_slice(pcm);
    out
}

/// Every live container's fixtures, read at once by the file path.
fn inputs() -> &'static [Input] {
    static CELL: OnceLock<Vec<Input>> = OnceLock::new();
    CELL.get_or_init(|| {
        let files = [
            "segments/continuous.webm",
            "webm_opus.webm",
            "webm_vp8_vorbis.webm",
            "webm_vp9_opus.webm",
            "mkv_h264_vorbis.mkv",
            "mkv_mpeg4_mp3.mkv",
            "mp4frag_h264_aac.mp4",
            "ts_h264_aac.ts",
            "ts_mp2.ts",
            "ts_mpeg2video_mp2.ts",
        ];
        let mut out: Vec<Input> = files
            .into_iter()
            .map(|name| {
                let data = read(name);
                Input {
                    name,
                    pcm: decode_audio(&data).expect(name).samples,
                    frames: frame_keys(&video_frames(&data).expect(name)),
                    data,
                    pcm_rate: None,
                }
            })
            .collect();
        for (name, rate) in [
            ("speech_16k_s16le.pcm", 16_000),
            ("speech_24k_s16le.pcm", 24_000),
        ] {
            let data = read(name);
            out.push(Input {
                name,
                pcm: decode_audio(&wav(&data, rate)).expect(name).samples,
                frames: Vec::new(),
                data,
                pcm_rate: Some(rate),
            });
        }
        out
    })
}

fn check(input: &Input, sizes: &[usize]) -> Result<(), TestCaseError> {
    let name = input.name;
    let (pcm, frames, codes) = live(reader(input), &input.data, sizes);
    prop_assert_eq!(codes, Vec::<&str>::new(), "{}: problems", name);
    prop_assert!(!input.pcm.is_empty(), "{}: no audio to compare", name);
    prop_assert_eq!(pcm.len(), input.pcm.len(), "{}: PCM length", name);
    let first_difference = pcm
        .iter()
        .zip(&input.pcm)
        .position(|(a, b)| a.to_bits() != b.to_bits());
    prop_assert_eq!(first_difference, None, "{}: PCM differs", name);
    prop_assert_eq!(&frames, &input.frames, "{}: frames", name);
    // The live reader fed the whole input as one frame gives the same.
    let (once_pcm, once_frames, _) = live(reader(input), &input.data, &[input.data.len()]);
    prop_assert!(
        once_pcm == pcm && once_frames == frames,
        "{}: one frame",
        name
    );
    Ok(())
}

/// Chunk sizes: single bytes throughout, or a mix from single bytes to more than a fixture.
fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        1 => Just(vec![1usize]),
        4 => prop::collection::vec(prop_oneof![1usize..8, 1usize..600, 1usize..100_000], 1..32),
    ]
}

#[test]
fn every_live_container_has_fixtures_with_audio_and_video() {
    let inputs = inputs();
    assert!(inputs.iter().all(|i| !i.pcm.is_empty()));
    for ext in [".webm", ".mkv", ".mp4", ".ts"] {
        assert!(
            inputs
                .iter()
                .any(|i| i.name.ends_with(ext) && !i.frames.is_empty()),
            "{ext}"
        );
    }
}

proptest! {
    // Each case decodes one whole input; together the cases cover every input.
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_chunking_of_a_live_container_gives_the_pcm_and_frames_of_reading_it_at_once(
        which in 0usize..12,
        sizes in chunk_sizes(),
    ) {
        check(&inputs()[which], &sizes)?;
    }
}
