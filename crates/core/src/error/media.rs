//! The media layer's errors in the interface's catalog: one typed mapping, no string round trip.
//!
//! Each match is exhaustive (the media enums are not `#[non_exhaustive]`), so a variant added to
//! `attune-media` does not compile here until it has a code.

use super::{ErrorCode, ServiceError};
use attune_media::live::{LiveError, LiveProblem};
use attune_media::MediaError;

impl From<&MediaError> for ErrorCode {
    fn from(error: &MediaError) -> Self {
        match error {
            MediaError::Empty | MediaError::UndeterminableDuration | MediaError::NoVideoStream => {
                ErrorCode::Ih5001
            }
            MediaError::Unreadable { .. } | MediaError::NegativeDuration => ErrorCode::Ih5002,
            MediaError::UnsupportedCodec { .. } => ErrorCode::Ih5003,
            MediaError::NoAudioStream => ErrorCode::Ih5008,
            MediaError::VideoUnitTooLarge { .. } => ErrorCode::Ih5005,
            MediaError::ContainerNotAllowed { .. } | MediaError::UnsupportedFormat { .. } => {
                ErrorCode::Ih4002
            }
            MediaError::TooShort { .. } => ErrorCode::Ih4007,
            MediaError::TooLong { .. } => ErrorCode::Ih4004,
        }
    }
}

impl From<&LiveProblem> for ErrorCode {
    fn from(problem: &LiveProblem) -> Self {
        match problem {
            LiveProblem::Unreadable { .. } => ErrorCode::Ih6007,
            LiveProblem::MissingHeader { .. } => ErrorCode::Ih5004,
            LiveProblem::TooShort { .. } => ErrorCode::Ih5006,
            LiveProblem::NoVideo => ErrorCode::Ih5001,
            LiveProblem::NoAudio => ErrorCode::Ih5008,
            LiveProblem::Unsupported { .. } => ErrorCode::Ih5003,
            LiveProblem::VideoUnitTooLarge { .. } => ErrorCode::Ih5005,
        }
    }
}

impl From<&LiveError> for ErrorCode {
    fn from(error: &LiveError) -> Self {
        match error {
            LiveError::NotAdvancing { .. } => ErrorCode::Ih6010,
            LiveError::MediaTooLong { .. } => ErrorCode::Ih6004,
        }
    }
}

/// The error with its code and the media layer's own message (which names what was wrong).
impl From<&MediaError> for ServiceError {
    fn from(error: &MediaError) -> Self {
        ServiceError::with_message(ErrorCode::from(error), error.to_string())
    }
}

impl From<&LiveProblem> for ServiceError {
    fn from(problem: &LiveProblem) -> Self {
        ServiceError::with_message(ErrorCode::from(problem), problem.to_string())
    }
}

impl From<&LiveError> for ServiceError {
    fn from(error: &LiveError) -> Self {
        ServiceError::with_message(ErrorCode::from(error), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attune_media::Container;

    /// One value of every variant: the lists must grow with the enums, which the exhaustive
    /// matches above enforce for the mapping itself.
    fn media_errors() -> Vec<MediaError> {
        vec![
            MediaError::Empty,
            MediaError::UndeterminableDuration,
            MediaError::Unreadable {
                container: Some(Container::Mp4),
                reason: "truncated box".into(),
            },
            MediaError::NegativeDuration,
            MediaError::UnsupportedCodec {
                codec: "A_AC3".into(),
            },
            MediaError::NoVideoStream,
            MediaError::NoAudioStream,
            MediaError::VideoUnitTooLarge {
                size: 40 << 20,
                limit: 32 << 20,
            },
            MediaError::ContainerNotAllowed {
                container: Container::Wav,
            },
            MediaError::UnsupportedFormat { format: "PDF" },
            MediaError::TooShort {
                duration: 1.0,
                minimum: 3.0,
            },
            MediaError::TooLong {
                duration: 4000.0,
                maximum: 3600.0,
            },
        ]
    }

    #[test]
    fn media_errors_map_to_the_codes_the_media_layer_documents() {
        for e in media_errors() {
            let code = ErrorCode::from(&e);
            assert_eq!(code.as_str(), e.code_str(), "{e:?}");
            let service = ServiceError::from(&e);
            assert_eq!(service.code, code);
            assert_eq!(
                service.message(),
                e.to_string(),
                "the message names the cause"
            );
        }
    }

    #[test]
    fn media_failures_land_in_the_media_and_request_families() {
        // Media the service cannot use is a 422 (ih5xxx); media a model's rules refuse is a
        // request error (ih4xxx): never a server error.
        for e in media_errors() {
            let code = ErrorCode::from(&e).as_str();
            assert!(
                code.starts_with("ih5") || code.starts_with("ih4"),
                "{e:?} -> {code}"
            );
        }
    }

    #[test]
    fn live_problems_and_fatal_errors_map_by_type() {
        let problems = [
            LiveProblem::Unreadable {
                reason: "not EBML".into(),
            },
            LiveProblem::MissingHeader {
                reason: "no init segment".into(),
            },
            LiveProblem::TooShort { duration: 1.0 },
            LiveProblem::NoVideo,
            LiveProblem::NoAudio,
            LiveProblem::Unsupported {
                codec: "opus?".into(),
            },
            LiveProblem::VideoUnitTooLarge {
                size: 40 << 20,
                limit: 32 << 20,
            },
        ];
        for p in &problems {
            assert_eq!(ErrorCode::from(p).as_str(), p.code_str(), "{p:?}");
            assert_eq!(ServiceError::from(p).message(), p.to_string());
        }
        let fatal = [
            LiveError::NotAdvancing { bytes: 1 << 20 },
            LiveError::MediaTooLong { maximum: 3600.0 },
        ];
        for f in &fatal {
            assert_eq!(ErrorCode::from(f).as_str(), f.code_str(), "{f:?}");
        }
    }
}
