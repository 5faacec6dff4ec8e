//! What probing finds out about an input (its container, its tracks and its duration), and the
//! frame types the container readers hand out, below both the readers and the video decoders.

use std::fmt;

/// A container format, recognised by content (magic bytes and structure), never by file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Container {
    /// ISO base media file (MPEG-4 Part 14), progressive or fragmented.
    Mp4,
    /// QuickTime movie (`ftyp` brand `qt  `).
    Mov,
    /// MPEG-4 audio file (`ftyp` brand `M4A `).
    M4a,
    /// Matroska (EBML DocType `matroska`).
    Matroska,
    /// WebM (EBML DocType `webm`).
    WebM,
    /// AVI (RIFF form type `AVI `).
    Avi,
    /// MPEG transport stream (188-byte packets).
    MpegTs,
    /// WAVE (RIFF form type `WAVE`).
    Wav,
    /// Native FLAC stream.
    Flac,
    /// MPEG audio elementary stream (Layer III, also Layer II), with or without ID3 tags.
    Mp3,
    /// Ogg (Vorbis, Opus or FLAC inside).
    Ogg,
}

impl Container {
    /// A short lower-case name, as used in logs and error messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Mov => "mov",
            Self::M4a => "m4a",
            Self::Matroska => "mkv",
            Self::WebM => "webm",
            Self::Avi => "avi",
            Self::MpegTs => "mpeg-ts",
            Self::Wav => "wav",
            Self::Flac => "flac",
            Self::Mp3 => "mp3",
            Self::Ogg => "ogg",
        }
    }
}

impl fmt::Display for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a track carries pictures or sound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrackKind {
    /// A video track.
    Video,
    /// An audio track.
    Audio,
}

/// A codec, as named by the container.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// AAC (any profile).
    Aac,
    /// MPEG-1/2 Audio Layer III.
    Mp3,
    /// MPEG-1/2 Audio Layer II.
    Mp2,
    /// FLAC.
    Flac,
    /// Vorbis.
    Vorbis,
    /// Opus.
    Opus,
    /// Uncompressed PCM.
    Pcm(PcmFormat),
    /// Apple Lossless.
    Alac,
    /// H.264 / AVC.
    H264,
    /// H.265 / HEVC.
    H265,
    /// VP8.
    Vp8,
    /// VP9.
    Vp9,
    /// AV1.
    Av1,
    /// Motion JPEG.
    Mjpeg,
    /// MPEG-1 or MPEG-2 video.
    Mpeg2Video,
    /// MPEG-4 Part 2 (Xvid, DivX, `mp4v`).
    Mpeg4Part2,
    /// Anything else; holds the container's tag (FourCC, Matroska CodecID, stream type).
    Other(String),
}

impl Codec {
    /// Whether [`decode_audio`](crate::decode_audio) can decode this codec.
    pub fn is_decodable_audio(&self) -> bool {
        matches!(
            self,
            Self::Aac | Self::Mp3 | Self::Mp2 | Self::Flac | Self::Vorbis | Self::Opus | Self::Alac
        ) || matches!(self, Self::Pcm(p) if p.is_supported())
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Aac => "aac",
            Self::Mp3 => "mp3",
            Self::Mp2 => "mp2",
            Self::Flac => "flac",
            Self::Vorbis => "vorbis",
            Self::Opus => "opus",
            Self::Pcm(p) => return write!(f, "{p}"),
            Self::Alac => "alac",
            Self::H264 => "h264",
            Self::H265 => "hevc",
            Self::Vp8 => "vp8",
            Self::Vp9 => "vp9",
            Self::Av1 => "av1",
            Self::Mjpeg => "mjpeg",
            Self::Mpeg2Video => "mpeg2video",
            Self::Mpeg4Part2 => "mpeg4",
            Self::Other(tag) => return write!(f, "other({tag})"),
        };
        f.write_str(name)
    }
}

/// The sample layout of uncompressed PCM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PcmFormat {
    /// Bits per sample (8, 16, 24, 32 or 64).
    pub bits: u16,
    /// IEEE float samples rather than integers.
    pub float: bool,
    /// Big-endian byte order.
    pub big_endian: bool,
}

impl PcmFormat {
    /// Whether the decoder handles this layout: 8/16/24/32-bit integers and 32/64-bit floats.
    pub fn is_supported(&self) -> bool {
        if self.float {
            matches!(self.bits, 32 | 64)
        } else {
            matches!(self.bits, 8 | 16 | 24 | 32)
        }
    }
}

impl fmt::Display for PcmFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.float {
            'f'
        } else if self.bits == 8 {
            'u'
        } else {
            's'
        };
        let order = if self.bits == 8 {
            ""
        } else if self.big_endian {
            "be"
        } else {
            "le"
        };
        write!(f, "pcm_{kind}{}{order}", self.bits)
    }
}

/// One track of a container.
#[derive(Debug, Clone, PartialEq)]
pub struct Track {
    /// Video or audio.
    pub kind: TrackKind,
    /// The codec the container names for it.
    pub codec: Codec,
    /// Audio: samples per second, when the container states it.
    pub sample_rate: Option<u32>,
    /// Audio: channel count, when the container states it.
    pub channels: Option<u16>,
    /// Video: frames per second (mean over the track, or the nominal rate the container states).
    pub frame_rate: Option<f64>,
    /// Video: width in pixels.
    pub width: Option<u32>,
    /// Video: height in pixels.
    pub height: Option<u32>,
}

impl Track {
    /// An audio track with the given codec and no further details yet.
    pub(crate) fn audio(codec: Codec) -> Self {
        Self {
            kind: TrackKind::Audio,
            codec,
            sample_rate: None,
            channels: None,
            frame_rate: None,
            width: None,
            height: None,
        }
    }

    /// A video track with the given codec and no further details yet.
    pub(crate) fn video(codec: Codec) -> Self {
        Self {
            kind: TrackKind::Video,
            ..Self::audio(codec)
        }
    }
}

/// What [`probe`](crate::probe) found out about an input.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeInfo {
    /// The container, recognised by content.
    pub container: Container,
    /// Every video and audio track, in container order (subtitle and data tracks are left out).
    pub tracks: Vec<Track>,
    /// Duration in seconds, as the container states it (or as its timestamps imply); always
    /// positive and finite.
    pub duration: f64,
}

impl ProbeInfo {
    /// Whether any track is a video track.
    pub fn has_video(&self) -> bool {
        self.tracks.iter().any(|t| t.kind == TrackKind::Video)
    }

    /// Whether any track is an audio track.
    pub fn has_audio(&self) -> bool {
        self.tracks.iter().any(|t| t.kind == TrackKind::Audio)
    }

    /// The first audio track, which is the one [`decode_audio`](crate::decode_audio) decodes.
    pub fn first_audio(&self) -> Option<&Track> {
        self.tracks.iter().find(|t| t.kind == TrackKind::Audio)
    }

    /// The first video track, which is the one [`video_frames`](crate::video_frames) lists.
    pub fn first_video(&self) -> Option<&Track> {
        self.tracks.iter().find(|t| t.kind == TrackKind::Video)
    }
}

/// One encoded frame of the first video track.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VideoFrameInfo {
    /// Presentation time in seconds, on the same clock as the decoded audio (media time).
    pub pts: f64,
    /// Size of the encoded frame in bytes.
    pub size: u32,
    /// Whether the frame is a random-access point (a keyframe).
    pub keyframe: bool,
}

/// Decoded audio: mono `f32` samples in `[-1, 1]`-ish range at [`Pcm::SAMPLE_RATE`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pcm {
    /// The samples; sample 0 is media time 0.
    pub samples: Vec<f32>,
}

impl Pcm {
    /// The sample rate every decode produces.
    pub const SAMPLE_RATE: u32 = 16_000;

    /// Duration in seconds.
    pub fn duration(&self) -> f64 {
        self.samples.len() as f64 / f64::from(Self::SAMPLE_RATE)
    }
}

/// The first video track of an input, frame by frame as stored, in decode order.
///
/// Frames that the container hides (MP4 edit lists cut them off the presentation) are kept with
/// `presented == false`: a decoder still needs them to reach the first shown frame.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedVideo {
    /// The codec the container names for the track.
    pub codec: Codec,
    /// Width in pixels, as the container states it.
    pub width: Option<u32>,
    /// Height in pixels, as the container states it.
    pub height: Option<u32>,
    /// The codec configuration record as the container stores it, when it stores one: for H.264
    /// in MP4/MOV and Matroska the `AVCDecoderConfigurationRecord` (`avcC`, holding SPS and PPS,
    /// with frames then length-prefixed); `None` where the stream carries its own headers
    /// in-band (H.264 Annex B in MPEG-TS and AVI, JPEG).
    pub config: Option<Vec<u8>>,
    /// The frames in decode order.
    pub frames: Vec<EncodedVideoFrame>,
}

/// One encoded frame of an [`EncodedVideo`].
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedVideoFrame {
    /// Presentation time in seconds on the media clock, as [`crate::video_frames`] gives it.
    /// Meaningless for frames that are not presented.
    pub pts: f64,
    /// Whether the container marks the frame as a random-access point.
    pub keyframe: bool,
    /// Whether the frame is shown; `false` for frames an edit list cuts off.
    pub presented: bool,
    /// The frame's bytes as stored; empty when the container points past the end of the input
    /// (a truncated file).
    pub data: Vec<u8>,
}
