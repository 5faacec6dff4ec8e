//! The demuxer fed a file in chunks of any size gives the events of the same file fed whole.

use proptest::prelude::*;

use super::*;
use crate::demux::testing::{chunk_sizes, fixture, streamed, Output};

const FIXTURES: [&str; 6] = [
    "segments/continuous.webm",
    "webm_opus.webm",
    "webm_vp8_vorbis.webm",
    "webm_vp9_opus.webm",
    "mkv_h264_vorbis.mkv",
    "mkv_mpeg4_mp3.mkv",
];

/// The whole-file demuxer fed `bytes` at once.
fn whole(bytes: &[u8]) -> Output {
    streamed(MkvDemuxer::whole_file(), bytes, &[bytes.len()])
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
        let stream = streamed(MkvDemuxer::stream(64 << 20), &bytes, &[bytes.len()]);
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_stream_cut_anywhere_demuxes_like_the_whole_file(
        which in 0..FIXTURES.len(),
        sizes in chunk_sizes(),
    ) {
        let bytes = fixture(FIXTURES[which]);
        prop_assert_eq!(streamed(MkvDemuxer::stream(64 << 20), &bytes, &sizes), whole(&bytes));
    }
}
