//! Per-model acceptance rules for uploads, and the check of a probed file against them.

use crate::error::MediaError;
use crate::info::{Container, ProbeInfo};

/// What a model accepts, so that the media layer needs no model names.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaRequirements {
    /// Containers the model takes; anything else is `ih4002`.
    pub allowed_containers: Vec<Container>,
    /// Whether a video track is mandatory (`ih5001` without one).
    pub needs_video: bool,
    /// Whether an audio track is mandatory (`ih5008` without one).
    pub needs_audio: bool,
    /// Minimum duration in seconds (`ih4007` below it).
    pub min_duration: f64,
    /// Maximum duration in seconds (`ih4004` above it).
    pub max_duration: f64,
}

impl MediaRequirements {
    /// The interface's minimum media length, in seconds.
    pub const MIN_DURATION: f64 = 3.0;
    /// The default maximum media duration (30 minutes), in seconds.
    pub const DEFAULT_MAX_DURATION: f64 = 30.0 * 60.0;

    /// `inter-2`: mp4, mov, avi, mkv, webm or mpeg-ts with both a video and an audio track.
    pub fn for_inter2() -> Self {
        Self {
            allowed_containers: vec![
                Container::Mp4,
                Container::Mov,
                Container::Avi,
                Container::Matroska,
                Container::WebM,
                Container::MpegTs,
            ],
            needs_video: true,
            needs_audio: true,
            min_duration: Self::MIN_DURATION,
            max_duration: Self::DEFAULT_MAX_DURATION,
        }
    }

    /// `inter-2-audio`: wav, flac, mp3, m4a, ogg, or webm/mp4 with an audio track (video optional).
    pub fn for_inter2_audio() -> Self {
        Self {
            allowed_containers: vec![
                Container::Wav,
                Container::Flac,
                Container::Mp3,
                Container::M4a,
                Container::Ogg,
                Container::WebM,
                Container::Mp4,
            ],
            needs_video: false,
            needs_audio: true,
            min_duration: Self::MIN_DURATION,
            max_duration: Self::DEFAULT_MAX_DURATION,
        }
    }

    /// The same rules with a deployment's own maximum duration, in seconds.
    pub fn with_max_duration(mut self, seconds: f64) -> Self {
        self.max_duration = seconds;
        self
    }
}

/// Checks a probed input against a model's rules.
///
/// The order follows the interface's error precedence: the container first (`ih4002`), then the
/// tracks the model needs (`ih5001` no video, `ih5008` no audio), then whether the audio can be
/// decoded at all (`ih5003`), then the duration bounds (`ih4007`, `ih4004`).
pub fn check(info: &ProbeInfo, req: &MediaRequirements) -> Result<(), MediaError> {
    if !req.allowed_containers.contains(&info.container) {
        return Err(MediaError::ContainerNotAllowed {
            container: info.container,
        });
    }
    if req.needs_video && !info.has_video() {
        return Err(MediaError::NoVideoStream);
    }
    if req.needs_audio {
        let audio = info.first_audio().ok_or(MediaError::NoAudioStream)?;
        if !audio.codec.is_decodable_audio() {
            return Err(MediaError::unsupported(audio.codec.to_string()));
        }
    }
    if info.duration < req.min_duration {
        return Err(MediaError::TooShort {
            duration: info.duration,
            minimum: req.min_duration,
        });
    }
    if info.duration > req.max_duration {
        return Err(MediaError::TooLong {
            duration: info.duration,
            maximum: req.max_duration,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::info::{Codec, Track};

    fn info(container: Container, tracks: Vec<Track>, duration: f64) -> ProbeInfo {
        ProbeInfo {
            container,
            tracks,
            duration,
        }
    }

    #[test]
    fn an_undecodable_audio_codec_is_ih5003() {
        let i = info(
            Container::Matroska,
            vec![
                Track::video(Codec::H264),
                Track::audio(Codec::Other("A_AC3".into())),
            ],
            10.0,
        );
        assert_eq!(
            check(&i, &MediaRequirements::for_inter2())
                .unwrap_err()
                .code_str(),
            "ih5003"
        );
    }

    #[test]
    fn the_container_is_judged_before_the_tracks_and_the_duration() {
        let i = info(Container::Wav, vec![], 1.0);
        assert_eq!(
            check(&i, &MediaRequirements::for_inter2())
                .unwrap_err()
                .code_str(),
            "ih4002"
        );
    }

    #[test]
    fn the_duration_bounds_are_inclusive() {
        let tracks = vec![Track::audio(Codec::Flac)];
        let req = MediaRequirements::for_inter2_audio().with_max_duration(60.0);
        assert!(check(&info(Container::Flac, tracks.clone(), 3.0), &req).is_ok());
        assert!(check(&info(Container::Flac, tracks.clone(), 60.0), &req).is_ok());
        assert_eq!(
            check(&info(Container::Flac, tracks.clone(), 2.99), &req)
                .unwrap_err()
                .code_str(),
            "ih4007"
        );
        assert_eq!(
            check(&info(Container::Flac, tracks, 60.01), &req)
                .unwrap_err()
                .code_str(),
            "ih4004"
        );
    }
}
