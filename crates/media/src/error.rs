//! The error type of the media layer and the interface code each failure maps to.

use crate::info::Container;

/// Why an input could not be used, grouped by what the caller should do about it.
///
/// The media layer sits below `attune-core`, so it cannot name the catalog's `ErrorCode`: core maps
/// each variant by type (`impl From<&MediaError> for ErrorCode`, an exhaustive match, so a new
/// variant does not compile until it is mapped). [`MediaError::code_str`] names the same code for
/// this crate's own tests and logs; a core test holds the two equal. Not `#[non_exhaustive]` for
/// that reason: the workspace's crates move together.
///
/// - **Reject the file as unusable** (HTTP 422): [`Empty`](Self::Empty),
///   [`VideoUnitTooLarge`](Self::VideoUnitTooLarge),
///   [`UndeterminableDuration`](Self::UndeterminableDuration), [`Unreadable`](Self::Unreadable),
///   [`NegativeDuration`](Self::NegativeDuration), [`UnsupportedCodec`](Self::UnsupportedCodec),
///   [`NoVideoStream`](Self::NoVideoStream), [`NoAudioStream`](Self::NoAudioStream).
/// - **Reject the request as not allowed for the model** (HTTP 400): the file is fine media, but
///   the model's rules refuse it: [`ContainerNotAllowed`](Self::ContainerNotAllowed),
///   [`TooShort`](Self::TooShort), [`TooLong`](Self::TooLong); or it is a recognised file type
///   that no model takes: [`UnsupportedFormat`](Self::UnsupportedFormat).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MediaError {
    /// The input has no bytes at all. Maps to `ih5001`.
    #[error("the file is empty")]
    Empty,
    /// The container was read but its duration is zero or cannot be determined (no samples, no
    /// duration field). Maps to `ih5001`.
    #[error("the media duration is zero or cannot be determined")]
    UndeterminableDuration,
    /// The bytes are not a container this layer recognises, or its structure is broken (truncated,
    /// inconsistent sizes, missing mandatory parts). Maps to `ih5002`.
    #[error("unreadable container: {reason}")]
    Unreadable {
        /// The container it was read as, when the content was recognised at all.
        container: Option<Container>,
        /// What was wrong, for logs; not part of the public error message contract.
        reason: String,
    },
    /// The container states a negative duration (for example an end before its start). Maps to
    /// `ih5002`.
    #[error("the media duration is negative")]
    NegativeDuration,
    /// A track needed for the analysis uses a codec this layer cannot decode. Maps to `ih5003`.
    #[error("unsupported codec: {codec}")]
    UnsupportedCodec {
        /// The codec's name or the container's tag for it.
        codec: String,
    },
    /// The model needs a video track and the media has none. Maps to `ih5001`.
    #[error("the media has no video stream")]
    NoVideoStream,
    /// The media has no audio track. Maps to `ih5008`.
    #[error("the media has no audio stream")]
    NoAudioStream,
    /// One encoded video unit (an MP4 sample, a Matroska block, an AVI chunk, a TS access unit)
    /// is larger than [`MAX_VIDEO_UNIT_BYTES`](crate::MAX_VIDEO_UNIT_BYTES), the interface's
    /// 32 MB segment cap. Maps to `ih5005`.
    #[error("a video frame of {size} bytes is larger than the limit of {limit} bytes")]
    VideoUnitTooLarge {
        /// The unit's size as the container declares it.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The container is valid media but not one the model accepts. Maps to `ih4002`.
    #[error("container {container} is not accepted for this model")]
    ContainerNotAllowed {
        /// The container that was found.
        container: Container,
    },
    /// The content is recognised as a file type this layer does not read at all (ASF/WMV, MPEG
    /// program stream, an image, a PDF): the wrong kind of file rather than a broken one. Maps
    /// to `ih4002`.
    #[error("the file is {format}, a type this service does not analyze")]
    UnsupportedFormat {
        /// What the content was recognised as, e.g. `"ASF (WMV/WMA)"`.
        format: &'static str,
    },
    /// The media is shorter than the model's minimum. Maps to `ih4007`.
    #[error("the media lasts {duration:.3} s, under the minimum of {minimum:.3} s")]
    TooShort {
        /// The media's duration in seconds.
        duration: f64,
        /// The minimum in seconds.
        minimum: f64,
    },
    /// The media is longer than the configured maximum. Maps to `ih4004`.
    #[error("the media lasts {duration:.3} s, over the maximum of {maximum:.3} s")]
    TooLong {
        /// The media's duration in seconds.
        duration: f64,
        /// The maximum in seconds.
        maximum: f64,
    },
}

impl MediaError {
    /// The interface error code this failure maps to, e.g. `"ih5002"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            Self::Empty | Self::UndeterminableDuration | Self::NoVideoStream => "ih5001",
            Self::Unreadable { .. } | Self::NegativeDuration => "ih5002",
            Self::UnsupportedCodec { .. } => "ih5003",
            Self::NoAudioStream => "ih5008",
            Self::VideoUnitTooLarge { .. } => "ih5005",
            Self::ContainerNotAllowed { .. } | Self::UnsupportedFormat { .. } => "ih4002",
            Self::TooShort { .. } => "ih4007",
            Self::TooLong { .. } => "ih4004",
        }
    }

    /// Shorthand for [`MediaError::Unreadable`] while reading `container`.
    pub(crate) fn unreadable(container: Option<Container>, reason: impl Into<String>) -> Self {
        Self::Unreadable {
            container,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`MediaError::UnsupportedCodec`].
    pub(crate) fn unsupported(codec: impl Into<String>) -> Self {
        Self::UnsupportedCodec {
            codec: codec.into(),
        }
    }
}
