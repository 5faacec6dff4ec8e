//! The demuxer fed a file in chunks of any size gives the events of the same file fed whole.

use proptest::prelude::*;
use symphonia::core::units::Duration as SymDuration;

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const FIXTURES: [&str; 6] = [
    "segments/continuous.webm",
    "webm_opus.webm",
    "webm_vp8_vorbis.webm",
    "webm_vp9_opus.webm",
    "mkv_h264_vorbis.mkv",
    "mkv_mpeg4_mp3.mkv",
];

/// What a read produced: the audio lead, every audio packet with its end trim, and every video
/// frame (times as bits, so equality is exact), in the order the demuxer gave them.
#[derive(Debug, PartialEq)]
struct Output {
    lead: Option<(u64, u32)>,
    audio: Vec<(Box<[u8]>, SymDuration)>,
    video: Vec<(u64, u32, bool)>,
    headers: usize,
    problems: Vec<String>,
}

fn collect(events: Vec<Event>) -> Output {
    let mut out = Output {
        lead: None,
        audio: Vec::new(),
        video: Vec::new(),
        headers: 0,
        problems: Vec::new(),
    };
    for event in events {
        match event {
            Event::Header { .. } => out.headers += 1,
            Event::AudioSetup(setup) => out.lead = Some(setup.lead),
            Event::Audio(p) => out.audio.push((p.data, p.trim_end)),
            Event::Video(f, _) => out.video.push((f.pts.to_bits(), f.size, f.keyframe)),
            Event::Problem(p) => out.problems.push(p.to_string()),
            Event::NewFile => out.problems.push("a new file".into()),
        }
    }
    out
}

/// The stream demuxer fed `bytes` cut by `sizes`, used in turn and over again, then finished.
fn streamed(bytes: &[u8], sizes: &[usize]) -> Output {
    let mut demux = MkvDemuxer::stream(64 << 20);
    let mut events = Vec::new();
    let mut rest = bytes;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.clamp(1, rest.len()));
        demux.feed(chunk, &mut events);
        rest = tail;
    }
    demux.finish(&mut events);
    collect(events)
}

/// The whole-file demuxer fed `bytes` at once.
fn whole(bytes: &[u8]) -> Output {
    let mut demux = MkvDemuxer::whole_file();
    let mut events = Vec::new();
    demux.feed(bytes, &mut events);
    demux.finish(&mut events);
    collect(events)
}

#[test]
fn every_fixture_has_audio_and_video_to_compare() {
    for name in FIXTURES {
        let out = whole(&fixture(name));
        assert!(!out.audio.is_empty(), "{name}: audio");
        // The one audio-only fixture has no video to compare.
        assert_eq!(
            out.video.is_empty(),
            name == "webm_opus.webm",
            "{name}: video"
        );
        assert_eq!(out.headers, 1, "{name}");
        assert_eq!(out.problems, Vec::<String>::new(), "{name}");
    }
}

#[test]
fn the_file_reader_lists_what_the_stream_demuxer_finds() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let stream = streamed(&bytes, &[bytes.len()]);
        let reader = MkvReader::open(&bytes).expect(name);
        let mut want: Vec<_> = stream.video.iter().map(|v| v.0).collect();
        want.sort_by(|a, b| f64::from_bits(*a).total_cmp(&f64::from_bits(*b)));
        let got: Vec<_> = reader
            .video_frames()
            .unwrap()
            .iter()
            .map(|f| f.pts.to_bits())
            .collect();
        assert_eq!(got, want, "{name}: video");
        assert_eq!(reader.audio.len(), stream.audio.len(), "{name}: audio");
        assert_eq!(Some(reader.audio_lead), stream.lead, "{name}: lead");
    }
}

/// Chunk sizes from single bytes to more than a whole fixture.
fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1usize..8, 1usize..600, 1usize..100_000], 1..48)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_stream_cut_anywhere_demuxes_like_the_whole_file(
        which in 0..FIXTURES.len(),
        sizes in chunk_sizes(),
    ) {
        let bytes = fixture(FIXTURES[which]);
        prop_assert_eq!(streamed(&bytes, &sizes), whole(&bytes));
    }
}
