//! Container readers, one module per container, behind one trait, and content sniffing.

pub(crate) mod avi;
pub(crate) mod es;
pub(crate) mod mkv;
pub(crate) mod mp4;
pub(crate) mod plain;
pub(crate) mod ts;

use crate::audio::AudioTrack;
use crate::error::MediaError;
use crate::info::{Container, EncodedVideo, Track, VideoFrameInfo};

/// A parsed container: what it holds and how to get at its audio and video.
///
/// Required methods are few (Symphonia's `FormatReader` shape); containers without video keep the
/// default [`video_frames`](Self::video_frames).
pub(crate) trait ContainerReader<'a> {
    /// The container, recognised by content.
    fn container(&self) -> Container;

    /// Video and audio tracks in container order.
    fn tracks(&self) -> Vec<Track>;

    /// Duration in seconds as the container states it (or its timestamps imply), `None` when it
    /// cannot be determined. May be zero or negative; [`probe`](crate::probe) rejects both.
    fn duration(&self) -> Option<f64>;

    /// Frames of the first video track in presentation order, on the media clock. Containers
    /// without video return an empty list.
    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        Ok(Vec::new())
    }

    /// The first video track's frames with their bytes, in decode order, for the pixel
    /// decoders; `None` without video. The presented frames are those of
    /// [`video_frames`](Self::video_frames), with the same times.
    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        Ok(None)
    }

    /// The first audio track, ready to decode.
    ///
    /// Errors: [`MediaError::NoAudioStream`] without audio, [`MediaError::UnsupportedCodec`]
    /// when its codec cannot be decoded.
    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError>;
}

/// Recognises the container of `bytes` by content and parses its structure.
pub(crate) fn open(bytes: &[u8]) -> Result<Box<dyn ContainerReader<'_> + '_>, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    match sniff(bytes) {
        Some(Sniffed::IsoMedia) => Ok(Box::new(mp4::Mp4Reader::open(bytes)?)),
        Some(Sniffed::Ebml) => Ok(Box::new(mkv::MkvReader::open(bytes)?)),
        Some(Sniffed::Avi) => Ok(Box::new(avi::AviReader::open(bytes)?)),
        Some(Sniffed::MpegTs {
            packet_size,
            offset,
        }) => Ok(Box::new(ts::TsReader::open(bytes, packet_size, offset)?)),
        Some(Sniffed::Plain(container)) => {
            Ok(Box::new(plain::PlainReader::open(bytes, container)?))
        }
        None => Err(match unsupported_format(bytes) {
            Some(format) => MediaError::UnsupportedFormat { format },
            None => MediaError::unreadable(None, "not a recognised media container"),
        }),
    }
}

/// Recognises, by their signatures, file types that are not a supported container: a client
/// that sent one chose the wrong file (`ih4002`), unlike one whose supported container is
/// broken or whose bytes are no known format at all (`ih5002`). Only consulted when [`sniff`]
/// found no supported container, so a signature here never hides one.
pub(crate) fn unsupported_format(b: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| b.get(off..off + magic.len()) == Some(magic);
    const ASF_HEADER_GUID: [u8; 16] = [
        0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11, 0xa6, 0xd9, 0x00, 0xaa, 0x00, 0x62, 0xce,
        0x6c,
    ];
    let formats: &[(usize, &[u8], &'static str)] = &[
        (0, &ASF_HEADER_GUID, "ASF (WMV/WMA)"),
        // A pack header: MPEG-1/2 program stream (.mpg, .vob).
        (0, &[0x00, 0x00, 0x01, 0xba], "an MPEG program stream"),
        // A sequence header: a bare MPEG-1/2 video elementary stream.
        (
            0,
            &[0x00, 0x00, 0x01, 0xb3],
            "an MPEG video elementary stream",
        ),
        (0, b"FLV\x01", "Flash video (FLV)"),
        (0, b".RMF", "RealMedia"),
        (0, b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (0, &[0xff, 0xd8, 0xff], "a JPEG image"),
        (0, b"GIF87a", "a GIF image"),
        (0, b"GIF89a", "a GIF image"),
        (0, b"II*\x00", "a TIFF image"),
        (0, b"MM\x00*", "a TIFF image"),
        (0, b"%PDF-", "a PDF document"),
        (0, b"PK\x03\x04", "a ZIP archive"),
        (0, b"\x7fELF", "an executable"),
    ];
    if at(0, b"RIFF") && at(8, b"WEBP") {
        return Some("a WebP image");
    }
    // Two letters alone are too common a start; the BMP header's reserved word must be zero.
    if at(0, b"BM") && at(6, &[0, 0, 0, 0]) && b.len() >= 26 {
        return Some("a BMP image");
    }
    formats
        .iter()
        .find(|(offset, magic, _)| at(*offset, magic))
        .map(|(_, _, format)| *format)
}

/// What the first bytes say the input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    /// ISO base media (MP4, MOV, M4A); the brand is read while parsing.
    IsoMedia,
    /// EBML (Matroska or WebM); the DocType is read while parsing.
    Ebml,
    /// RIFF AVI.
    Avi,
    /// MPEG transport stream with this packet size (188, or 192 for M2TS), first sync at offset.
    MpegTs { packet_size: usize, offset: usize },
    /// A single-stream audio container Symphonia reads.
    Plain(Container),
}

/// Sniffs the container from magic bytes and structure; never from a file name.
fn sniff(b: &[u8]) -> Option<Sniffed> {
    let at = |off: usize, magic: &[u8]| b.get(off..off + magic.len()) == Some(magic);
    if at(4, b"ftyp") || at(4, b"moov") || at(4, b"styp") || at(4, b"moof") {
        return Some(Sniffed::IsoMedia);
    }
    if (at(4, b"free") || at(4, b"skip") || at(4, b"wide") || at(4, b"mdat"))
        && mp4_like_top_level(b)
    {
        return Some(Sniffed::IsoMedia);
    }
    if at(0, &[0x1a, 0x45, 0xdf, 0xa3]) {
        return Some(Sniffed::Ebml);
    }
    if at(0, b"RIFF") && at(8, b"AVI ") {
        return Some(Sniffed::Avi);
    }
    if (at(0, b"RIFF") || at(0, b"RF64")) && at(8, b"WAVE") {
        return Some(Sniffed::Plain(Container::Wav));
    }
    if at(0, b"fLaC") {
        return Some(Sniffed::Plain(Container::Flac));
    }
    if at(0, b"OggS") {
        return Some(Sniffed::Plain(Container::Ogg));
    }
    if let Some((packet_size, offset)) = ts::sniff(b) {
        return Some(Sniffed::MpegTs {
            packet_size,
            offset,
        });
    }
    if plain::looks_like_mpeg_audio(b) {
        return Some(Sniffed::Plain(Container::Mp3));
    }
    None
}

/// Whether the input starts with a run of well-formed ISO boxes of known top-level types, for
/// files that do not open with `ftyp` (old QuickTime).
fn mp4_like_top_level(b: &[u8]) -> bool {
    let mut off = 0usize;
    let mut seen = 0;
    while off + 8 <= b.len() && seen < 4 {
        let size = u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]) as usize;
        let kind = &b[off + 4..off + 8];
        let known = matches!(
            kind,
            b"free" | b"skip" | b"wide" | b"mdat" | b"moov" | b"ftyp" | b"pnot"
        );
        if !known || size < 8 {
            return false;
        }
        if kind == b"moov" {
            return true;
        }
        seen += 1;
        off = off.saturating_add(size);
    }
    off >= b.len() && seen > 0
}
