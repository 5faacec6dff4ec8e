//! Encoded video as a container stores it: the bytes of every frame with its timing, for the
//! pixel decoders.

use crate::info::Codec;

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
