//! Entry points for the cargo-fuzz targets in `fuzz/`: each demuxer driven directly, past sniffing.
//!
//! Not part of the API: compiled only with the `fuzzing` feature and hidden from the docs. The
//! demuxers stay `pub(crate)`; these functions open one of them on arbitrary bytes (so the
//! fuzzer need not first win the content sniff to reach a parser), call every method of the
//! reader, decode the audio track under a short cap, and assert the invariants the crate
//! documents: durations and times finite where they are reported, no more frames than bytes,
//! decoded samples finite and within the cap. A violated invariant panics, which the fuzzer
//! reports like any crash.

use crate::audio;
use crate::demux::{Demuxer, Event};
use crate::error::MediaError;
use crate::formats::{avi, es, mkv, mp4, plain, ts, ContainerReader};
use crate::info::{Codec, Container, Pcm};

/// Audio decoded per input at most, in seconds: enough to cross many resampler chunks and to
/// reach the length cap itself; short, because these targets are about the demuxers (the
/// `decode` target runs the full-length decode) and every decoded second costs fuzzing speed.
const DECODE_CAP_SECONDS: f64 = 2.0;

/// Opens `data` with the MP4/MOV/M4A reader (progressive and fragmented) and exercises it.
pub fn mp4(data: &[u8]) {
    exercise(data, mp4::Mp4Reader::open(data));
}

/// Opens `data` with the Matroska/WebM reader and exercises it, then feeds the same bytes to
/// the same demuxer as a live stream, cut into chunks whose sizes come from the data.
pub fn mkv(data: &[u8]) {
    exercise(data, mkv::MkvReader::open(data));
    // One element up to the cap, with its header of at most 12 bytes.
    stream(
        mkv::MkvDemuxer::stream(STREAM_CAP),
        data,
        Some(STREAM_CAP + 12),
    );
}

/// The element cap of the stream demuxers under fuzzing: small, so that it is reached.
const STREAM_CAP: usize = 64 * 1024;

/// Feeds `data` to a stream demuxer in chunks and checks what it holds and hands out: no more
/// than `max_pending` bytes waiting (where the demuxer bounds it itself), finite times, no more
/// frames than bytes, nothing held after the end.
fn stream(mut demux: impl Demuxer, data: &[u8], max_pending: Option<usize>) {
    // Chunk sizes from 1 byte to a few KiB, picked by the input's first byte.
    let scale = 1 + usize::from(data.first().copied().unwrap_or(0)) * 16;
    let mut events = Vec::new();
    let mut frames = 0usize;
    let mut rest = data;
    let mut turn = 0usize;
    while !rest.is_empty() {
        turn += 1;
        let size = (1 + (turn * 7919) % scale).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        demux.feed(chunk, &mut events);
        if let Some(max) = max_pending {
            assert!(
                demux.pending_bytes() <= max,
                "{} bytes held",
                demux.pending_bytes()
            );
        }
        frames += check_events(&mut events);
    }
    demux.finish(&mut events);
    frames += check_events(&mut events);
    if max_pending.is_some() {
        assert_eq!(demux.pending_bytes(), 0, "bytes held after the end");
    }
    assert!(
        frames <= data.len(),
        "{frames} frames from {} bytes",
        data.len()
    );
}

/// Checks and drops a batch of demuxer events; returns how many frames and packets it held.
fn check_events(events: &mut Vec<Event>) -> usize {
    let mut n = 0;
    for event in events.drain(..) {
        match event {
            Event::Video(frame, _) => {
                assert!(frame.pts.is_finite(), "non-finite pts");
                n += 1;
            }
            Event::Audio(_) => n += 1,
            _ => {}
        }
    }
    n
}

/// Opens `data` with the AVI reader and exercises it.
pub fn avi(data: &[u8]) {
    exercise(data, avi::AviReader::open(data));
}

/// Opens `data` with the MPEG-TS reader and exercises it, then feeds it to the same demuxer as
/// a live stream. The packet size and first sync are
/// sniffed as [`crate::probe`] does; input that does not sniff as TS is read as 188-byte packets
/// from offset 0, so the packet parser sees it all the same.
pub fn ts(data: &[u8]) {
    let (packet_size, offset) = ts::sniff(data).unwrap_or((188, 0));
    exercise(data, ts::TsReader::open(data, packet_size, offset));
    // A PES per stream may wait: the live reader's own pending limit bounds the sum.
    stream(
        ts::TsDemuxer::new(packet_size, offset, STREAM_CAP),
        data,
        None,
    );
}

/// Opens `data` with the WAV reader and exercises it.
pub fn wav(data: &[u8]) {
    exercise(data, plain::PlainReader::open(data, Container::Wav));
}

/// Opens `data` with the FLAC reader and exercises it.
pub fn flac(data: &[u8]) {
    exercise(data, plain::PlainReader::open(data, Container::Flac));
}

/// Opens `data` with the MPEG audio (MP3, MP2) reader and exercises it.
pub fn mp3(data: &[u8]) {
    exercise(data, plain::PlainReader::open(data, Container::Mp3));
}

/// Opens `data` with the Ogg reader and exercises it.
pub fn ogg(data: &[u8]) {
    exercise(data, plain::PlainReader::open(data, Container::Ogg));
}

/// Runs the elementary-stream inspection the TS and AVI readers use (ADTS and MPEG audio
/// framing, keyframe flags and picture sizes of every video codec it reads) over `data`.
pub fn elementary(data: &[u8]) {
    let within = |frame: &[u8]| {
        let (start, end) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
        let at = frame.as_ptr() as usize;
        assert!(
            at >= start && at + frame.len() <= end,
            "a frame outside its input"
        );
    };
    let (frames, asc) = es::split_adts(data);
    assert!(
        frames.is_empty() || asc.is_some(),
        "ADTS frames without a config"
    );
    frames.iter().for_each(|f| within(f));
    let (frames, format) = es::split_mpeg_audio(data);
    assert!(
        frames.is_empty() || format.is_some(),
        "MPEG audio frames without a format"
    );
    frames.iter().for_each(|f| within(f));
    if let Some((header_len, frame_len, _, sr, _)) = es::adts_header(data) {
        assert!(header_len <= frame_len && es::aac_rate(sr).is_some());
    }
    if let Some(h) = data.get(..4) {
        let _ = plain::mpeg_audio_header([h[0], h[1], h[2], h[3]]);
    }
    for codec in [
        Codec::H264,
        Codec::H265,
        Codec::Mpeg2Video,
        Codec::Mpeg4Part2,
        Codec::Mjpeg,
    ] {
        let _ = es::is_keyframe(&codec, data);
        let _ = es::picture_size(&codec, data);
    }
}

/// Calls every method of an opened reader and checks what each returns.
fn exercise<'a, R: ContainerReader<'a>>(data: &'a [u8], opened: Result<R, MediaError>) {
    let Ok(reader) = opened else {
        return;
    };
    let _ = reader.container();
    let tracks = reader.tracks();
    assert!(
        tracks.len() <= data.len(),
        "{} tracks from {} bytes",
        tracks.len(),
        data.len()
    );
    let _ = reader.duration();
    if let Ok(frames) = reader.video_frames() {
        // Every listed frame occupies at least one byte of the input.
        assert!(
            frames.len() <= data.len(),
            "{} frames from {} bytes",
            frames.len(),
            data.len()
        );
        assert!(frames.iter().all(|f| f.pts.is_finite()), "non-finite pts");
    }
    if let Ok(Some(video)) = reader.encoded_video() {
        assert!(
            video.frames.len() <= data.len(),
            "{} encoded frames from {} bytes",
            video.frames.len(),
            data.len()
        );
    }
    if let Ok(track) = reader.audio_track() {
        if let Ok(pcm) = audio::decode_track(track, DECODE_CAP_SECONDS) {
            check_pcm(&pcm.samples, DECODE_CAP_SECONDS);
        }
    }
}

/// Asserts that decoded audio is finite and no longer than `cap_seconds` allows: the decode
/// stops once it passes the cap, so at most one resampler chunk (well under 1 s) lies beyond.
pub fn check_pcm(samples: &[f32], cap_seconds: f64) {
    let max = ((cap_seconds + 1.0) * f64::from(Pcm::SAMPLE_RATE)) as usize;
    assert!(
        samples.len() <= max,
        "{} samples under a cap of {cap_seconds} s",
        samples.len()
    );
    assert!(samples.iter().all(|s| s.is_finite()), "non-finite sample");
}
