//! What an incremental demuxer hands its caller: the events of one container read as its bytes
//! arrive, the same for a whole file (fed at once, then finished) and a live stream.

use symphonia::core::packet::Packet;

use crate::audio::AudioSetup;
use crate::error::MediaError;
use crate::info::{Container, VideoFrameInfo};

/// A non-fatal problem with part of the input; the session goes on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LiveProblem {
    /// The bytes are not readable media (not a container, or broken structure). `ih6007`.
    #[error("unreadable segment: {reason}")]
    Unreadable {
        /// What was wrong, for logs.
        reason: String,
    },
    /// Media data arrived without the container header it needs (a fragment before any init
    /// segment, clusters before any Tracks). `ih5004`.
    #[error("malformed segment: {reason}")]
    MissingHeader {
        /// What was missing, for logs.
        reason: String,
    },
    /// A self-contained segment shorter than the 3 s minimum. `ih5006`.
    #[error("the segment lasts {duration:.3} s, under the minimum of 3 s")]
    TooShort {
        /// Its duration in seconds.
        duration: f64,
    },
    /// The stream has audio but no video and the model needs video; reported once per
    /// session. `ih5001`.
    #[error("the stream has audio but no video")]
    NoVideo,
    /// The stream has no audio track; reported once per session. `ih5008`.
    #[error("the stream has no audio")]
    NoAudio,
    /// The audio codec cannot be decoded. `ih5003`.
    #[error("unsupported codec: {codec}")]
    Unsupported {
        /// The codec's name.
        codec: String,
    },
}

impl LiveProblem {
    /// The interface error code, e.g. `"ih6007"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "ih6007",
            Self::MissingHeader { .. } => "ih5004",
            Self::TooShort { .. } => "ih5006",
            Self::NoVideo => "ih5001",
            Self::NoAudio => "ih5008",
            Self::Unsupported { .. } => "ih5003",
        }
    }

    /// The live problem a file-path error amounts to.
    pub(crate) fn from_media(e: &MediaError) -> Self {
        match e {
            MediaError::UnsupportedCodec { codec } => Self::Unsupported {
                codec: codec.clone(),
            },
            MediaError::NoAudioStream => Self::NoAudio,
            other => Self::Unreadable {
                reason: other.to_string(),
            },
        }
    }
}

/// What a demuxer hands its caller.
pub(crate) enum Event {
    /// A file's header was read: its tracks are known.
    Header {
        container: Container,
        has_video: bool,
        has_audio: bool,
    },
    /// How the file's first audio track decodes; comes before its first packet.
    AudioSetup(AudioSetup),
    /// One packet of the first audio track.
    Audio(Packet),
    /// One frame of the first video track, `pts` on the file's clock, with its bytes when the
    /// demuxer was asked to keep them (a whole file read for its pixels).
    Video(VideoFrameInfo, Option<Vec<u8>>),
    /// Something was wrong; the demuxer carries on.
    Problem(LiveProblem),
    /// A new file starts within the stream; the events after it are the new file's.
    NewFile,
}

/// An incremental container reader. `Send`, so that a session can move between threads.
pub(crate) trait Demuxer: Send {
    /// Reads `data`, appending what it found to `out`.
    fn feed(&mut self, data: &[u8], out: &mut Vec<Event>);
    /// The input has ended: hands out what was held back for more data.
    fn finish(&mut self, out: &mut Vec<Event>);
    /// Bytes held waiting for the rest of a unit.
    fn pending_bytes(&self) -> usize;
}
