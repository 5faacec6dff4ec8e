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
use crate::live::{LiveLimits, LiveMode, LiveReader, PcmRate};
use crate::video::{EncodedVideo, LumaDecoder};

/// Audio decoded per input at most, in seconds: enough to cross many resampler chunks and to
/// reach the length cap itself; short, because these targets are about the demuxers (the
/// `decode` target runs the full-length decode) and every decoded second costs fuzzing speed.
const DECODE_CAP_SECONDS: f64 = 2.0;

/// Opens `data` with the MP4/MOV/M4A reader (progressive and fragmented) and exercises it,
/// then feeds the same bytes to the same demuxer as a live stream, cut into chunks whose sizes
/// come from the data.
pub fn mp4(data: &[u8]) {
    exercise(data, mp4::Mp4Reader::open(data));
    // One box up to the cap, with its header of at most 16 bytes.
    stream(
        mp4::Mp4Demuxer::stream(STREAM_CAP),
        data,
        Some(STREAM_CAP + 16),
    );
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

/// The file path end to end, as an upload meets it: `probe`, the model checks, then
/// `decode_audio` and `video_frames` on the same bytes, through content sniffing.
pub fn decode(data: &[u8]) {
    if let Ok(info) = crate::probe(data) {
        assert!(
            info.duration.is_finite() && info.duration > 0.0,
            "probe accepted {info:?}"
        );
        let _ = crate::check(&info, &crate::MediaRequirements::for_inter2());
        let _ = crate::check(&info, &crate::MediaRequirements::for_inter2_audio());
    }
    if let Ok(pcm) = crate::decode_audio(data) {
        check_pcm(&pcm.samples, crate::MAX_DECODE_SECONDS);
    }
    if let Ok(frames) = crate::video_frames(data) {
        assert!(
            frames.len() <= data.len(),
            "{} frames from {} bytes",
            frames.len(),
            data.len()
        );
        assert!(frames.iter().all(|f| f.pts.is_finite()), "non-finite pts");
    }
}

/// The live reader fed the input cut into frames whose sizes come from the input itself.
///
/// Layout: byte 0 picks the mode (bits 0-2: auto, segments, continuous, raw PCM at 16 kHz or
/// 24 kHz), whether the model needs video (bit 3), small limits (bit 4, so the hold and
/// pending limits and the media cap are reached) and the frame-size scale (bits 5-7: about 1,
/// 7, 64, 512 or 4096 bytes, the whole input as one frame, or sizes spread over 1 to 64 KiB);
/// bytes 1-4 seed the generator of the frame sizes; the rest is the media. `fuzz/seed.sh`
/// prepends such headers to the fixtures. Checks every report: a stopped reader stays
/// stopped, sample counts add up, held bytes never exceed `max_pending_bytes`.
pub fn live(data: &[u8]) {
    let Some((header, media)) = data.split_first_chunk::<HEADER>() else {
        return;
    };
    let flags = header[0];
    let needs_video = flags & 0x08 != 0;
    let mode = match flags & 0x07 {
        1 => LiveMode::Segments,
        2 => LiveMode::Continuous,
        3 => LiveMode::RawPcm(PcmRate::Hz16000),
        4 => LiveMode::RawPcm(PcmRate::Hz24000),
        _ => LiveMode::Auto,
    };
    let limits = if flags & 0x10 != 0 {
        LiveLimits {
            max_pending_bytes: 16 * 1024,
            hold_bytes: 48 * 1024,
            max_media_seconds: 5.0,
        }
    } else {
        LiveLimits::default()
    };
    let scale = match flags >> 5 {
        0 => Some(1),
        1 => Some(4),
        2 => Some(32),
        3 => Some(256),
        4 => Some(2048),
        5 => None,
        _ => Some(32 * 1024),
    };
    let seed = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) | 1;
    let mut sizes = Sizes { state: seed, scale };

    let mut reader = LiveReader::with_mode(mode, needs_video).with_limits(limits);
    let mut rest = media;
    let mut segment = 0u64;
    let mut total = 0u64;
    let mut stopped = false;
    while !rest.is_empty() {
        let (frame, tail) = rest.split_at(sizes.next(rest.len()));
        rest = tail;
        let report = reader.push(frame, segment);
        total = checked(&mut reader, &report, total, &mut stopped, &limits);
        segment += 1;
    }
    let report = reader.finish();
    checked(&mut reader, &report, total, &mut stopped, &limits);
}

/// Header bytes of the [`live`] target's input before the media.
const HEADER: usize = 5;

/// xorshift32: deterministic frame sizes from the input's seed.
struct Sizes {
    state: u32,
    scale: Option<usize>,
}

impl Sizes {
    fn next(&mut self, left: usize) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        let r = self.state as usize;
        let size = match self.scale {
            None => left,
            // Around the scale: from 1 to twice it.
            Some(scale) => 1 + r % (2 * scale),
        };
        size.clamp(1, left.max(1))
    }
}

/// Checks one report against the reader's state; returns the new sample total.
fn checked(
    reader: &mut LiveReader,
    report: &crate::live::ChunkReport,
    total_before: u64,
    stopped: &mut bool,
    limits: &LiveLimits,
) -> u64 {
    if *stopped {
        assert!(
            report.fatal.is_some(),
            "a stopped reader forgot its fatal error"
        );
        assert!(!report.appended_media(), "a stopped reader appended media");
    }
    *stopped |= report.fatal.is_some();
    let total = reader.samples_total();
    assert_eq!(
        total - total_before,
        report.samples_appended as u64,
        "sample count"
    );
    if let Some(span) = report.span {
        assert!(
            span.start.is_finite() && span.end.is_finite() && span.start <= span.end,
            "span {span:?}"
        );
    }
    assert!(
        report.video_frames.iter().all(|f| f.pts.is_finite()),
        "non-finite pts"
    );
    assert!(
        reader.buffered_bytes() <= limits.max_pending_bytes,
        "{} bytes held over a limit of {}",
        reader.buffered_bytes(),
        limits.max_pending_bytes
    );
    // A session hands its PCM on as it goes; draining keeps the fuzzer's memory to one frame's.
    let pcm = reader.drain_samples();
    assert!(pcm.iter().all(|s| s.is_finite()), "non-finite sample");
    total
}

/// Feeds H.264 frames to the OpenH264 pixel decoder (input layout: [`luma`]).
pub fn h264(data: &[u8]) {
    let _ = luma(&Codec::H264, data);
}

/// Feeds Motion JPEG frames to the zune-jpeg pixel decoder (input layout: [`luma`]).
pub fn mjpeg(data: &[u8]) {
    let _ = luma(&Codec::Mjpeg, data);
}

/// Feeds VP8 frames to the pixel decoder for VP8 (input layout: [`luma`]); returns at once
/// while this build has none (see `video::has_pixel_decoder`).
pub fn vp8(data: &[u8]) {
    let _ = luma(&Codec::Vp8, data);
}

/// Feeds VP9 frames to the pixel decoder for VP9 (input layout: [`luma`]); returns at once
/// while this build has none.
pub fn vp9(data: &[u8]) {
    let _ = luma(&Codec::Vp9, data);
}

/// Picture widths the luma targets ask for, picked by bits 1-2 of the flags byte: the
/// analyzer's, the smallest, an odd one (uneven area-averaging cells) and a large one.
const LUMA_WIDTHS: [u32; 4] = [crate::video::DEFAULT_LUMA_WIDTH, 1, 33, 640];

/// Seconds between the frames the luma targets feed.
const LUMA_FRAME_SECONDS: f64 = 0.04;

/// Drives a [`LumaDecoder`] for `codec` as a live reader or [`crate::decode_luma_each`] does,
/// on frames laid out in `data` as:
///
/// - byte 0, flags: bit 0 a codec configuration follows (H.264's `avcC`, frames then
///   length-prefixed), bits 1-2 the target width (`LUMA_WIDTHS`), bit 3 every other frame is
///   marked not presented (as an MP4 edit list hides frames);
/// - with bit 0, a 16-bit big-endian length and that many bytes of configuration;
/// - then frames, each a 16-bit big-endian length and its bytes (the last one cut short by
///   the end of the input is fed as it is).
///
/// [`luma_input`] writes a file's encoded video in this layout (the seed corpora). Checks every
/// picture: within the target width, a plane of `width * height` bytes, stamped with the time
/// of a frame that was fed; no more pictures plus skipped frames than frames. Returns how many
/// pictures came out (the seeds' tests check that the layout reaches the decoder).
pub fn luma(codec: &Codec, data: &[u8]) -> usize {
    let Some((&flags, mut rest)) = data.split_first() else {
        return 0;
    };
    let config = if flags & 1 == 1 {
        let (config, tail) = take_prefixed(rest);
        rest = tail;
        Some(config)
    } else {
        None
    };
    let width = LUMA_WIDTHS[usize::from((flags >> 1) & 3)];
    let hide_odd = flags & 8 != 0;
    let Ok(mut decoder) = LumaDecoder::new(codec, config, width) else {
        return 0;
    };
    let mut fed = 0usize;
    let mut pictures = Vec::new();
    while !rest.is_empty() {
        let (frame, tail) = take_prefixed(rest);
        rest = tail;
        let pts = fed as f64 * LUMA_FRAME_SECONDS;
        let presented = !(hide_odd && fed % 2 == 1);
        let encoded = crate::video::EncodedVideoFrame {
            pts,
            keyframe: false,
            presented,
            data: frame.to_vec(),
        };
        fed += 1;
        pictures.extend(decoder.decode_frame(&encoded));
    }
    pictures.extend(decoder.finish());
    assert!(
        pictures.len() + decoder.skipped() <= fed,
        "{} pictures and {} skipped from {fed} frames",
        pictures.len(),
        decoder.skipped()
    );
    for picture in &pictures {
        assert!(
            picture.width >= 1 && picture.width <= width && picture.height >= 1,
            "a {}x{} picture for a target width of {width}",
            picture.width,
            picture.height
        );
        assert_eq!(
            picture.data.len() as u64,
            u64::from(picture.width) * u64::from(picture.height),
            "plane size"
        );
        let index = picture.pts / LUMA_FRAME_SECONDS;
        assert!(
            picture.pts.is_finite() && index >= 0.0 && index.round() < fed as f64,
            "a picture at {} s, after {fed} frames",
            picture.pts
        );
    }
    pictures.len()
}

/// Splits a 16-bit big-endian length-prefixed chunk off `data`: (the chunk, the rest); a
/// chunk the input cuts short is what remains.
fn take_prefixed(data: &[u8]) -> (&[u8], &[u8]) {
    let (len, body) = match data {
        [hi, lo, body @ ..] => (usize::from(u16::from_be_bytes([*hi, *lo])), body),
        _ => (data.len(), &[][..]),
    };
    body.split_at(len.min(body.len()))
}

/// The encoded video of a media file in the luma targets' layout (see [`luma`]), with the
/// flags byte `flags` (bit 0 is set when the container stores a configuration): the seed
/// corpora of `h264` and `mjpeg` come from the fixtures this way. Frames over 64 KiB are cut
/// (the fuzzers' inputs are shorter anyway); `None` for a file without video.
pub fn luma_input(file: &[u8], flags: u8) -> Option<(Codec, Vec<u8>)> {
    let EncodedVideo {
        codec,
        config,
        frames,
        ..
    } = crate::encoded_video(file).ok()??;
    let mut out = vec![(flags & !1) | u8::from(config.is_some())];
    let mut put = |bytes: &[u8]| {
        let bytes = &bytes[..bytes.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    if let Some(config) = &config {
        put(config);
    }
    for frame in &frames {
        put(&frame.data);
    }
    Some((codec, out))
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
