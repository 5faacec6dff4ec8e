//! The live reader's vocabulary: input modes, limits, what a frame produced and what went wrong.

use super::LiveProblem;
use crate::info::VideoFrameInfo;

/// A raw PCM sample rate the interface allows for `audio_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PcmRate {
    /// 16 000 Hz.
    Hz16000,
    /// 24 000 Hz.
    Hz24000,
}

impl PcmRate {
    /// The rate for `hz`, if it is one the interface allows.
    pub fn from_hz(hz: u32) -> Option<Self> {
        match hz {
            16_000 => Some(Self::Hz16000),
            24_000 => Some(Self::Hz24000),
            _ => None,
        }
    }

    /// The rate in Hz.
    pub fn hz(self) -> u32 {
        match self {
            Self::Hz16000 => 16_000,
            Self::Hz24000 => 24_000,
        }
    }
}

/// What the binary frames of a session are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LiveMode {
    /// Told apart by content, frame by frame (see the [module docs](crate::live)).
    Auto,
    /// Every frame is one complete file; each is checked (`ih5006` under 3 s) before it is
    /// decoded.
    Segments,
    /// One stream cut anywhere (WebM/Matroska, fragmented MP4, MPEG-TS); no frame is taken for
    /// a segment, and containers that can only be read whole are refused (`ih6007`).
    Continuous,
    /// Raw s16le mono PCM at the given rate, cut at any byte.
    RawPcm(PcmRate),
}

/// Bounds on what one session may make the reader hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveLimits {
    /// The most bytes waiting for an incomplete unit (and the largest element, box or sample
    /// accepted); beyond it the session fails with `ih6010`. Default 64 MiB, twice the
    /// interface's 32 MiB frame limit.
    pub max_pending_bytes: usize,
    /// The hold limit: bytes received since the last header or decodable unit after which the
    /// stream counts as not advancing (`ih6010`). Default 40 MiB: more than one maximal 32 MiB
    /// frame, so a single unreadable frame is reported as `ih6007` first.
    pub hold_bytes: u64,
    /// The most media, in seconds, one session may decode (`ih6004` beyond it). Default 3900 s:
    /// the interface's 60-minute session limit plus 5 minutes of client-side buffering.
    pub max_media_seconds: f64,
}

impl Default for LiveLimits {
    fn default() -> Self {
        Self {
            max_pending_bytes: 64 * 1024 * 1024,
            hold_bytes: 40 * 1024 * 1024,
            max_media_seconds: 3900.0,
        }
    }
}

/// A stretch of session media time, in seconds: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaSpan {
    /// Where the stretch starts.
    pub start: f64,
    /// Where it ends.
    pub end: f64,
}

/// A non-fatal problem and the caller's segment index of the frame it concerns.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentProblem {
    /// The segment index the caller passed with the frame.
    pub segment: u64,
    /// What was wrong.
    pub problem: LiveProblem,
}

/// A fatal condition: the reader stops and the session should close.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiveError {
    /// No header and no decodable unit within the hold limit, or more bytes waiting for an
    /// incomplete unit than the reader holds. `ih6010`.
    #[error("stream not advancing: {bytes} bytes without a header or a decodable unit")]
    NotAdvancing {
        /// The bytes received (or waiting) without progress.
        bytes: u64,
    },
    /// The session's decoded media passed the configured maximum. `ih6004`.
    #[error("the session's media passed its maximum of {maximum:.0} s")]
    MediaTooLong {
        /// The maximum in seconds.
        maximum: f64,
    },
}

impl LiveError {
    /// The interface error code, e.g. `"ih6010"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            Self::NotAdvancing { .. } => "ih6010",
            Self::MediaTooLong { .. } => "ih6004",
        }
    }
}

/// What one frame (or [`LiveReader::finish`](crate::live::LiveReader::finish)) produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkReport {
    /// The segment index the caller passed.
    pub segment: u64,
    /// PCM samples appended to the session buffer (16 kHz mono).
    pub samples_appended: usize,
    /// Video frames that became available, `pts` on the session timeline, in decode order.
    pub video_frames: Vec<VideoFrameInfo>,
    /// Decoded, sampled pictures (only with [`LiveReader::with_pixels`](super::LiveReader::with_pixels)),
    /// `pts` on the session timeline, in presentation order.
    pub pictures: Vec<crate::video::VideoPicture>,
    /// Video frames not decoded because the session's decode budget ran out.
    pub frames_over_budget: usize,
    /// The session media time newly covered: from the media end before this frame to the
    /// media end after it ([`LiveReader::media_end`](crate::live::LiveReader::media_end));
    /// `None` when nothing was added.
    pub span: Option<MediaSpan>,
    /// Non-fatal problems, each with the segment index of the frame concerned.
    pub problems: Vec<SegmentProblem>,
    /// Set when the reader stopped; every later push reports it again and does nothing.
    pub fatal: Option<LiveError>,
}

impl ChunkReport {
    /// Whether any audio or video was appended.
    pub fn appended_media(&self) -> bool {
        self.samples_appended > 0 || !self.video_frames.is_empty()
    }

    pub(super) fn problem(&mut self, segment: u64, problem: LiveProblem) {
        self.problems.push(SegmentProblem { segment, problem });
    }
}
