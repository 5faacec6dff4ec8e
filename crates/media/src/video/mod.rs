//! Decoded video: downscaled luma (Y) frames for the motion measures and, on request, RGB8
//! pictures for models that need colour, from whole files ([`decode_luma`],
//! [`decode_luma_each`], [`decode_pictures_each`]) or one encoded frame at a time
//! ([`LumaDecoder`]).
//!
//! Which codecs give pixels (only decoders that build with `cargo build` alone, from crates.io,
//! with no system library, are used):
//!
//! | codec | pixels | decoder |
//! |---|---|---|
//! | H.264 / AVC | yes | OpenH264, built from the source bundled in the `openh264` crate (C++, compiled with `cc`; assembly only when `nasm` is installed) |
//! | VP9 | yes | `rusty_vp9` (pure Rust; 8-bit profiles 0 and 1 give pixels) |
//! | VP8 | yes | `oximedia-codec`'s RFC 6386 decoder (pure Rust; only its `vp8` feature) |
//! | Motion JPEG | yes | `zune-jpeg` (pure Rust), decoding straight to luma, or to RGB when colour is asked for |
//! | MPEG-4 Part 2, MPEG-1/2 video, H.265, AV1 | no | none: [`PixelSupport::NoPixelDecoder`] |
//!
//! With the `ffmpeg` cargo feature, H.264, VP8 and VP9 are decoded by the system's FFmpeg
//! (libavcodec, one thread per decoder) instead: ffmpeg's own speed, where the bundled decoders
//! take 1.7-11x its time per frame (BENCHMARKS.md, issue 26). The bundled decoders stay the
//! fallback, at build time (the feature is off by default, so `cargo build` needs no system
//! library) and at run time (a libavcodec without the codec).
//!
//! AV1 has no decoder here: the pure-Rust port of dav1d (`rav1d`) is a large build for a codec
//! browsers' `MediaRecorder` does not pick by default, and `dav1d` bindings need the system
//! library (or meson and nasm to build it).
//!
//! Streams without a pixel decoder are not an error: their frame timing, encoded sizes and
//! keyframe flags still come from [`crate::video_frames`], which is what motion measures fall
//! back on.
//!
//! Frames are downscaled as they come out of the decoder to at most `target_width` pixels across
//! (aspect ratio kept, never upscaled) by area averaging ([`DEFAULT_LUMA_WIDTH`] is what the
//! analyzer uses); RGB pictures likewise at their own width ([`LumaDecoder::with_rgb`],
//! BT.601 conversion). Each [`LumaFrame`] carries the presentation time of the encoded frame it
//! came from, on the same media clock as [`crate::video_frames`] and the decoded audio.
//!
//! Decoding only what the analysis samples: with [`LumaDecoder::with_sample_rate`] every frame
//! is still decoded (inter frames need their references; a Motion JPEG frame is skipped
//! outright) but only the first picture at or after each `1/fps` tick is converted and scaled;
//! the rest are counted ([`LumaSummary::unsampled`]). Streams take a decode budget
//! ([`LumaDecoder::with_pixel_budget`]): picture pixels per second of media, a token bucket
//! holding one second; a frame over it is not decoded, nor anything after it up to the next key
//! frame, and each is counted ([`LumaDecoder::over_budget`]).
//!
//! Untrusted input: a frame that does not decode (corrupt bytes, a reference frame missing
//! after one that did not decode, data cut off by truncation) is skipped and counted, never a
//! panic (panics inside the decoder wrappers are caught); picture sizes are bounded (OpenH264
//! refuses an SPS above level 5.2's frame size, VP8 and VP9 headers above the same 4096x2304
//! pixels are refused before decoding, JPEG frames above 4096 px a side are refused);
//! [`decode_luma`] keeps at most [`MAX_LUMA_BYTES`] of planes, and [`decode_luma_each`] and
//! [`LumaDecoder`] keep none.

mod decoder;
#[cfg(feature = "ffmpeg")]
mod ffmpeg;
mod h264;
mod mjpeg;
mod scale;
mod vpx;
mod yuv;

use std::fmt;
use std::ops::ControlFlow;

pub use crate::info::{EncodedVideo, EncodedVideoFrame};
pub use decoder::LumaDecoder;

use crate::error::MediaError;
use crate::info::Codec;

/// The width the analyzer downscales luma frames to, in pixels.
pub const DEFAULT_LUMA_WIDTH: u32 = 160;

/// The most luma bytes [`decode_luma`] keeps (256 MiB: about 5 hours of 160x90 frames at
/// 10 fps, or 10 minutes at 30 fps).
pub const MAX_LUMA_BYTES: usize = 256 << 20;

/// Whether this build decodes `codec` to pixels (H.264, VP8, VP9 and Motion JPEG).
pub fn has_pixel_decoder(codec: &Codec) -> bool {
    matches!(codec, Codec::H264 | Codec::Vp8 | Codec::Vp9 | Codec::Mjpeg)
}

/// The first video track of `bytes` frame by frame with each frame's bytes, in decode order,
/// with the codec configuration the container stores (`avcC` for H.264 in MP4/Matroska); `None`
/// when the input has no video. The presented frames and their times are those of
/// [`crate::video_frames`].
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn encoded_video(bytes: &[u8]) -> Result<Option<EncodedVideo>, MediaError> {
    crate::MediaFile::open(bytes)?.encoded_video()
}

/// One decoded frame: a downscaled luma plane.
#[derive(Debug, Clone, PartialEq)]
pub struct LumaFrame {
    /// Presentation time in seconds on the media clock, as [`crate::video_frames`] gives it.
    pub pts: f64,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height` luma values as the codec stores them (studio range, 16-235, for most
    /// video; full range for JPEG), row by row, top row first.
    pub data: Vec<u8>,
}

/// Whether an input's video could be decoded to pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PixelSupport {
    /// The codec has a decoder here; the frames carry luma planes.
    Decoded,
    /// The video track's codec has no pixel decoder in this build (VP8, VP9, MPEG-4 Part 2,
    /// MPEG-2, ...). Not an error: timing and encoded sizes come from [`crate::video_frames`].
    NoPixelDecoder(Codec),
    /// The input has no video track.
    NoVideo,
}

/// What a whole-file luma decode did, without the frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LumaSummary {
    /// Whether pixels were available at all.
    pub pixels: PixelSupport,
    /// Presented frames decoded.
    pub decoded: usize,
    /// Frames that did not decode (corrupt, missing their reference, or cut off) and were
    /// skipped.
    pub skipped: usize,
    /// Presented frames passed over by the sampling rate ([`PictureOptions::sample_fps`]):
    /// decoded when later frames may need them, not decoded at all when nothing does (H.264
    /// non-reference pictures).
    pub unsampled: usize,
}

/// What a whole-file decode gives for each picture ([`decode_pictures_each`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PictureOptions {
    /// Luma at most this many pixels across.
    pub luma_width: u32,
    /// RGB at most this many pixels across; `None`: luma only.
    pub rgb_width: Option<u32>,
    /// Pictures converted per second of media; `None`: every frame
    /// ([`LumaDecoder::with_sample_rate`]).
    pub sample_fps: Option<f64>,
}

/// The luma frames of a whole input, from [`decode_luma`].
#[derive(Debug, Clone, PartialEq)]
pub struct LumaVideo {
    /// Whether pixels were available at all; without them `frames` is empty.
    pub pixels: PixelSupport,
    /// The decoded frames in presentation order.
    pub frames: Vec<LumaFrame>,
    /// Frames that did not decode and were skipped.
    pub skipped: usize,
    /// Whether decoding stopped at [`MAX_LUMA_BYTES`] before the end of the video.
    pub truncated: bool,
}

/// Decodes the first video track of `bytes` to luma frames at most `target_width` pixels
/// across, keeping them all (up to [`MAX_LUMA_BYTES`]; past it decoding stops and
/// [`LumaVideo::truncated`] is set). For long media prefer [`decode_luma_each`], which keeps
/// none.
///
/// A codec without a pixel decoder, or an input without video, is not an error: the result says
/// so in [`LumaVideo::pixels`] and holds no frames.
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn decode_luma(bytes: &[u8], target_width: u32) -> Result<LumaVideo, MediaError> {
    let mut frames = Vec::new();
    let mut kept = 0usize;
    let mut truncated = false;
    let summary = run(bytes, luma_only(target_width), |picture| {
        let frame = picture.luma;
        kept += frame.data.len();
        if kept > MAX_LUMA_BYTES {
            truncated = true;
            return ControlFlow::Break(());
        }
        frames.push(frame);
        ControlFlow::Continue(())
    })?;
    frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
    Ok(LumaVideo {
        pixels: summary.pixels,
        frames,
        skipped: summary.skipped,
        truncated,
    })
}

/// Decodes the first video track of `bytes` like [`decode_luma`], handing each frame to
/// `on_frame` as it comes out of the decoder (in presentation order) instead of keeping it.
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn decode_luma_each(
    bytes: &[u8],
    target_width: u32,
    mut on_frame: impl FnMut(LumaFrame),
) -> Result<LumaSummary, MediaError> {
    run(bytes, luma_only(target_width), |picture| {
        on_frame(picture.luma);
        ControlFlow::Continue(())
    })
}

fn luma_only(luma_width: u32) -> PictureOptions {
    PictureOptions {
        luma_width,
        rgb_width: None,
        sample_fps: None,
    }
}

/// Decodes the first video track of `bytes` as `options` say, handing each sampled picture
/// (luma, and RGB when asked for) to `on_picture` in presentation order. Every frame is
/// decoded; only the sampled ones are converted.
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn decode_pictures_each(
    bytes: &[u8],
    options: PictureOptions,
    mut on_picture: impl FnMut(VideoPicture),
) -> Result<LumaSummary, MediaError> {
    run(bytes, options, |picture| {
        on_picture(picture);
        ControlFlow::Continue(())
    })
}

fn run(
    bytes: &[u8],
    options: PictureOptions,
    on_picture: impl FnMut(VideoPicture) -> ControlFlow<()>,
) -> Result<LumaSummary, MediaError> {
    decode_video(encoded_video(bytes)?, options, None, on_picture)
}

/// Decodes `video` (the first video track of an input, `None` without one) as `options` say,
/// handing each sampled picture to `on_picture` until it breaks.
pub(crate) fn decode_video(
    video: Option<EncodedVideo>,
    options: PictureOptions,
    rgb_filter: Option<RgbFilter>,
    mut on_picture: impl FnMut(VideoPicture) -> ControlFlow<()>,
) -> Result<LumaSummary, MediaError> {
    let Some(video) = video else {
        return Ok(LumaSummary {
            pixels: PixelSupport::NoVideo,
            decoded: 0,
            skipped: 0,
            unsampled: 0,
        });
    };
    let mut decoder =
        match LumaDecoder::new(&video.codec, video.config.as_deref(), options.luma_width) {
            Ok(d) => d,
            Err(e) => {
                return Ok(LumaSummary {
                    pixels: PixelSupport::NoPixelDecoder(e.codec),
                    decoded: 0,
                    skipped: 0,
                    unsampled: 0,
                })
            }
        };
    if let Some(width) = options.rgb_width {
        decoder = decoder.with_rgb(width);
    }
    if let Some(fps) = options.sample_fps {
        decoder = decoder.with_sample_rate(fps);
    }
    if let Some(filter) = rgb_filter {
        decoder = decoder.with_rgb_filter(filter);
    }
    let mut decoded = 0usize;
    let mut stopped = false;
    for frame in &video.frames {
        if let Some(picture) = decoder.decode_picture(frame) {
            decoded += 1;
            if on_picture(picture).is_break() {
                stopped = true;
                break;
            }
        }
    }
    if !stopped {
        for picture in decoder.finish_pictures() {
            decoded += 1;
            if on_picture(picture).is_break() {
                break;
            }
        }
    }
    Ok(LumaSummary {
        pixels: PixelSupport::Decoded,
        decoded,
        skipped: decoder.skipped(),
        unsampled: decoder.unsampled(),
    })
}

/// Why [`LumaDecoder::new`] has no decoder for a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoPixelDecoder {
    /// The stream's codec.
    pub codec: Codec,
    /// Why, for logs.
    pub reason: String,
}

impl fmt::Display for NoPixelDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no pixel decoder for {}: {}", self.codec, self.reason)
    }
}

impl std::error::Error for NoPixelDecoder {}

/// What a decoder backend did with one frame.
pub(crate) enum Pic {
    /// No picture came out (held for reordering, or a hidden frame).
    Held,
    /// A picture of this many pixels came out; converted when it was wanted.
    Out(usize, Option<yuv::Converted>),
}

/// An RGB8 picture, for models that need colour (faces).
#[derive(Debug, Clone, PartialEq)]
pub struct RgbFrame {
    /// Presentation time in seconds on the media clock.
    pub pts: f64,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 3` bytes, R, G, B per pixel (BT.601 conversion from the codec's YCbCr),
    /// row by row, top row first.
    pub data: Vec<u8>,
}

/// Which sampled pictures' RGB is made, asked with each one's luma
/// ([`LumaDecoder::with_rgb_filter`]): `true` makes it.
pub type RgbFilter = Box<dyn FnMut(&LumaFrame) -> bool + Send>;

/// One decoded, sampled picture: its luma and, when asked for
/// ([`LumaDecoder::with_rgb`]), its colour.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoPicture {
    /// The downscaled luma plane.
    pub luma: LumaFrame,
    /// The RGB picture, when requested (and, with an [`RgbFilter`], when it was let through).
    pub rgb: Option<RgbFrame>,
}
