//! The box checks, and the stream demuxer fed a fragmented file in chunks of any size giving
//! the events of the same file fed whole, and the samples the file reader lists.

use proptest::prelude::*;

use super::boxes::validate_tree;
use super::fragment::parse_trun;
use super::moov::Defaults;
use super::*;
use crate::demux::testing::{chunk_sizes, fixture, streamed, Output};

fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(body);
    out
}

#[test]
fn a_child_box_larger_than_its_parent_is_rejected() {
    let mut inner = boxed(b"trak", &[0; 4]);
    inner[3] = 200;
    let moov = boxed(b"moov", &inner);
    assert_eq!(validate_tree(&moov, 0).unwrap_err().code_str(), "ih5002");
    let mut file = boxed(b"ftyp", b"isom\0\0\0\0");
    file.extend_from_slice(&moov);
    let err = Mp4Reader::open(&file).err().expect("an error");
    assert!(err.to_string().contains("runs past"), "{err}");
}

#[test]
fn a_truncated_top_level_mdat_is_accepted_and_other_boxes_are_not() {
    let mut data = boxed(b"ftyp", b"isom\0\0\0\0");
    let mut mdat = boxed(b"mdat", &[0; 100]);
    mdat.truncate(50);
    data.extend_from_slice(&mdat);
    // Only the missing movie box is wrong with it.
    let err = Mp4Reader::open(&data).err().expect("no moov");
    assert!(err.to_string().contains("no moov"), "{err}");
    let mut data = boxed(b"ftyp", b"isom\0\0\0\0");
    let mut free = boxed(b"free", &[0; 100]);
    free.truncate(50);
    data.extend_from_slice(&free);
    let err = Mp4Reader::open(&data).err().expect("runs past");
    assert!(err.to_string().contains("runs past"), "{err}");
}

#[test]
fn a_trun_claiming_more_samples_than_bytes_is_rejected() {
    let mut body = 0x0000_0300u32.to_be_bytes().to_vec();
    body.extend_from_slice(&1_000_000u32.to_be_bytes());
    body.extend_from_slice(&[0; 16]);
    let mut out = Vec::new();
    let (mut pos, mut dts) = (0, 0);
    let defaults = Defaults::default();
    let err = parse_trun(&body, &defaults, 0, &mut pos, &mut dts, &mut out, 1 << 20).unwrap_err();
    assert_eq!(err.code_str(), "ih5002");
    assert!(out.is_empty());
    // Without per-sample fields the count alone is checked against the room.
    let mut body = 0u32.to_be_bytes().to_vec();
    body.extend_from_slice(&u32::MAX.to_be_bytes());
    let err = parse_trun(&body, &defaults, 0, &mut pos, &mut dts, &mut out, 1 << 20).unwrap_err();
    assert_eq!(err.code_str(), "ih5002");
    assert!(out.is_empty());
}

const FRAGMENTED: &str = "mp4frag_h264_aac.mp4";

fn whole(bytes: &[u8]) -> Output {
    streamed(Mp4Demuxer::stream(64 << 20), bytes, &[bytes.len()])
}

#[test]
fn the_stream_demuxer_cuts_the_samples_the_file_reader_lists() {
    let bytes = fixture(FRAGMENTED);
    let out = whole(&bytes);
    assert_eq!(out.headers, 1);
    assert_eq!(out.problems, Vec::<String>::new());
    let reader = Mp4Reader::open(&bytes).expect("the fixture");
    let frames: Vec<_> = reader
        .video_frames()
        .unwrap()
        .iter()
        .map(|f| (f.pts.to_bits(), f.size, f.keyframe))
        .collect();
    let mut streamed_frames = out.video.clone();
    streamed_frames.sort_by(|a, b| f64::from_bits(a.0).total_cmp(&f64::from_bits(b.0)));
    assert!(!frames.is_empty());
    assert_eq!(streamed_frames, frames);
    let audio = reader.first(TrackKind::Audio).expect("audio");
    assert_eq!(out.audio.len(), audio.samples.len());
    for ((data, _), s) in out.audio.iter().zip(&audio.samples) {
        let at = s.offset as usize;
        assert_eq!(&data[..], &bytes[at..at + s.size as usize]);
    }
}

#[test]
fn a_moov_at_the_end_reads_like_a_moov_first() {
    // ffmpeg writes the moov after the mdat (without `+faststart`); moving it in front shifts
    // every chunk offset by the moov's size, as `qt-faststart` does.
    let bytes = fixture("mp4_h264_aac.mp4");
    let last = Mp4Reader::open(&bytes).expect("the fixture");
    let top = boxes::split_boxes(&bytes).unwrap();
    let kinds: Vec<_> = top.iter().map(|b| b.kind).collect();
    let moov_index = kinds.iter().position(|k| k == b"moov").unwrap();
    let mdat_index = kinds.iter().position(|k| k == b"mdat").unwrap();
    assert!(
        mdat_index < moov_index,
        "the fixture has its moov at the end"
    );
    let mut moov = boxed(b"moov", top[moov_index].body);
    let moov_len = moov.len() as i64;
    shift_chunk_offsets(&mut moov, moov_len);
    let mut moved = Vec::new();
    for (i, b) in top.iter().enumerate() {
        if i == mdat_index {
            moved.extend_from_slice(&moov);
        }
        if i != moov_index {
            moved.extend_from_slice(&boxed(&b.kind, b.body));
        }
    }
    let first = Mp4Reader::open(&moved).expect("moov first");
    assert!(!first.video_frames().unwrap().is_empty());
    assert_eq!(last.video_frames().unwrap(), first.video_frames().unwrap());
    let pcm = |r: &Mp4Reader<'_>| crate::audio::decode_track(r.audio_track().unwrap(), 60.0);
    let want = pcm(&first).unwrap().samples;
    assert!(!want.is_empty());
    assert_eq!(pcm(&last).unwrap().samples, want);
    assert_eq!(last.duration(), first.duration());
    let (a, b) = (
        last.encoded_video().unwrap(),
        first.encoded_video().unwrap(),
    );
    assert_eq!(a, b);
}

/// Adds `delta` to every `stco` entry under `moov` (found by scanning for the box type).
fn shift_chunk_offsets(moov: &mut [u8], delta: i64) {
    let mut i = 4;
    while i + 12 <= moov.len() {
        if &moov[i..i + 4] == b"stco" {
            let count = u32::from_be_bytes(moov[i + 8..i + 12].try_into().unwrap()) as usize;
            for k in 0..count {
                let at = i + 12 + 4 * k;
                let v = u32::from_be_bytes(moov[at..at + 4].try_into().unwrap());
                let v = (i64::from(v) + delta) as u32;
                moov[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
        }
        i += 1;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_fragmented_file_cut_anywhere_gives_the_events_of_the_file_fed_whole(
        sizes in chunk_sizes()
    ) {
        let bytes = fixture(FRAGMENTED);
        prop_assert_eq!(streamed(Mp4Demuxer::stream(64 << 20), &bytes, &sizes), whole(&bytes));
    }
}
