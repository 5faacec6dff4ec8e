//! Attune's media layer: uploaded files into mono 16 kHz PCM and per-frame video data.
//!
//! Every input is untrusted. Containers are recognised by content only ([`probe`]); every size
//! read from a file is checked against the bytes actually present before anything is allocated
//! or indexed; every loop advances by at least one byte or entry per turn; decoded audio is
//! capped in length; and the third-party decoders are wrapped so that a panic in one becomes
//! [`MediaError::Unreadable`].
//!
//! ```
//! use attune_media::{decode_audio, probe, video_frames, Container, Pcm};
//!
//! // A bundled five-second MP4 with H.264 video and AAC audio.
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/mp4_h264_aac.mp4");
//! let bytes = std::fs::read(path)?;
//! let info = probe(&bytes)?;
//! assert_eq!(info.container, Container::Mp4);
//! assert!(info.has_audio() && info.has_video());
//! // The audio as mono 16 kHz PCM, the video as a list of frames.
//! let pcm = decode_audio(&bytes)?;
//! assert_eq!(Pcm::SAMPLE_RATE, 16_000);
//! assert!((pcm.duration() - info.duration).abs() < 0.1);
//! let frames = video_frames(&bytes)?;
//! assert!(frames.iter().any(|frame| frame.keyframe));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | container | structure, probe, video frames | audio packets | audio decoder |
//! |---|---|---|---|
//! | MP4 / MOV / M4A, progressive and fragmented | own incremental box parser (`stts`/`ctts`/`stss`/`stsz`, `moof`/`trun`, `elst`) | own (codec parameters from Symphonia's `IsoMp4Reader` on `ftyp` + `moov`) | Symphonia, opus-pure |
//! | Matroska / WebM | own EBML parser (`SimpleBlock`, `BlockGroup`, lacing) | own | Symphonia, opus-pure |
//! | AVI | own RIFF parser (`idx1` keyframe flags) | own (PCM, MP3, MP2) | Symphonia |
//! | MPEG-TS | own PAT/PMT/PES parser (picture-type keyframes) | own (ADTS AAC, MP2/MP3) | Symphonia |
//! | WAV, FLAC, MP3, Ogg | Symphonia readers (no video) | Symphonia readers | Symphonia, opus-pure |
//!
//! MP4, Matroska/WebM and MPEG-TS each have one incremental demuxer, used by the file path (fed
//! the whole input at once) and by [`live::LiveReader`] (fed frames as they arrive) alike.
//!
//! Audio codecs: AAC-LC, MP3, MP2, FLAC, Vorbis, ALAC and PCM (8/16/24/32-bit integer, 32/64-bit
//! float) through Symphonia 0.6; Opus through `opus-pure`, which decodes like libopus. Video is
//! listed frame by frame ([`video_frames`]) for every container; H.264 (openh264, built from its
//! bundled source), VP8 (oximedia-codec), VP9 (rusty_vp9) and MJPEG (zune-jpeg) are also decoded
//! to downscaled luma planes and, on request, RGB8 pictures ([`video::decode_luma`],
//! [`video::decode_pictures_each`]); MPEG-4 part 2 and MPEG-2 give frame timing and sizes only.
//!
//! Timing: sample 0 of [`decode_audio`] and `pts` 0 of [`video_frames`] are both media time 0,
//! the container's presentation origin (MP4 edit lists applied; for MPEG-TS the earliest PTS of
//! any stream). Audio that starts later than that is preceded by silence.
#![deny(missing_docs)]

mod audio;
mod bytes;
mod demux;
mod error;
mod formats;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod info;
pub mod live;
mod queue;
mod requirements;
pub mod video;

pub use audio::MAX_DECODE_SECONDS;
pub use error::MediaError;
pub use info::{Codec, Container, Pcm, PcmFormat, ProbeInfo, Track, TrackKind, VideoFrameInfo};
pub use requirements::{check, MediaRequirements};
pub use video::{
    decode_luma, decode_luma_each, decode_pictures_each, encoded_video, LumaDecoder, LumaFrame,
    LumaVideo, PictureOptions, RgbFilter, RgbFrame, VideoPicture,
};

/// The largest encoded video unit (one sample, block or access unit) accepted in an upload or a
/// stream: the interface's 32 MB segment cap (`ih5005` beyond). Real frames are far smaller (a
/// 4K keyframe is a few MB); a larger one is a damaged or hostile file.
pub const MAX_VIDEO_UNIT_BYTES: u64 = 32 * 1024 * 1024;

/// The first video unit over [`MAX_VIDEO_UNIT_BYTES`], as its error.
pub(crate) fn oversized_video_unit(frames: &[VideoFrameInfo]) -> Option<MediaError> {
    frames
        .iter()
        .map(|frame| u64::from(frame.size))
        .find(|&size| size > MAX_VIDEO_UNIT_BYTES)
        .map(|size| MediaError::VideoUnitTooLarge {
            size,
            limit: MAX_VIDEO_UNIT_BYTES,
        })
}

/// Recognises the container of `bytes` by content and reads its tracks and duration.
///
/// Errors: [`MediaError::Empty`] for no bytes; [`MediaError::UnsupportedFormat`] for content
/// recognised as a file type that is not a supported container (an image, ASF, ...);
/// [`MediaError::Unreadable`] for content that is not a recognised container or whose structure
/// is broken; [`MediaError::UndeterminableDuration`] when the duration is zero or unknown;
/// [`MediaError::NegativeDuration`]; [`MediaError::VideoUnitTooLarge`] when the container
/// declares a video frame over [`MAX_VIDEO_UNIT_BYTES`]. Model rules (container allowed, tracks
/// present, duration bounds) are [`check`]'s job.
pub fn probe(bytes: &[u8]) -> Result<ProbeInfo, MediaError> {
    MediaFile::open(bytes)?.info()
}

/// Decodes the first audio track of `bytes` to mono `f32` at 16 kHz, sample 0 at media time 0.
///
/// The container's own start corrections are applied: MP4 edit lists (which skip the AAC encoder
/// priming and the Opus pre-skip), Opus pre-skip in Ogg and Matroska, MP3 LAME gapless info, and
/// end trims (Ogg granule positions, Matroska `DiscardPadding`), as ffmpeg applies them.
///
/// Channels are downmixed to their plain mean (`(L + R) / 2`). Resampling to 16 kHz is
/// band-limited: rubato's synchronous FFT resampler (BlackmanHarris2 anti-aliasing window, chunks
/// of about 1024 input frames in sub-chunks of at least 256) for rates whose ratio to 16 kHz is
/// simple, rubato's asynchronous sinc resampler (256 taps, BlackmanHarris2, cubic interpolation,
/// 128x oversampling) for odd rates; the resampler delay is removed, leaving the output within
/// 0.6 of a 16 kHz sample (40 us) of the input's timing. NaN or infinite samples become silence,
/// and samples beyond 64 (36 dB over full scale: damaged float data) are clipped there.
/// The decode stops with [`MediaError::TooLong`] beyond [`MAX_DECODE_SECONDS`].
///
/// Errors: those of [`probe`]'s parsing, [`MediaError::NoAudioStream`],
/// [`MediaError::UnsupportedCodec`], and [`MediaError::Unreadable`] when no packet of the track
/// decodes (corrupt packets among good ones are skipped, as players do).
pub fn decode_audio(bytes: &[u8]) -> Result<Pcm, MediaError> {
    decode_audio_limited(bytes, MAX_DECODE_SECONDS)
}

/// [`decode_audio`] with a caller-chosen cap on the decoded duration, in seconds.
pub fn decode_audio_limited(bytes: &[u8], max_seconds: f64) -> Result<Pcm, MediaError> {
    MediaFile::open(bytes)?.decode_audio(max_seconds)
}

/// Lists the frames of the first video track of `bytes`: presentation time (seconds, media
/// clock), encoded size and keyframe flag, in presentation order. Frames an edit list hides are
/// left out. An input without video gives an empty list.
///
/// Errors: those of [`probe`]'s parsing.
pub fn video_frames(bytes: &[u8]) -> Result<Vec<VideoFrameInfo>, MediaError> {
    MediaFile::open(bytes)?.video_frames()
}

/// An input parsed once: its probe facts, its decoded audio, its video frame lists and its
/// decoded pictures all come from the one parse of its container, so an upload read for all of
/// them is read once (the audio and the video decoders are fed from that parse's frame lists).
///
/// ```no_run
/// # fn main() -> Result<(), attune_media::MediaError> {
/// let bytes = std::fs::read("talk.webm").expect("a file");
/// let file = attune_media::MediaFile::open(&bytes)?;
/// let info = file.info()?;
/// let pcm = file.decode_audio(attune_media::MAX_DECODE_SECONDS)?;
/// let frames = file.video_frames()?;
/// # let _ = (info, pcm, frames);
/// # Ok(())
/// # }
/// ```
pub struct MediaFile<'a> {
    reader: Box<dyn formats::ContainerReader<'a> + 'a>,
}

impl<'a> MediaFile<'a> {
    /// Recognises the container of `bytes` by content and parses it.
    ///
    /// Errors: [`MediaError::Empty`] for no bytes; [`MediaError::Unreadable`] for content that
    /// is not a recognised container or whose structure is broken.
    pub fn open(bytes: &'a [u8]) -> Result<Self, MediaError> {
        Ok(Self {
            reader: formats::open(bytes)?,
        })
    }

    /// The container, its tracks and its duration, as [`probe`] gives them.
    ///
    /// Errors: [`MediaError::UndeterminableDuration`] when the duration is zero or unknown,
    /// [`MediaError::NegativeDuration`].
    pub fn info(&self) -> Result<ProbeInfo, MediaError> {
        let duration = match self.reader.duration() {
            Some(d) if d.is_nan() => return Err(MediaError::UndeterminableDuration),
            Some(d) if d < 0.0 => return Err(MediaError::NegativeDuration),
            Some(d) if d > 0.0 && d.is_finite() => d,
            _ => return Err(MediaError::UndeterminableDuration),
        };
        // Frame sizes come from the container's tables; a table the frame listing cannot read is
        // left for the decoders to report.
        if let Some(error) = self
            .reader
            .video_frames()
            .ok()
            .and_then(|frames| oversized_video_unit(&frames))
        {
            return Err(error);
        }
        Ok(ProbeInfo {
            container: self.reader.container(),
            tracks: self.reader.tracks(),
            duration,
        })
    }

    /// The first audio track decoded as [`decode_audio`] does, capped at `max_seconds`.
    ///
    /// Errors: those of [`decode_audio`] after parsing.
    pub fn decode_audio(&self, max_seconds: f64) -> Result<Pcm, MediaError> {
        audio::decode_track(self.reader.audio_track()?, max_seconds)
    }

    /// The first video track's frames, as [`video_frames`] lists them.
    pub fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        self.reader.video_frames()
    }

    /// The first video track's frames with their bytes, as [`encoded_video`] gives them.
    pub fn encoded_video(&self) -> Result<Option<video::EncodedVideo>, MediaError> {
        self.reader.encoded_video()
    }

    /// The first video track decoded as [`video::decode_pictures_each`] decodes it, from this
    /// parse: each sampled picture to `on_picture`, in presentation order.
    ///
    /// Errors: those of [`encoded_video`](Self::encoded_video).
    pub fn decode_pictures_each(
        &self,
        options: video::PictureOptions,
        on_picture: impl FnMut(video::VideoPicture),
    ) -> Result<video::LumaSummary, MediaError> {
        self.decode_pictures_with(options, None, on_picture)
    }

    /// [`decode_pictures_each`](Self::decode_pictures_each) making a sampled picture's RGB
    /// only where `rgb_filter` lets it through ([`video::LumaDecoder::with_rgb_filter`]).
    ///
    /// Errors: those of [`encoded_video`](Self::encoded_video).
    pub fn decode_pictures_filtered(
        &self,
        options: video::PictureOptions,
        rgb_filter: video::RgbFilter,
        on_picture: impl FnMut(video::VideoPicture),
    ) -> Result<video::LumaSummary, MediaError> {
        self.decode_pictures_with(options, Some(rgb_filter), on_picture)
    }

    fn decode_pictures_with(
        &self,
        options: video::PictureOptions,
        rgb_filter: Option<video::RgbFilter>,
        mut on_picture: impl FnMut(video::VideoPicture),
    ) -> Result<video::LumaSummary, MediaError> {
        video::decode_video(self.encoded_video()?, options, rgb_filter, |picture| {
            on_picture(picture);
            std::ops::ControlFlow::Continue(())
        })
    }
}

impl std::fmt::Debug for MediaFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaFile")
            .field("container", &self.reader.container())
            .finish_non_exhaustive()
    }
}
