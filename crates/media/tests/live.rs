//! The live reader against the file path: the same bytes, cut any way and fed frame by frame,
//! give the PCM and frame list of the whole file; problems are reported per segment.

use std::path::Path;
use std::sync::OnceLock;

use attune_media::live::{ChunkReport, LiveError, LiveLimits, LiveMode, LivePixels, LiveReader};
use attune_media::video::{decode_pictures_each, VideoPicture};
use attune_media::{decode_audio, video_frames, Pcm, VideoFrameInfo};
use proptest::prelude::*;

fn read(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// xorshift64*: deterministic chunk sizes.
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

/// How a buffer is cut into frames.
#[derive(Debug, Clone, Copy)]
enum Cut {
    Whole,
    Fixed(usize),
    /// Sizes from 1 to the bound, from a seed.
    Random(u64, usize),
}

const CUTS: [Cut; 6] = [
    Cut::Whole,
    Cut::Fixed(1),
    Cut::Fixed(7),
    Cut::Fixed(4096),
    Cut::Random(1, 300),
    Cut::Random(2, 20_000),
];

fn cut(data: &[u8], how: Cut) -> Vec<&[u8]> {
    match how {
        Cut::Whole => vec![data],
        Cut::Fixed(n) => data.chunks(n).collect(),
        Cut::Random(seed, bound) => {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut out = Vec::new();
            let mut rest = data;
            while !rest.is_empty() {
                let n = (1 + rng.below(bound)).min(rest.len());
                out.push(&rest[..n]);
                rest = &rest[n..];
            }
            out
        }
    }
}

/// Everything a session produced.
#[derive(Debug, Default)]
struct Session {
    pcm: Vec<f32>,
    frames: Vec<VideoFrameInfo>,
    reports: Vec<ChunkReport>,
}

impl Session {
    fn codes(&self) -> Vec<(u64, &'static str)> {
        self.reports
            .iter()
            .flat_map(|r| r.problems.iter().map(|p| (p.segment, p.problem.code_str())))
            .collect()
    }
}

/// Pushes `frames` (segment index = position), finishes, and drains as a session engine would.
fn run(mut reader: LiveReader, frames: &[&[u8]]) -> Session {
    let mut s = Session::default();
    for (i, f) in frames.iter().enumerate() {
        let r = reader.push(f, i as u64);
        assert_eq!(r.segment, i as u64);
        s.pcm.extend(reader.drain_samples());
        s.frames.extend(r.video_frames.iter().copied());
        s.reports.push(r);
    }
    let r = reader.finish();
    s.pcm.extend(reader.drain_samples());
    s.frames.extend(r.video_frames.iter().copied());
    s.reports.push(r);
    assert_eq!(reader.samples_total(), s.pcm.len() as u64);
    s
}

fn assert_same_pcm(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: PCM length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        panic!("{what}: sample {i} is {} instead of {}", got[i], want[i]);
    }
}

fn assert_same_frames(got: &[VideoFrameInfo], want: &[VideoFrameInfo], what: &str) {
    let mut got = got.to_vec();
    got.sort_by(|a, b| a.pts.total_cmp(&b.pts));
    assert_eq!(got.len(), want.len(), "{what}: frame count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g.pts - w.pts).abs() < 1e-9 && g.size == w.size && g.keyframe == w.keyframe,
            "{what}: frame {i} is {g:?} instead of {w:?}"
        );
    }
}

/// A stream fed every way gives exactly the file decode and frame list, with no problem.
fn check_stream(name: &str, data: &[u8], needs_video: bool) {
    let want_pcm = decode_audio(data).expect("file decode").samples;
    let want_frames = video_frames(data).expect("file frames");
    assert!(!want_pcm.is_empty());
    for how in CUTS {
        let what = format!("{name} {how:?}");
        let s = run(LiveReader::new(needs_video), &cut(data, how));
        assert_eq!(s.codes(), vec![], "{what}: problems");
        assert_same_pcm(&s.pcm, &want_pcm, &what);
        assert_same_frames(&s.frames, &want_frames, &what);
    }
}

#[test]
fn a_continuous_webm_cut_anywhere_decodes_like_the_file() {
    check_stream("continuous.webm", &read("segments/continuous.webm"), true);
}

/// The file rewritten as MediaRecorder writes it: no SeekHead, Cues or Tags, and the Segment
/// and every Cluster of unknown size.
fn as_media_recorder(webm: &[u8]) -> Vec<u8> {
    fn header(b: &[u8]) -> (u32, usize, u64) {
        let id_len = b[0].leading_zeros() as usize + 1;
        let id = b[..id_len]
            .iter()
            .fold(0u32, |a, &x| (a << 8) | u32::from(x));
        let len = b[id_len].leading_zeros() as usize + 1;
        let mut size = u64::from(b[id_len]) & (0xff >> len);
        for &x in &b[id_len + 1..id_len + len] {
            size = (size << 8) | u64::from(x);
        }
        (id, id_len + len, size)
    }
    const UNKNOWN: [u8; 8] = [0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    let (id, ebml_hl, ebml_size) = header(webm);
    assert_eq!(id, 0x1a45_dfa3);
    let ebml_end = ebml_hl + ebml_size as usize;
    let mut out = webm[..ebml_end].to_vec();
    let (id, seg_hl, _) = header(&webm[ebml_end..]);
    assert_eq!(id, 0x1853_8067);
    out.extend_from_slice(&[0x18, 0x53, 0x80, 0x67]);
    out.extend_from_slice(&UNKNOWN);
    let mut at = ebml_end + seg_hl;
    while at < webm.len() {
        let (id, hl, size) = header(&webm[at..]);
        let end = at + hl + size as usize;
        match id {
            0x1f43_b675 => {
                out.extend_from_slice(&[0x1f, 0x43, 0xb6, 0x75]);
                out.extend_from_slice(&UNKNOWN);
                out.extend_from_slice(&webm[at + hl..end]);
            }
            0x1549_a966 | 0x1654_ae6b => out.extend_from_slice(&webm[at..end]),
            _ => {}
        }
        at = end;
    }
    out
}

#[test]
fn a_media_recorder_stream_with_unknown_sizes_decodes_like_the_file() {
    let original = read("segments/continuous.webm");
    let recorded = as_media_recorder(&original);
    // The rewrite changed the structure, not the media.
    assert_same_pcm(
        &decode_audio(&recorded).unwrap().samples,
        &decode_audio(&original).unwrap().samples,
        "rewrite",
    );
    check_stream("continuous.webm as MediaRecorder", &recorded, true);
}

/// A stream input with what the file path makes of the same bytes.
struct Expected {
    name: &'static str,
    data: Vec<u8>,
    pcm: Vec<f32>,
    frames: Vec<VideoFrameInfo>,
}

/// One stream per container the live reader reads incrementally, decoded once as a file.
fn expected() -> &'static [Expected] {
    static CELL: OnceLock<Vec<Expected>> = OnceLock::new();
    CELL.get_or_init(|| {
        let webm = read("segments/continuous.webm");
        let inputs = [
            ("continuous.webm", webm.clone()),
            ("continuous.webm as MediaRecorder", as_media_recorder(&webm)),
            ("mkv_h264_vorbis.mkv", read("mkv_h264_vorbis.mkv")),
            ("ts_h264_aac.ts", read("ts_h264_aac.ts")),
            ("mp4frag_h264_aac.mp4", read("mp4frag_h264_aac.mp4")),
        ];
        inputs
            .into_iter()
            .map(|(name, data)| Expected {
                name,
                pcm: decode_audio(&data).expect(name).samples,
                frames: video_frames(&data).expect(name),
                data,
            })
            .collect()
    })
}

/// Chunk sizes from single bytes to more than a whole fixture, used in turn and over again.
fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1usize..8, 1usize..600, 1usize..100_000], 1..32)
}

fn cut_by<'a>(data: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.clamp(1, rest.len()));
        out.push(chunk);
        rest = tail;
    }
    out
}

proptest! {
    // Each case decodes a whole stream; the fixed cuts above cover the extremes every run.
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn a_stream_cut_anywhere_gives_the_pcm_and_frames_of_the_file(
        which in 0usize..5,
        sizes in chunk_sizes(),
    ) {
        let want = &expected()[which];
        let s = run(LiveReader::new(true), &cut_by(&want.data, &sizes));
        prop_assert_eq!(s.codes(), vec![], "{}: problems", want.name);
        assert_same_pcm(&s.pcm, &want.pcm, want.name);
        assert_same_frames(&s.frames, &want.frames, want.name);
    }
}

#[test]
fn a_fragmented_mp4_cut_anywhere_decodes_like_the_file() {
    check_stream("mp4frag_h264_aac.mp4", &read("mp4frag_h264_aac.mp4"), true);
}

#[test]
fn transport_streams_cut_anywhere_decode_like_the_file() {
    for name in ["ts_h264_aac.ts", "ts_mpeg2video_mp2.ts"] {
        check_stream(name, &read(name), true);
    }
}

#[test]
fn self_contained_transport_stream_segments_follow_each_other() {
    // Two files muxed from the same start, back to back: the clock steps back at the second.
    let ts = read("ts_h264_aac.ts");
    let pcm = decode_audio(&ts).unwrap().samples;
    let frames = video_frames(&ts).unwrap();
    let offset = pcm.len() as f64 / 16_000.0;
    let want_frames: Vec<VideoFrameInfo> = frames
        .iter()
        .copied()
        .chain(frames.iter().map(|f| VideoFrameInfo {
            pts: f.pts + offset,
            ..*f
        }))
        .collect();
    let both = [ts.clone(), ts].concat();
    for how in [Cut::Whole, Cut::Fixed(4096), Cut::Random(3, 3000)] {
        let s = run(LiveReader::new(true), &cut(&both, how));
        assert_eq!(s.codes(), vec![], "{how:?}");
        assert_same_pcm(
            &s.pcm,
            &[pcm.clone(), pcm.clone()].concat(),
            &format!("{how:?}"),
        );
        assert_same_frames(&s.frames, &want_frames, &format!("{how:?}"));
    }
}

#[test]
fn other_webm_and_matroska_codecs_stream_like_the_file() {
    for name in [
        "webm_vp8_vorbis.webm",
        "webm_vp9_opus.webm",
        "mkv_h264_vorbis.mkv",
        "mkv_mpeg4_mp3.mkv",
    ] {
        check_stream(name, &read(name), true);
    }
}

/// A WAV file around raw PCM, for the file path's decode of the same samples.
fn wav(pcm: &[u8], rate: u32) -> Vec<u8> {
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(36 + pcm.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(pcm.len() as u32).to_le_bytes());
    out.extend_from_slice(pcm);
    out
}

#[test]
fn raw_pcm_cut_at_any_byte_decodes_like_the_same_samples_in_a_file() {
    for (name, rate) in [
        ("speech_16k_s16le.pcm", 16_000),
        ("speech_24k_s16le.pcm", 24_000),
    ] {
        let data = read(name);
        let want = decode_audio(&wav(&data, rate)).unwrap().samples;
        assert_eq!(want.len(), 80_000, "{name}: 5 s at 16 kHz");
        for how in CUTS.into_iter().chain([Cut::Fixed(3), Cut::Fixed(4095)]) {
            let s = run(LiveReader::pcm(rate).unwrap(), &cut(&data, how));
            assert_eq!(s.codes(), vec![], "{name} {how:?}");
            assert_same_pcm(&s.pcm, &want, &format!("{name} {how:?}"));
        }
    }
    // At 16 kHz nothing is resampled: each sample is its s16 value over 32768.
    let data = read("speech_16k_s16le.pcm");
    let s = run(LiveReader::pcm(16_000).unwrap(), &cut(&data, Cut::Fixed(3)));
    assert_eq!(
        s.pcm[1000],
        f32::from(i16::from_le_bytes([data[2000], data[2001]])) / 32768.0
    );
}

#[test]
fn a_reader_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<LiveReader>();
    let mut reader = LiveReader::new(true);
    let segment = read("segments/seg0.webm");
    let (reader, report) = std::thread::spawn(move || {
        let r = reader.push(&segment, 0);
        (reader, r)
    })
    .join()
    .unwrap();
    assert!(report.appended_media());
    assert!(reader.has_decoded_anything());
}

#[test]
fn only_the_interface_pcm_rates_are_accepted() {
    assert!(LiveReader::pcm(16_000).is_some());
    assert!(LiveReader::pcm(24_000).is_some());
    assert!(LiveReader::pcm(44_100).is_none());
    assert!(LiveReader::pcm(8_000).is_none());
}

#[test]
fn an_odd_byte_is_carried_to_the_next_frame() {
    let mut reader = LiveReader::pcm(16_000).unwrap();
    let r = reader.push(&[0x00, 0x40, 0x00], 0);
    assert_eq!(r.samples_appended, 1);
    let r = reader.push(&[0xc0, 0x01], 1);
    assert_eq!(r.samples_appended, 1);
    let r = reader.push(&[0x00], 2);
    assert_eq!(r.samples_appended, 1);
    assert_eq!(reader.drain_samples(), vec![0.5, -0.5, 1.0 / 32768.0]);
}

const SEGMENTS: [&str; 3] = [
    "segments/seg0.webm",
    "segments/seg1.webm",
    "segments/seg2.webm",
];

/// Segments pushed one per frame: their PCM is the concatenation of their file decodes, and
/// each one's frames sit at its start on the session timeline.
fn check_segments(mode: LiveMode) {
    let files: Vec<Vec<u8>> = SEGMENTS.iter().map(|n| read(n)).collect();
    let decodes: Vec<Vec<f32>> = files
        .iter()
        .map(|f| decode_audio(f).unwrap().samples)
        .collect();
    let frames: Vec<&[u8]> = files.iter().map(|f| f.as_slice()).collect();
    let s = run(LiveReader::with_mode(mode, true), &frames);
    assert_eq!(s.codes(), vec![], "{mode:?}");
    assert_same_pcm(&s.pcm, &decodes.concat(), &format!("{mode:?}"));
    let mut want_frames = Vec::new();
    let mut offset = 0usize;
    for (file, pcm) in files.iter().zip(&decodes) {
        for f in video_frames(file).unwrap() {
            want_frames.push(VideoFrameInfo {
                pts: offset as f64 / f64::from(Pcm::SAMPLE_RATE) + f.pts,
                ..f
            });
        }
        offset += pcm.len();
    }
    assert_same_frames(&s.frames, &want_frames, &format!("{mode:?}"));
    // The reported spans tile the timeline from 0 to the end of the last segment.
    let spans: Vec<_> = s.reports.iter().filter_map(|r| r.span).collect();
    assert_eq!(spans.first().map(|s| s.start), Some(0.0));
    assert!(spans.windows(2).all(|w| w[0].end == w[1].start));
    let end = spans.last().unwrap().end;
    assert!(
        (end - offset as f64 / 16_000.0).abs() < 1e-9,
        "ends at {end}"
    );
}

#[test]
fn self_contained_segments_line_up_on_one_timeline() {
    check_segments(LiveMode::Auto);
    check_segments(LiveMode::Segments);
}

#[test]
fn in_segment_mode_each_segment_is_complete_in_its_own_report() {
    let mut reader = LiveReader::with_mode(LiveMode::Segments, true);
    for (i, name) in SEGMENTS.iter().enumerate() {
        let file = read(name);
        let r = reader.push(&file, 10 + i as u64);
        assert_eq!(
            r.samples_appended,
            decode_audio(&file).unwrap().samples.len()
        );
        assert_eq!(r.video_frames.len(), 30);
    }
}

#[test]
fn a_segment_under_three_seconds_is_refused_with_ih5006() {
    let short = read("short_2s.mp4");
    for mode in [LiveMode::Segments, LiveMode::Auto] {
        let mut reader = LiveReader::with_mode(mode, true);
        let r = reader.push(&short, 7);
        let codes: Vec<_> = r
            .problems
            .iter()
            .map(|p| (p.segment, p.problem.code_str()))
            .collect();
        assert_eq!(codes, vec![(7, "ih5006")], "{mode:?}");
        assert!(!r.appended_media(), "{mode:?}");
        assert!(r.fatal.is_none());
        // The session goes on.
        let r = reader.push(&read("segments/seg0.webm"), 8);
        assert!(r.appended_media(), "{mode:?}");
    }
}

#[test]
fn a_short_webm_segment_is_reported_once_the_next_segment_shows_it_was_one() {
    // Auto mode cannot know a WebM frame is a whole segment until the next frame opens a new
    // file: the first segment cut to its first two clusters (2 s) is reported then.
    let seg0 = read("segments/seg0.webm");
    let short = as_media_recorder(&seg0);
    let second_cluster = short
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == [0x1f, 0x43, 0xb6, 0x75])
        .nth(1)
        .map(|(i, _)| i)
        .unwrap();
    let short = &short[..second_cluster];
    let s = run(LiveReader::new(true), &[short, &read("segments/seg1.webm")]);
    assert_eq!(s.codes(), vec![(0, "ih5006")]);
    // A continuous stream that is simply short is not a segment.
    let s = run(LiveReader::new(true), &cut(short, Cut::Fixed(1000)));
    assert_eq!(s.codes(), vec![]);
}

#[test]
fn garbage_is_unreadable_per_segment_and_the_next_good_segment_decodes() {
    let seg0 = read("segments/seg0.webm");
    let seg1 = read("segments/seg1.webm");
    let random = read("random.bin");
    let text = read("text.txt");
    let want = [
        decode_audio(&seg0).unwrap().samples,
        decode_audio(&seg1).unwrap().samples,
    ]
    .concat();
    for mode in [LiveMode::Segments, LiveMode::Auto] {
        let frames: Vec<&[u8]> = vec![&random, &seg0, &random, &text, &seg1];
        let s = run(LiveReader::with_mode(mode, true), &frames);
        assert_eq!(
            s.codes(),
            vec![(0, "ih6007"), (2, "ih6007"), (3, "ih6007")],
            "{mode:?}"
        );
        assert_same_pcm(&s.pcm, &want, &format!("{mode:?}"));
        assert!(s.reports.iter().all(|r| r.fatal.is_none()));
    }
}

/// The init segment of the fragmented fixture and the fragments after it.
fn split_fmp4(data: &[u8]) -> (&[u8], &[u8]) {
    let first_moof = data.windows(4).position(|w| w == b"moof").unwrap() - 4;
    data.split_at(first_moof)
}

#[test]
fn a_fragment_before_any_init_segment_is_ih5004() {
    let data = read("mp4frag_h264_aac.mp4");
    let (init, fragments) = split_fmp4(data.as_slice());
    for mode in [LiveMode::Auto, LiveMode::Continuous, LiveMode::Segments] {
        let mut reader = LiveReader::with_mode(mode, true);
        let r = reader.push(fragments, 3);
        let codes: Vec<_> = r
            .problems
            .iter()
            .map(|p| (p.segment, p.problem.code_str()))
            .collect();
        assert_eq!(codes, vec![(3, "ih5004")], "{mode:?}");
        assert!(!r.appended_media());
    }
    // Once the init segment comes, the fragments after it decode.
    let s = run(LiveReader::new(true), &[fragments, init, fragments]);
    assert_eq!(s.codes(), vec![(0, "ih5004")]);
    assert_eq!(s.pcm.len(), decode_audio(&data).unwrap().samples.len());
}

#[test]
fn audio_without_video_is_ih5001_once_when_video_is_needed() {
    let audio_only = read("audio_only_for_inter2.mp4");
    let s = run(
        LiveReader::with_mode(LiveMode::Segments, true),
        &[&audio_only, &audio_only, &audio_only],
    );
    assert_eq!(s.codes(), vec![(0, "ih5001")]);
    assert_eq!(
        s.pcm.len(),
        3 * decode_audio(&audio_only).unwrap().samples.len()
    );

    let webm = read("webm_opus.webm");
    let s = run(LiveReader::new(true), &cut(&webm, Cut::Fixed(4096)));
    assert_eq!(s.codes(), vec![(0, "ih5001")]);
    let s = run(LiveReader::new(false), &cut(&webm, Cut::Fixed(4096)));
    assert_eq!(s.codes(), vec![]);
    assert_same_pcm(&s.pcm, &decode_audio(&webm).unwrap().samples, "webm_opus");
}

#[test]
fn a_segment_without_audio_keeps_the_timeline_with_silence() {
    let video_only = read("video_only.mp4");
    let seg0 = read("segments/seg0.webm");
    let frames = video_frames(&video_only).unwrap();
    assert_eq!(frames.len(), 50);
    let s = run(
        LiveReader::with_mode(LiveMode::Segments, true),
        &[&video_only, &seg0],
    );
    // No audio is reported once; its five seconds of video become five seconds of silence, so
    // PCM sample n stays session time n / 16000 for the segment after it.
    assert_eq!(s.codes(), vec![(0, "ih5008")]);
    let seg0_pcm = decode_audio(&seg0).unwrap().samples;
    assert_eq!(s.pcm.len(), 80_000 + seg0_pcm.len());
    assert!(s.pcm[..80_000].iter().all(|&x| x == 0.0));
    assert_same_pcm(&s.pcm[80_000..], &seg0_pcm, "after the silence");
    let first_of_seg0 = s.frames[50];
    assert!((first_of_seg0.pts - (5.0 + video_frames(&seg0).unwrap()[0].pts)).abs() < 1e-9);
}

#[test]
fn a_stream_without_a_header_or_a_unit_within_the_hold_limit_is_fatal() {
    let limits = LiveLimits {
        hold_bytes: 50_000,
        ..LiveLimits::default()
    };
    let random = read("random.bin");
    let mut reader = LiveReader::new(true).with_limits(limits);
    let mut fatal_at = None;
    for i in 0..10u64 {
        let r = reader.push(&random, i);
        assert!(!reader.has_decoded_anything());
        if let Some(e) = r.fatal {
            assert_eq!(e.code_str(), "ih6010");
            fatal_at = Some(i);
            break;
        }
        // Until then each unreadable frame is a non-fatal ih6007.
        assert_eq!(r.problems[0].problem.code_str(), "ih6007");
        assert_eq!(
            reader.bytes_without_progress(),
            (i + 1) * random.len() as u64
        );
    }
    // 20 KiB frames: the third passes 50 000 bytes.
    assert_eq!(fatal_at, Some(2));
    // A stopped reader reads nothing more.
    let r = reader.push(&read("segments/seg0.webm"), 11);
    assert!(matches!(r.fatal, Some(LiveError::NotAdvancing { .. })));
    assert!(!r.appended_media());

    // Progress resets the counter: the same garbage after real media is not fatal as long as
    // media keeps coming.
    let mut reader = LiveReader::new(true).with_limits(limits);
    reader.push(&read("segments/seg0.webm"), 0);
    assert!(reader.has_decoded_anything());
    assert_eq!(reader.bytes_without_progress(), 0);
    reader.push(&random, 1);
    reader.push(&random, 2);
    let r = reader.push(&read("segments/seg1.webm"), 3);
    assert!(r.fatal.is_none() && r.appended_media());
}

#[test]
fn a_huge_declared_size_is_refused_without_waiting_for_it() {
    // A WebM header, then a SimpleBlock claiming 2^40 bytes inside an unknown-size cluster.
    let webm = as_media_recorder(&read("segments/seg0.webm"));
    let first_cluster = webm
        .windows(4)
        .position(|w| w == [0x1f, 0x43, 0xb6, 0x75])
        .unwrap();
    let mut stream = webm[..first_cluster + 12].to_vec();
    stream.extend_from_slice(&[0xe7, 0x81, 0x00]);
    stream.extend_from_slice(&[0xa3, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]);
    let mut reader = LiveReader::new(true);
    let r = reader.push(&stream, 0);
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].problem.code_str(), "ih6007");
    // Megabytes of filler after it are scanned, not kept.
    let r = reader.push(&vec![0u8; 8 << 20], 1);
    assert!(r.fatal.is_none());
    assert!(reader.buffered_bytes() < 16);
}

#[test]
fn too_much_media_for_one_session_is_fatal() {
    let limits = LiveLimits {
        max_media_seconds: 5.0,
        ..LiveLimits::default()
    };
    let mut reader = LiveReader::with_mode(LiveMode::Segments, true).with_limits(limits);
    assert!(reader.push(&read("segments/seg0.webm"), 0).fatal.is_none());
    let r = reader.push(&read("segments/seg1.webm"), 1);
    assert_eq!(r.fatal.map(|e| e.code_str()), Some("ih6004"));
    assert!(reader.samples_total() <= 5 * 16_000);
}

/// `mp4` with the first sample of its first `stsz` table (the video track's in the fixtures
/// used) declared at `size` bytes; the file itself stays small.
fn with_first_sample_of(mp4: &[u8], size: u32) -> Vec<u8> {
    let mut bytes = mp4.to_vec();
    let at = bytes.windows(4).position(|w| w == b"stsz").unwrap();
    let first = at + 16;
    bytes[first..first + 4].copy_from_slice(&size.to_be_bytes());
    bytes
}

#[test]
fn oversized_video_sample_is_ih5005() {
    let original = read("mp4_h264_aac.mp4");
    let oversized = with_first_sample_of(&original, 40 * 1024 * 1024);
    let error = attune_media::probe(&oversized).unwrap_err();
    assert_eq!(error.code_str(), "ih5005", "{error}");
    assert!(
        attune_media::probe(&with_first_sample_of(&original, 1000)).is_ok(),
        "only the size changed"
    );

    // In a stream the segment carrying it is skipped with a non-fatal ih5005; the next one
    // is read.
    let mut reader = LiveReader::with_mode(LiveMode::Segments, true);
    let report = reader.push(&oversized, 0);
    let codes: Vec<_> = report
        .problems
        .iter()
        .map(|p| p.problem.code_str())
        .collect();
    assert_eq!(codes, ["ih5005"], "{report:?}");
    assert!(report.problems[0].segment == 0 && report.fatal.is_none());
    assert!(!report.appended_media());
    let next = reader.push(&original, 1);
    assert!(
        next.problems.is_empty() && next.appended_media(),
        "{next:?}"
    );
}

/// Pictures of a stream fed in `chunk`-byte frames to a reader decoding pixels.
fn stream_pictures(bytes: &[u8], chunk: usize, pixels: LivePixels) -> (Vec<VideoPicture>, usize) {
    stream_pictures_with(bytes, chunk, pixels, false)
}

/// [`stream_pictures`]; with `defer`, the reader decodes only when asked, here every third
/// frame up to a second before the media's end.
fn stream_pictures_with(
    bytes: &[u8],
    chunk: usize,
    pixels: LivePixels,
    defer: bool,
) -> (Vec<VideoPicture>, usize) {
    let mut reader = LiveReader::new(false).with_pixels(pixels);
    if defer {
        reader = reader.with_deferred_pictures();
    }
    let (mut pictures, mut over) = (Vec::new(), 0);
    for (i, frame) in bytes.chunks(chunk).enumerate() {
        let r = reader.push(frame, i as u64);
        assert!(r.fatal.is_none(), "{:?}", r.fatal);
        pictures.extend(r.pictures);
        over += r.frames_over_budget;
        if defer && i % 3 == 2 {
            let waiting = reader.first_undecoded();
            let decoded = reader.decode_pictures(reader.media_end() - 1.0);
            assert!(decoded
                .pictures
                .iter()
                .all(|p| p.luma.pts < reader.media_end() - 1.0));
            assert!(waiting.is_some() || decoded.pictures.is_empty());
            pictures.extend(decoded.pictures);
            over += decoded.frames_over_budget;
        }
    }
    let r = reader.finish();
    pictures.extend(r.pictures);
    (pictures, over + r.frames_over_budget)
}

#[test]
fn live_webm_streams_give_the_pictures_of_the_file() {
    let pixels = LivePixels::default();
    for name in [
        "segments/continuous.webm",
        "faces/video/astronaut_vp9.webm",
        "faces/video/astronaut_vp8.webm",
    ] {
        let bytes = read(name);
        let mut file = Vec::new();
        decode_pictures_each(&bytes, pixels.options, |p| file.push(p)).unwrap();
        assert!(file.len() > 40, "{name}: {}", file.len());
        for (chunk, defer) in [(997, false), (65_536, false), (4096, true)] {
            let (live, over) = stream_pictures_with(&bytes, chunk, pixels, defer);
            assert_eq!(over, 0, "{name}");
            assert_eq!(
                live.len(),
                file.len(),
                "{name}, {chunk}-byte frames, deferred {defer}"
            );
            for (l, f) in live.iter().zip(&file) {
                assert_eq!(l, f, "{name}: picture at {}", f.luma.pts);
                assert!(l.rgb.as_ref().is_some_and(|rgb| rgb.width <= 320));
            }
        }
    }
}

/// One RGB filter serves a whole session: it is asked about every sampled picture of every
/// file, in the order they are handed out and with their times on the session clock (the
/// second file, after the first stopped part-way, starts where the first file's audio ended),
/// and a picture it declines comes out with luma alone.
#[test]
fn a_live_rgb_filter_is_asked_about_each_picture_on_the_session_clock() {
    use std::sync::{Arc, Mutex};
    let bytes = read("faces/video/astronaut_vp9_opus.webm");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let mut n = 0usize;
    let mut reader = LiveReader::new(true)
        .with_pixels(LivePixels::default())
        .with_rgb_filter(Box::new(move |luma| {
            log.lock().unwrap().push(luma.pts);
            n += 1;
            n.is_multiple_of(3)
        }))
        .with_deferred_pictures();
    let mut pictures = Vec::new();
    let mut segment = 0;
    for file in [&bytes[..bytes.len() * 45 / 100], &bytes[..]] {
        for chunk in file.chunks(4096) {
            let r = reader.push(chunk, segment);
            assert!(r.fatal.is_none(), "{:?}", r.fatal);
            pictures.extend(r.pictures);
            pictures.extend(reader.decode_pictures(reader.media_end() - 1.0).pictures);
            segment += 1;
        }
        pictures.extend(reader.finish().pictures);
    }
    let shown: Vec<f64> = pictures.iter().map(|p| p.luma.pts).collect();
    assert!(shown.len() > 250, "{} pictures", shown.len());
    assert_eq!(*asked.lock().unwrap(), shown);
    // The second file's pictures are on the session clock: after the first file's.
    let restart = shown.windows(2).position(|w| w[1] < w[0] - 5.0);
    assert_eq!(
        restart, None,
        "the second file's pictures went back in time"
    );
    for (i, p) in pictures.iter().enumerate() {
        assert_eq!(
            p.rgb.is_some(),
            (i + 1).is_multiple_of(3),
            "picture {i} at {} s",
            p.luma.pts
        );
    }
}

#[test]
fn a_live_decode_budget_thins_a_stream_to_its_key_frames() {
    let bytes = read("faces/video/astronaut_vp9.webm");
    // 320x240 at 10 fps is 768 000 pixels a second; give it a quarter of that.
    let pixels = LivePixels {
        pixels_per_second: 192_000.0,
        ..LivePixels::default()
    };
    let (live, over) = stream_pictures(&bytes, 4096, pixels);
    let (all, none_over) = stream_pictures(&bytes, 4096, LivePixels::default());
    assert_eq!(none_over, 0);
    // Decoded when asked rather than as frames arrive, the budget thins it alike.
    assert_eq!(
        stream_pictures_with(&bytes, 4096, pixels, true),
        (live.clone(), over)
    );
    assert!(over > 0, "no frame over budget");
    assert!(
        live.len() < all.len() / 2,
        "{} of {}",
        live.len(),
        all.len()
    );
    // What is decoded is whole: each picture is the unbudgeted one of its time.
    for p in &live {
        let same = all.iter().find(|a| a.luma.pts == p.luma.pts).unwrap();
        assert_eq!(p, same, "at {}", p.luma.pts);
    }
}
